"""Recording inside a pytest run (the glue above recording/, which knows renderings, not items): when it
starts (before the first item without xdist; from the workers' collection on the xdist controller; item by
item on xdist workers), the plan printed through pytest's terminal, the progress line and the closing line.
See docs/recording.md."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from ..errors import usage_errors
from ..escape import one_line
from ..recording.engine import Engine
from ..recording.plan import Plan, make_plan
from ..recording.policy import JEV_RATE, Limits, local_origin
from .collect import renderings_of, renderings_of_nodeids
from .options import flag

if TYPE_CHECKING:
    from ..codec import Codec
    from ..dataset import Dataset
    from ..measure import Measurer, OpenCassette
    from ..models.base import ModelAdapter
    from ..redact import Redactor
    from .options import Settings
    from .sequential import Rounds
    from .sequential_looks import Looker

PROGRESS_EVERY = 10.0  # seconds between progress lines


def say(config: pytest.Config, text: str, **markup: bool) -> None:
    """A line through pytest's terminal reporter, also from inside a running item (captured output
    is suspended for it, as pytest's live logging does)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    capture = config.pluginmanager.get_plugin("capturemanager")
    context = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
    with context:
        # In -q mode pytest tracks no "current file", so write_line would glue onto a row of dots.
        writer = getattr(reporter, "_tw", None)
        if not reporter.currentfspath and getattr(writer, "width_of_current_line", False):
            reporter.write("\n")
        reporter.write_line(text, **markup)


def workercount(workerinput: Mapping[str, Any]) -> int:
    """How many xdist workers share the run (1 without xdist): the limits are divided between them."""
    return int(workerinput.get("workercount") or 1)


# Servers a team runs itself: on this machine or a private network they are recorded at their own pace. Jev's
# public origin (and any other) keeps the default rate, under Jev's published limit.
OWN_SERVERS = ("systemone", "semif")


def rate_in_force(settings: Settings, adapter: ModelAdapter) -> tuple[float, str]:
    """Requests per minute for this recording, and why, as the plan says it (with the flag that changes it)."""
    if settings.rate is not None:
        return float(settings.rate), f"{flag('rate')}={settings.rate}"
    host = local_origin(adapter.base_url)
    if adapter.name in OWN_SERVERS and host is not None:
        return 0.0, (
            f"a {adapter.name} server on {host} is recorded at its own pace (Jev's default of 1,000/min is not "
            f"applied; {flag('rate')}=N caps it); the circuit breaker and back-off still apply"
        )
    return JEV_RATE, (
        f"the default 1,000/min, under Jev's 1,200/min; {flag('rate')}=0 lifts it for a server that needs none, "
        f"{flag('rate')}=N sets another"
    )


def limits_for(settings: Settings, adapter: ModelAdapter, share: int = 1) -> Limits:
    """The run's recording limits; with `share` > 1 (xdist workers), this process's part of them."""
    rate, rate_source = rate_in_force(settings, adapter)
    limits = Limits(
        concurrency=max(1, math.ceil(settings.concurrency / share)),
        rate=rate / share,
        rate_source=rate_source,
        timeout=settings.timeout,
        retry_budget=settings.retry_budget,
        stall_limit=settings.stall_limit,
        max_body=round(settings.max_response_mb * 1_000_000),
        max_cost=None if settings.max_cost is None else settings.max_cost / share,
    )
    if settings.price is None:
        return limits  # Jev's list price, said so beside every estimate
    return dataclasses.replace(limits, price=settings.price, price_source=flag("price"))


