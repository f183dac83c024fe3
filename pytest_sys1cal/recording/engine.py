"""The recording engine: one asyncio event loop on a background thread, sending the requests of the
renderings it is given, at most `concurrency` at a time and evenly paced, retrying what the policy
retries (exchange.py: one request's life on the wire), and saving each rendering's cassette (atomically)
once every repeat of it is answered and parsed."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import functools
import sys
import threading
from collections.abc import Callable, Iterable

from ..codec import Codec
from ..dataset import Rendering
from ..errors import MeasurementError
from ..measure import OpenCassette
from ..results import ResultRow
from .breaker import progress_line
from .exchange import Exchange
from .jobs import Job, Stats, Unit
from .plan import CostMeter
from .policy import Limits

WAIT_SLICE = 0.25  # seconds an item waits between progress checks


def forget_failed(engine: Engine, rendering: Rendering) -> None:
    """Let a rendering whose recording failed be submitted again (its item rerun by a rerun plugin): the next
    `submit` asks the server afresh. One that succeeded or is still on its way is kept."""
    job = engine._jobs.get(rendering.instance_id)
    if job is None or not job.future.done() or job.future.exception() is None or engine._closed:
        return
    del engine._jobs[rendering.instance_id]
    engine.stats.jobs -= 1  # counted again when submitted; settled and failed belong to the loop's thread
    engine._loop.call_soon_threadsafe(_uncount_failure, engine.stats)


def _uncount_failure(stats: Stats) -> None:
    stats.settled -= 1
    stats.failed -= 1


class Engine:
    """The asyncio engine on its background thread: the measurer's one sender. `submit` renderings (main
    thread, any order of calls, in item order), then `result` blocks for one, calling `on_wait` every
    WAIT_SLICE seconds while it waits (a progress line); `close` cancels whatever is left. The `codec` says
    what to send and reads the answers; `open` gives a rendering's cassette (or its item's one-line error)."""

    forget = forget_failed  # a rendering whose item is rerun: its failed recording is asked afresh

    def __init__(
        self, codec: Codec, open: OpenCassette, limits: Limits, on_wait: Callable[[], None] = lambda: None
    ) -> None:
        self.codec = codec
        self.open = open
        self.limits = limits
        self.on_wait = on_wait
        self.stats = Stats()
        self.cost = CostMeter(limits)
        self.stopped: str | None = None
        self._jobs: dict[str, Job] = {}
        self._pending: collections.deque[Job] = collections.deque()  # thread-safe appends/pops
        self._units: collections.deque[Unit] = collections.deque()
        self._closed = False
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._setup_error: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, name="sys1cal-recorder", daemon=True)
        self._thread.start()
        self._started.wait()
        if self._setup_error is not None:
            self._closed = True
            raise self._setup_error

    # -------------------------------------------------- main thread

    def submit(self, renderings: Iterable[Rendering]) -> None:
        added = False
        for rendering in renderings:
            if rendering.instance_id in self._jobs:
                continue
            job = Job(rendering, concurrent.futures.Future())
            self._jobs[rendering.instance_id] = job
            self._pending.append(job)
            self.stats.jobs += 1
            added = True
        if added and not self._closed:
            self._loop.call_soon_threadsafe(self._wakeup.set)

    def handles(self, rendering: Rendering) -> bool:
        return rendering.instance_id in self._jobs

    def result(self, rendering: Rendering) -> ResultRow:
        """The rendering's result row, once recorded; MeasurementError when it could not be."""
        future = self._jobs[rendering.instance_id].future
        while True:
            try:
                return future.result(timeout=WAIT_SLICE)
            except concurrent.futures.TimeoutError:
                self.on_wait()

    @property
    def finished(self) -> bool:
        return self.stats.settled == self.stats.jobs

    def close(self) -> None:
        """Cancel what is in flight (nothing partial is ever saved) and end the thread."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()

    # -------------------------------------------------- event loop thread

    def _serve(self) -> None:
        try:
            _remember_missing_sniffio()
            asyncio.set_event_loop(self._loop)
            self._wakeup = asyncio.Event()
            self._exchange = Exchange(
                self.codec.adapter, self.limits, self.stats, self.cost, self._stop, lambda: self.stopped
            )
            self._workers = [self._loop.create_task(self._work()) for _ in range(self.limits.concurrency)]
            stop = functools.partial(self._stop, everything=True)
            watch = self._exchange.breaker.watch(lambda: self.stopped, stop, self.codec.adapter.base_url)
            self._workers.append(self._loop.create_task(watch))
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            self._setup_error = exc
            return
        finally:
            self._started.set()
        self._loop.run_forever()

    async def _shutdown(self) -> None:
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        await self._exchange.client.aclose()
        interrupted = MeasurementError("not recorded: the recording was interrupted", fatal=True)
        for job in self._jobs.values():
            self._settle(job, error=interrupted)

    async def _next_unit(self) -> Unit:
        while True:
            if self._units:
                return self._units.popleft()
            if self._pending:
                self._expand(self._pending.popleft())
                continue
            self._wakeup.clear()
            await self._wakeup.wait()

    def _expand(self, job: Job) -> None:
        """A job's requests become units at the back of the queue (lazily, so the first request of the
        first rendering goes out at once rather than after every cassette has been opened)."""
        if job.future.done():
            return
        if self.stopped:
            self._settle(job, error=MeasurementError(f"not recorded: {self.stopped}", fatal=True))
            return
        try:
            self._units.extend(job.prepare(self.open, self.codec))
        except MeasurementError as exc:
            self._settle(job, error=exc)
        except Exception as exc:  # noqa: BLE001 - a bug: that item's error, never a worker gone quiet
            self._settle(job, error=MeasurementError(f"recording failed: {describe_exception(exc)}"))

    async def _work(self) -> None:
        while True:
            unit = await self._next_unit()
            job = unit.job
            if job.future.done():
                continue
            try:
                response, kept = await self._exchange.send(unit)
                job.interactions[unit.repeat][unit.index] = kept
                # Every repeat answered and parsed: the cassette saved (atomically), then the row handed over.
                if not job.future.done() and job.answered(unit, response, self.codec):
                    self._settle(job, row=job.finish(self.codec))
            except MeasurementError as exc:
                self._settle(job, error=exc)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a bug; shown on the item, with its type
                self._settle(job, error=MeasurementError(f"recording failed: {describe_exception(exc)}"))

    def _settle(self, job: Job, *, row: ResultRow | None = None, error: MeasurementError | None = None) -> None:
        if job.future.done():
            return
        self.stats.settled += 1
        if error is not None:
            self.stats.failed += 1
            job.future.set_exception(error)
            if error.fatal and not self.stopped:
                self._stop(f"recording stopped after: {error}")
        else:
            assert row is not None
            job.future.set_result(row)

    def _stop(self, reason: str, everything: bool = False) -> None:
        """No new request goes out; renderings with requests still unsent fail with `reason`; those entirely in
        flight too when `everything` (no answer will come: the breaker, a wait too long), else they may complete."""
        if self.stopped:
            return
        self.stopped = reason
        error = MeasurementError(f"not recorded: {reason}", fatal=True)
        for job in list(self._jobs.values()):
            if not job.future.done() and (everything or job.unsent > 0 or job.cassette is None):
                self._settle(job, error=error)

    def progress_line(self, total: int, now: float) -> str:
        """The progress line (main thread; breaker.py words it from plain counters)."""
        return progress_line(self.stats, self._exchange.breaker, total, now)


def describe_exception(exc: BaseException) -> str:
    """`Type: message`, with the leaves of an exception group (anyio raises those) spelled out."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_exception(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


def _remember_missing_sniffio() -> None:
    """httpcore imports `sniffio` on every pool operation to tell asyncio from trio; when it is not
    installed, each failed import searches sys.path again (a third of the engine's CPU time at 80
    requests/s). Recording the miss in sys.modules makes later attempts fail at once, as they would."""
    try:
        import sniffio  # noqa: F401
    except ImportError:
        sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]  # a recorded miss, as described
