"""Recording inside a pytest run: when it starts (before the first item without xdist; from the workers'
collection on the xdist controller; item by item on xdist workers), the plan printed through pytest's
terminal, the progress line, and the closing line. See docs/recording.md."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

from ..collect import renderings_of, renderings_of_nodeids
from ..dataset import Rendering
from ..options import resolve
from .engine import Engine
from .plan import Plan, duration, make_plan, network_requests
from .policy import Settings

if TYPE_CHECKING:
    from ..run import Sys1CalRun

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
        if not reporter.currentfspath and getattr(writer, "width_of_current_line", 0):
            reporter.write("\n")
        reporter.write_line(text, **markup)


class Recording:
    """This process's recording: the plan (printed), and the engine when this process sends."""

    def __init__(self, run: Sys1CalRun, settings: Settings, plan: Plan | None):
        self.config = run.config
        self.measurer = run.measurer
        self.settings = settings
        self.plan = plan
        self.engine: Engine | None = None
        self._last_progress = time.monotonic()
        self._reported_end = False
        self.quiet = False  # xdist workers cannot write to the terminal

    def ensure_engine(self) -> Engine:
        if self.engine is None:
            self.engine = Engine(self.measurer, self.settings)
        return self.engine

    def handles(self, rendering: Rendering) -> bool:
        return self.engine is not None and self.engine.handles(rendering)

    def result(self, rendering: Rendering) -> dict[str, Any]:
        assert self.engine is not None
        return self.engine.result(rendering, self.tick)

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
        rate = stats.sent_ok / max(now - stats.first_send, 1e-9)
        left = f"about {duration((total - stats.sent_ok) / rate)} left" if rate > 0 else "waiting for the server"
        retried = f", {stats.retries} retried" if stats.retries else ""
        say(
            self.config,
            f"sys1cal: recorded {stats.sent_ok:,}/{total:,} requests, {rate:.1f} requests/s, {left}{retried}",
        )

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
        """Stop the engine; then (once, not on xdist workers) the closing line."""
        if self.engine is None or self._reported_end:
            return
        self.engine.close()
        self._reported_end = True
        if not self.quiet and self.engine.stats.jobs:
            say(self.config, self.closing_line())


def _announce(run: Sys1CalRun, plan: Plan, settings: Settings, workers: int = 1) -> None:
    for line in plan.lines(settings, workers):
        say(run.config, line)
    refusal = plan.refusal(Settings(**{**settings.__dict__, "max_cost": _times(settings.max_cost, workers)}))
    if refusal:
        raise pytest.UsageError(refusal)


def _times(value: float | None, factor: int) -> float | None:
    return None if value is None else value * factor


def begin(run: Sys1CalRun, items: Sequence[pytest.Item]) -> None:
    """Without xdist, before the first item: plan, price, check the cap, write the manifest, and
    start recording every selected rendering that needs the network, in item order."""
    if not run.recording or run.measurer.recorder is not None:
        return
    plan = make_plan(run.measurer, renderings_of(items, run.measurer))
    _refuse_without_key(run, plan)
    settings = settings_for(run.config)
    _announce(run, plan, settings)
    recording = Recording(run, settings, plan)
    run.measurer.recorder = recording
    if not plan.renderings:
        return
    run.start_recording()
    _sweep_leftovers(run)
    recording.ensure_engine().submit(plan.renderings)


def _sweep_leftovers(run: Sys1CalRun) -> None:
    """Remove the temporary files of atomic writes that a killed recording left half-written (the
    cassettes themselves are always whole). Runs before this recording writes anything."""
    for leftover in run.store.folder.glob("*/.*.json.*.tmp"):
        with contextlib.suppress(OSError):
            leftover.unlink()


def begin_distributed(run: Sys1CalRun, ids: Sequence[str], workers: int) -> None:
    """xdist controller, once the workers have collected and before anything is scheduled: the same
    plan, price and cap, and the manifest; the workers do the sending."""
    if not run.recording or run.measurer.recorder is not None:
        return
    plan = make_plan(run.measurer, renderings_of_nodeids(ids, run.model_name, run.dataset))
    _refuse_without_key(run, plan)
    settings = settings_for(run.config, share=max(1, workers))
    run.measurer.recorder = Recording(run, settings, plan)
    _announce(run, plan, settings, workers=max(1, workers))
    if plan.renderings:
        run.start_recording()
        _sweep_leftovers(run)


def prefetch(run: Sys1CalRun, item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """xdist worker: record the item about to run and the next one queued for this worker."""
    if not run.recording or run.adapter.missing_key():
        return
    recording = run.measurer.recorder
    if recording is None:
        workers = int(getattr(run.config, "workerinput", {}).get("workercount", 1) or 1)
        recording = Recording(run, settings_for(run.config, share=workers), None)
        recording.quiet = True
        run.measurer.recorder = recording
    assert isinstance(recording, Recording)
    candidates = renderings_of([item, nextitem], run.measurer)
    wanted = [r for r in candidates if not recording.handles(r) and network_requests(run.measurer, r)]
    if wanted:
        recording.ensure_engine().submit(wanted)


def _refuse_without_key(run: Sys1CalRun, plan: Plan) -> None:
    """Recording that needs the network but has no API key: one usage error before anything is priced,
    printed, sent or written."""
    missing = run.adapter.missing_key()
    if missing and plan.renderings:
        raise pytest.UsageError(f"cannot record {len(plan.renderings)} renderings: {missing}. Nothing was sent.")


def settings_for(config: pytest.Config, share: int = 1) -> Settings:
    """The run's recording settings; with `share` > 1 (xdist workers), this process's part of them."""
    max_cost = resolve(config, "--sys1cal-max-cost")
    return Settings(
        concurrency=max(1, math.ceil(resolve(config, "--sys1cal-concurrency") / share)),
        rate=resolve(config, "--sys1cal-rate") / share,
        timeout=resolve(config, "--sys1cal-timeout"),
        retry_budget=resolve(config, "--sys1cal-retry-budget"),
        max_cost=None if max_cost is None else max_cost / share,
    )