class Recording:
    """This process's recording: its limits, the plan (printed), the engine (the measurer's sender, made
    when the first rendering needs it) and the progress lines it writes while items wait, each through the
    run's redactor."""

    def __init__(self, config: pytest.Config, limits: Limits, redactor: Redactor, *, quiet: bool = False):
        self.config = config
        self.limits = limits
        self.redactor = redactor
        self.plan: Plan | None = None
        self.engine: Engine | None = None
        self.quiet = quiet  # xdist workers cannot write to the terminal
        self.settled = False  # its end settled: the engine closed and the manifest saying what was recorded (ending.py)
        self._last_progress = time.monotonic()
        self._reported_end = False

    def say(self, text: str, **markup: bool) -> None:
        """A line of recording's own in the terminal, redacted."""
        say(self.config, one_line(self.redactor.text(text)), **markup)

    def make_engine(self, codec: Codec, open: OpenCassette) -> Engine:
        """The sender factory handed to the Measurer."""
        self.engine = Engine(codec, open, self.limits, on_wait=self.tick)
        return self.engine

    def tick(self) -> None:
        """A progress line every PROGRESS_EVERY seconds (main thread only). Called between items, and
        while an item waits for its rendering."""
        engine = self.engine
        if engine is None or self.quiet or engine.finished:
            return
        stats, now = engine.stats, time.monotonic()
        if now - self._last_progress < PROGRESS_EVERY or stats.first_send is None:
            return
        self._last_progress = now
        total = self.plan.requests if self.plan else stats.sent_ok
        self.say(engine.progress_line(total, now))

    def closing_line(self) -> str:
        assert self.engine is not None
        stats, cost = self.engine.stats, self.engine.cost
        if not stats.sent_ok:
            spent = time.monotonic() - stats.first_send if stats.first_send is not None else 0.0
            tried = f" after {spent:.1f} s of tries" if stats.first_send is not None else ""
            return f"sys1cal: recorded nothing{tried}; {stats.failed} rendering(s) not recorded"
        elapsed = (stats.last_answer or stats.first_send or 0) - (stats.first_send or 0)
        rate = f", {stats.sent_ok / elapsed:.1f} requests/s" if elapsed > 0 else ""
        line = f"sys1cal: recorded {stats.sent_ok:,} requests in {elapsed:.2f} s{rate}"
        if stats.retries:
            line += f", {stats.retries} retried"
        if stats.failed:
            line += f"; {stats.failed} rendering{'s' if stats.failed != 1 else ''} not recorded"
        if cost.reported:
            line += f"; {cost.reported:,} input tokens reported by the server ≈ ${cost.dollars():.4f}"
        elif stats.sent_ok:
            line += f"; the server reported no usage: about ${cost.dollars():.4f} by the estimate"
        return line

    def close(self) -> None:
        """Stop the engine (what is in flight is cancelled, nothing partial saved); then, once and not on
        xdist workers, the closing line."""
        if self.engine is None or self._reported_end:
            return
        self.engine.close()
        self._reported_end = True
        if not self.quiet and self.engine.stats.jobs:
            self.say(self.closing_line())


class Run(Protocol):
    """What recording's hooks read of the run (run.py's Sys1CalRun)."""

    config: pytest.Config
    settings: Settings
    dataset: Dataset
    adapter: ModelAdapter
    measurer: Measurer
    redactor: Redactor
    rounds: Rounds | None
    looker: Looker | None

    def start_recording(self) -> str | None: ...


