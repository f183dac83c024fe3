"""The pytest hooks of a run with ``--sys1cal`` (plugin.py's pytest_configure calls `start`): the run put
together, and the plugins that own the hooks from then on registered (`ActiveRun`, `XdistHooks` on an xdist
controller, and recording's hooks when the run records). Each hook a few lines, delegating to the run's
modules."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import pytest

from ..dataset import Rendering
from ..errors import usage_errors
from ..escape import one_line
from ..redact import redact_log_records
from ..results import ResultRow
from ..store.answers import unchecked_notice
from ..vocabulary import Verdict
from .collect import (
    MARKER,
    collect_suite,
    failed_row,
    gate_reports,
    keep_problems,
    mark_upgrade,
    nodeid_reader,
    renderings_of,
    renderings_of_nodeids,
    row_of,
)
from .ending import finish
from .interruption import mark_junit, reason_of, showable
from .node_ids import select_renderings, take_node_ids
from .options import WORKERINPUT_KEY, Settings, resolve_settings
from .run import Sys1CalRun, rounds_header
from .sequential import arrange
from .signals import worker_pid

CRASHED = "???"  # the phase of the report xdist's controller makes for an item whose worker crashed


def start(config: pytest.Config) -> None:
    """The run of this process (the controller resolves the settings once; an xdist worker gets them through
    workerinput) and its plugins."""
    config.addinivalue_line("markers", MARKER)
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is None:  # settings are resolved once, here; xdist workers get them through workerinput
        run = Sys1CalRun(config, resolve_settings(config), controller=True)
        run.warm_up()  # the controller analyses at the end; start loading numpy now, off the main thread
        if config.pluginmanager.has_plugin("xdist"):
            config.pluginmanager.register(XdistHooks(run), "sys1cal-xdist")
    else:
        settings = Settings.from_json(workerinput[WORKERINPUT_KEY])
        run = Sys1CalRun(config, settings, controller=False, repeats=workerinput["sys1cal_repeats"])
    run.signals.install()  # SIGTERM (CI cancelling the job) like the first Ctrl-C (session/signals.py)
    config.add_cleanup(redact_log_records(run.redactor))  # log records leave through the redactor too
    node_ids = take_node_ids(config.args, config.invocation_params.dir)  # on workers too: they re-parse the argv
    with usage_errors(run.redactor.text):
        only = select_renderings(node_ids, run.settings.model, run.dataset, run.advice.list_ids()) if node_ids else None
    config.pluginmanager.register(ActiveRun(run, only), "sys1cal-run")
    if run.recording is not None:  # a replay pays for none of recording's hooks or imports
        from .recording_hooks import RecordingHooks  # httpx and the engine: only for a recording

        config.pluginmanager.register(
            RecordingHooks(run, run.recording, controller=run.controller), "sys1cal-recording"
        )


class XdistHooks:
    """Registered on the controller only when xdist is present: what the workers are handed."""

    def __init__(self, run: Sys1CalRun):
        self.run = run

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKERINPUT_KEY] = self.run.settings.to_json()
        node.workerinput.update(self.run.workerinput())
        pid = worker_pid(node)
        if pid is not None:  # a SIGTERM is passed on to the workers, so they stop sending at once
            self.run.signals.worker_pids.append(pid)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # The controller collects nothing itself: the selection is the workers' (each collects all of it).
        run = self.run
        renderings = renderings_of_nodeids(ids, run.settings.model, run.dataset)
        run.interruption.selected = len(renderings)
        if run.looker is not None and not run.looker.waiting:
            run.looker.collected(renderings)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        # A recording in rounds: short queues that the looks can stop (session/sequential_xdist.py).
        looker = self.run.looker
        if looker is None:
            return None
        from .sequential_xdist import scheduler

        rendering_of = nodeid_reader(self.run.settings.model, self.run.dataset)

        def round_of(nodeid: str) -> int:
            rendering = rendering_of(nodeid)
            return looker.round_of[rendering.latent_instance_id] if rendering is not None else 0

        made = scheduler(config, log, round_of)
        looker.on_stop = made.stop
        return made


class ActiveRun:
    """The hooks of a run with ``--sys1cal``. On an xdist worker it measures; on the controller (or
    without xdist) it also aggregates the results that arrive on test reports and prints once."""

    def __init__(self, run: Sys1CalRun, only: Sequence[Rendering] | None = None):
        self.run = run
        self.controller = run.controller
        self.only = only  # the renderings named by node id on the command line; None: every rendering

    def pytest_report_header(self) -> list[str]:
        folder = self.run.folder
        notices = [] if folder.recording else [unchecked_notice(folder.path, folder.manifest), self.run.replay_cache[1]]
        shard = self.run.shard.header(self.run.dataset) if self.run.shard else None
        rounds = rounds_header(self.run)
        return [*self.run.header(), *(notice for notice in [shard, rounds, *notices] if notice)]

    def pytest_sessionstart(self) -> None:
        self.run.use_replay_cache()

    def pytest_ignore_collect(self, config: pytest.Config) -> bool | None:
        # `pytest --sys1cal` with no path arguments runs the benchmark alone; name paths to add your tests.
        return True if config.args_source != pytest.Config.ArgsSource.ARGS else None

    @pytest.hookimpl(tryfirst=True)  # before -k/-m deselection, so they apply to our items
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        run = self.run
        items[:0] = collect_suite(session, run.settings.model, run.dataset, run.measurer, run.redactor, self.only)
        if run.shard is not None:  # --sys1cal-shard: the others' latent problems deselected, as -k deselects
            keep_problems(session.config, items, run.shard.problems)
        if run.rounds is not None:  # in rounds: the items in recording order (a folder's own rounds, replayed)
            arrange(session.config, items, run.rounds)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # The selection after -k/-m deselection: what an interrupted run's report counts as selected.
        if self.controller and not session.config.pluginmanager.has_plugin("dsession"):
            renderings = renderings_of(session.items, self.run.measurer)
            self.run.interruption.selected = len(renderings)
            if self.run.looker is not None:
                self.run.looker.collected(renderings)

    @pytest.hookimpl(wrapper=True)
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Generator[None, Any, Any]:
        # Ctrl-C, a stop an item asked for (session.shouldstop: a fatal error), xdist's stops, pytest.exit. A
        # wrapper: the reason is kept, and the traceback made showable, before pytest's terminal formats it.
        self.run.interruption.stopped(reason_of(excinfo.value))
        showable(excinfo)
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        report = yield
        if call.when != "teardown":
            result = row_of(item, report, call)
            if result is not None:
                # Serialised with the report, so it reaches the xdist controller; compact, so that neither the
                # wire nor the controller's memory carries more than the answers.
                report.sys1cal = result.to_wire()
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        row = getattr(report, "sys1cal", None)
        if self.controller and row is not None and report.when in ("setup", "call"):
            self.run.add_result(ResultRow.from_wire(row))
            del report.sys1cal  # pytest keeps every report until the end; the run keeps the row
        elif self.controller and report.when == CRASHED:
            # An xdist worker died on a rendering (killed, out of memory): no row will come from it. A failed row
            # counts it as not measured, and completes its round in a recording in rounds, whose look the other
            # workers wait for.
            run = self.run
            why = str(report.longrepr or "its xdist worker crashed")
            for rendering in renderings_of_nodeids([report.nodeid], run.settings.model, run.dataset):
                run.add_result(failed_row(rendering, why, run.redactor.text))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.controller:
            return
        run = self.run
        run.signals.ending()
        if session.shouldfail:  # -x/--maxfail: pytest ends the loop without an interrupt
            run.interruption.stopped(f"-x/--maxfail: {session.shouldfail}")
        finish(run)  # the report built, written and summarised (ending.py)
        if run.report is not None:
            self._report_gates(session.config)
        self._mark_interrupted(session.config)
        ok = session.exitstatus == pytest.ExitCode.OK
        if run.finish_error:
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        elif run.interruption.finishing:
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        elif run.report is not None and not run.report.passed and ok:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif run.outputs.failed and ok:  # a report asked for and not written fails the run (exit 3)
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    def _log_hook(self, config: pytest.Config) -> Any:
        """The report hook without the terminal, last-failed cache and stepwise plugins (and this one): what
        the run adds to the items (gates, the interruption) is not an item that --lf could rerun, and the
        summary speaks for the terminal."""
        skip = [config.pluginmanager.get_plugin(name) for name in ("terminalreporter", "lfplugin", "stepwiseplugin")]
        return config.pluginmanager.subset_hook_caller("pytest_runtest_logreport", [p for p in (*skip, self) if p])

    def _mark_interrupted(self, config: pytest.Config) -> None:
        """An interrupted run (or end-of-run work) says so in the JUnit XML too (interruption.py)."""
        run = self.run
        text = run.interruption.junit_text(run.report.data if run.report else None, len(run.rows))
        if text:
            mark_junit(config, one_line(run.redactor.text(text)), str(run.dataset.path), self._log_hook(config))

    def _report_gates(self, config: pytest.Config) -> None:
        """Hand each gate to report plugins (JUnit XML writes it as a test case) as a test report; the
        terminal counts the ones that did not pass."""
        assert self.run.report is not None
        mark_upgrade(config, self.run.report.data.get("comparison"), self.run.redactor.text)
        hook = self._log_hook(config)
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        for report, gate in gate_reports(self.run.report.gates.rows, self.run.gate_location, self.run.redactor.text):
            hook(report=report)
            if terminal is not None and report.failed:
                # Counted with the items, so pytest's last line says "1 failed" (or "1 inconclusive"), not
                # a green "365 passed".
                kind = "inconclusive" if gate.verdict == Verdict.INCONCLUSIVE else "failed"
                terminal.stats.setdefault(kind, []).append(report)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
        if self.controller and not config.option.collectonly:
            terminalreporter.write_sep("=", "sys1cal")
            for text, markup in self.run.summary:
                terminalreporter.write_line(text, **markup)

    @pytest.hookimpl(tryfirst=True)
    def pytest_internalerror(self, excrepr: Any) -> None:
        # Redacted in place before the terminal (or xdist, on a worker) writes it: a bug's message or its
        # --showlocals may hold the key.
        self.run.redactor.fields(excrepr)

    def pytest_unconfigure(self) -> None:
        self.run.close()
