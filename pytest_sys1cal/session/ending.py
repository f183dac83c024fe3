"""The end of a run, on the controller: the recording closed, the report built once from the rows, its files
written and its summary prepared. Never raises: a summary hook that raises loses pytest's own summary, so a
failure becomes a red line, and a Ctrl-C or SIGTERM during the work (signals.py) is said, not raised."""

from __future__ import annotations

import contextlib
import time
import traceback
from typing import TYPE_CHECKING

from ..escape import one_line
from ..files import written_for
from ..report.terminal import RED, Line, summary_lines
from ..run_report import Report, RunFacts, build_report, partial_run
from ..store.manifest import MANIFEST
from .gate_advice import after_failed_gates, from_this_report, write_gates
from .node_ids import node_id
from .sequential import completed_rounds, facts_of, requests_by_problem
from .sharding import leave_manifest
from .signals import SIGTERM, Terminated, signal_name

if TYPE_CHECKING:
    from ..gates.upgrade_sequential import SequentialFacts
    from .run import Sys1CalRun


def finish(run: Sys1CalRun) -> None:
    """Build the report, write its files and the manifest; `run.summary` holds the lines to print."""
    lines: list[Line] = []
    run.signals.phase = "analysis"  # a SIGTERM now stops the analysis, as a second Ctrl-C does (signals.py)
    try:
        if run.signals.skip_analysis:  # a second SIGTERM before the analysis began: end at once
            raise Terminated(SIGTERM)
        lines += _closed_recording(run)
        if run.settings.dry_run:  # --sys1cal-dry-run: the checks said what they found; nothing ran
            lines.append(("dry run: no rendering was measured or recorded, and no report written", {}))
        elif not run.rows:
            lines.append(run.interruption.nothing_ran())
        else:
            lines += _report(run)
    except KeyboardInterrupt as exc:  # Ctrl-C (a second one, after an interrupted run) or SIGTERM in the work
        run.signals.phase = "after"
        with contextlib.suppress(Exception, KeyboardInterrupt):  # best effort: a second signal may land anywhere
            close_recording(run)
        run.interruption.signal = signal_name(exc)
        lines += run.interruption.analysis_stopped(len(run.rows))
        lines += run.outputs.not_written(f"the analysis was interrupted ({run.interruption.signal})")
    except Exception as exc:  # noqa: BLE001 - reported in the summary, with the traceback under -v
        run.finish_error = f"{type(exc).__name__}: {exc}"
        lines.append((f"sys1cal could not finish the analysis: {run.finish_error}", RED))
        if run.config.get_verbosity() > 0:
            lines += [(text, {}) for text in traceback.format_exc().splitlines()]
        else:
            lines.append(("(run with -v for the traceback)", {}))
    run.signals.phase = "after"
    # Each entry one terminal line, whatever a server's words in it hold (escape.py).
    run.summary = [(one_line(run.redactor.text(text)), markup) for text, markup in lines]


def close_recording(run: Sys1CalRun) -> None:
    """The recording's end, once: its engine closed and the manifest saying what was recorded (the cassettes it
    finished are kept, also when the end-of-run work was stopped)."""
    recording = run.recording
    if recording is not None and not recording.settled:
        recording.close()
        if run.rounds is None and run.folder.manifest is not None:  # a folder in rounds, resumed to the end
            run.folder.manifest = completed_rounds(run.folder.manifest, run.rows, run.dataset)
        run.folder.finish_recording(run.rows, run.repeats, run.dataset)
        recording.settled = True
        if run.shard is not None and run.folder.manifest is not None and not run.settings.dry_run:
            leave_manifest(run.folder, run.shard, run.rows, run.settings.seed, run.advice.whole_shard(), fresh=False)


def _closed_recording(run: Sys1CalRun) -> list[Line]:
    """close_recording, with a write that failed (a full disk, a read-only folder) said in one line: it is the
    folder's file that was not written, not the analysis, which goes on to write the reports where there is
    room."""
    try:
        close_recording(run)
    except OSError as exc:
        if run.recording is not None:  # its end was tried: not tried again
            run.recording.settled = True
        run.outputs.failed = True  # the run's exit status says a file it should have written is missing
        where = written_for(exc, run.folder.path / MANIFEST)
        return [
            (
                f"sys1cal: {where} NOT written: {exc.strerror or exc}; the cassettes saved before are on disk, but "
                f"what {MANIFEST} lists may not include them: make room there and record the folder again "
                "(--sys1cal-record-mode=all)",
                RED,
            )
        ]
    return []


def _report(run: Sys1CalRun) -> list[Line]:
    started = time.perf_counter()
    nodes = {r.instance_id: node_id(run.settings.model, r) for r in run.dataset.renderings} if run.baseline else None
    run.report = build_report(_facts(run), run.rows, run.dataset, run.thresholds, run.baseline, nodes)
    advice = _gate_advice(run, run.report)
    lines = summary_lines(run.report, advice, run.advice.thresholds_file, run.advice.command("none"))
    lines += run.outputs.write(run.report, run.baseline, run.redactor, advice)
    if run.outputs.interrupted:  # Ctrl-C while a file was drawn: outputs.py said which
        return [*lines, run.interruption.drawing_stopped()]
    seconds = time.perf_counter() - started
    return [*lines, (f"analysis and reports of {len(run.rows)} renderings: {seconds:.2f} s", {})]


def _facts(run: Sys1CalRun) -> RunFacts:
    return RunFacts(
        model=run.settings.model,
        version=run.adapter.version,
        model_id=run.adapter.model_id,
        source=run.folder.source,
        server_model=run.folder.server_model,
        repeats=run.repeats,
        repeats_per_answer=run.folder.repeats_per_answer,
        seed=run.settings.seed,
        bootstrap=run.settings.bootstrap,
        recalibration_splits=run.settings.recalibration_splits,
        selected=run.interruption.selected,
        shard=run.shard.facts(run.dataset) if run.shard else None,
        stopped=run.interruption.reason,
        # A shard's gates come from the merged folder, and a folder's rounds are not the whole dataset to write
        # them from; a run that could not measure everything (a recording that stopped, answers refused) says to
        # record what is missing, or the replay it printed would stop on it.
        write_gates=None
        if run.shard or (run.rounds and run.rounds.keep)
        else write_gates(run.advice, record=run.interruption.reason is not None or any(r.error for r in run.rows)),
        recalibration=run.recalibration,
        sequential=rounds_facts(run),
    )


def rounds_facts(run: Sys1CalRun) -> SequentialFacts | None:
    """The upgrade gate in rounds, judged in the report: its design, each latent problem's cost, the plan's
    expectation (a recording's)."""
    if run.rounds is None or run.baseline is None:
        return None
    expected = run.looker.expected_cost if run.looker is not None else None
    return facts_of(run.rounds, requests_by_problem(run.dataset, run.measurer.codec), expected)


def _gate_advice(run: Sys1CalRun, report: Report) -> list[str]:
    """What to do after a failed gate (gate_advice.py); with no gate at all on a full run that wrote its report,
    the command that writes them from it; else nothing."""
    data = report.data
    if not report.gates.rows:
        partial = partial_run(data["counts"], len(run.dataset.renderings), data.get("interrupted"), data.get("shard"))
        shortcut = None if partial else from_this_report(run.advice)
        return [shortcut] if shortcut else []
    if not report.gates.failed:
        return []
    baseline = run.baseline.name if run.baseline else None
    return after_failed_gates(run.advice, report, run.thresholds, baseline)