class RecordingHooks:
    """The hooks of a run that records (registered only then: a replay pays for none of this). The manifest
    is written when recording starts, after the plan and the --sys1cal-max-cost check, so a refused run
    leaves nothing behind."""

    def __init__(self, run: Run, recording: Recording, *, controller: bool):
        self.run = run
        self.recording = recording
        self.controller = controller
        self._round_of: dict[str, int] | None = None  # latent problem → round, recording in rounds under xdist

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        # Without xdist: price and start recording every selected rendering before the first item runs.
        config = session.config
        skipped = config.option.collectonly or (session.testsfailed and not config.option.continue_on_collection_errors)
        if self.controller and not skipped and not config.pluginmanager.has_plugin("dsession"):
            self.begin(renderings_of(session.items, self.run.measurer), workers=1)
            if self.run.settings.dry_run:
                return self.dry_run()
            looker = self.run.looker
            if looker is not None:  # in rounds: each round sent once the look before it released it
                looker.release = self.send
                self.send(looker.renderings_of(1, self.recording.plan.renderings if self.recording.plan else []))
                return looker.run_loop(session)
            if self.recording.plan and self.recording.plan.renderings:
                self.run.measurer.start_sender().submit(self.recording.plan.renderings)
        return None  # the items run: pytest's own loop, and the items wait for their renderings

    def send(self, renderings: Sequence[Any]) -> None:
        """Hand the renderings that need the network to the sender, ahead of their items."""
        measurer = self.run.measurer
        wanted = [rendering for rendering in renderings if measurer.unanswered(rendering)]
        if wanted and not self.run.adapter.missing_key():
            measurer.start_sender().submit(wanted)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # xdist controller: the same plan, price and cap from the workers' collection, before scheduling;
        # the workers do the sending.
        if self.recording.plan is None:
            run = self.run
            self.begin(renderings_of_nodeids(ids, run.settings.model, run.dataset), workercount(node.workerinput))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        # xdist worker: record the item it was given and the next one queued for it, ahead of need.
        # Elsewhere: a progress line between items while recording.
        if not self.controller:
            ahead = [item, nextitem]
            if self.run.rounds is not None and self.run.rounds.decisions is not None:
                ahead = self.in_turn(item, nextitem)
            self.send(renderings_of(ahead, self.run.measurer))
        else:
            self.recording.tick()

    def in_turn(self, item: pytest.Item, nextitem: pytest.Item | None) -> list[pytest.Item | None]:
        """xdist worker, recording in rounds: an item of a later round waits for the look that releases it (and is
        skipped, sending nothing, when that look stopped the recording); the next item is sent ahead only within
        the item's own round."""
        from .sequential_xdist import may_run

        rounds = self.run.rounds
        assert rounds is not None and rounds.decisions is not None
        if self._round_of is None:
            self._round_of = rounds.round_of()
        at = self._round(item)
        if at > 1 and not may_run(rounds.decisions, at - 1):
            item.add_marker(pytest.mark.skip(reason=f"sys1cal: not recorded: the rounds stopped before round {at}"))
            return []
        return [item, nextitem] if self._round(nextitem) == at else [item]

    def _round(self, item: pytest.Item | None) -> int:
        """The round of a benchmark item (0 for anything else)."""
        rendering = getattr(item, "rendering", None)
        return (self._round_of or {}).get(rendering.latent_instance_id, 0) if rendering is not None else 0

    def begin(self, renderings: Sequence[Any], workers: int) -> None:
        """Plan, refuse without a key, print the plan and its price, refuse over the cap, then start the
        folder's recording (manifest first) when anything needs the network."""
        run, recording = self.run, self.recording
        plan = make_plan(run.measurer, renderings)
        missing = run.adapter.missing_key()
        if missing and plan.renderings:
            refused = f"cannot record {len(plan.renderings)} renderings: {missing}. Nothing was sent."
            raise pytest.UsageError(run.redactor.text(refused))
        recording.plan = plan
        lines = plan.lines(limits_for(run.settings, run.adapter, workers), workers)
        if run.looker is not None:  # what the rounds may cost, and are expected to
            lines += self.rounds_plan(plan)
        for line in lines:
            recording.say(line)
        refusal = plan.refusal(limits_for(run.settings, run.adapter))  # the run's cap, whatever each process's share
        if refusal:
            raise pytest.UsageError(run.redactor.text(refusal))
        if plan.renderings and not run.settings.dry_run:
            with usage_errors(
                run.redactor.text
            ):  # another live recording holds the folder: refused before anything is sent
                notice = run.start_recording()
            if run.looker is not None:  # the folder's lock is this run's: the looks keep its manifest up to date
                run.looker.started()
            if notice:
                recording.say(notice, yellow=True)

    def rounds_plan(self, plan: Plan) -> list[str]:
        """The design's lines of the plan: at most every request the plan prices, and the expected cost."""
        looker = self.run.looker
        assert looker is not None
        measurer = self.run.measurer
        to_record: dict[str, int] = {}
        for rendering in plan.renderings:
            latent = rendering.latent_instance_id
            to_record[latent] = to_record.get(latent, 0) + len(measurer.unanswered(rendering))
        lines, looker.expected_cost = looker.plan_lines(to_record)
        return lines

    def dry_run(self) -> bool:
        """--sys1cal-dry-run, after the plan: the checks (recording/preflight.py), then no item runs. A problem is
        one usage error (exit 4)."""
        from ..recording.preflight import preflight

        run, recording = self.run, self.recording
        if recording.plan is None or not recording.plan.renderings:
            recording.say("sys1cal: dry run: nothing to record, so nothing was checked or sent")
            return True
        checked = preflight(run.adapter, recording.limits)
        for line in checked.lines:
            recording.say(line)
        if checked.problem:
            raise pytest.UsageError(run.redactor.text(f"sys1cal: dry run: {checked.problem}"))
        recording.say(
            "sys1cal: dry run passed: nothing billable was sent and nothing recorded; the same command without "
            "--sys1cal-dry-run records",
            green=True,
        )
        return True
