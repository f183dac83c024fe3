"""The recording engine: one asyncio event loop on a background thread, sending the requests of the
renderings it is given, at most `concurrency` at a time and evenly paced, retrying what the policy
retries, and saving each rendering's cassette (atomically) once every repeat of it is answered and parsed."""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from ..cassettes import EXTENSION_KEY, INTERACTION_KEY
from ..dataset import Rendering
from ..errors import MeasurementError
from ..measure import Measurer
from ..models.base import AnswerError, WireRequest, WireResponse
from ..results import ResultRow
from ..vcr_store import save_cassette
from .plan import CostMeter, dollars, estimate_tokens, reported_input_tokens
from .policy import NEVER_UP_ATTEMPTS, RETRY_STATUSES, SLOW_DOWN_STATUSES, Limits, backoff, retry_after_seconds
from .transport import AsyncCassetteTransport, to_vcr_request

if TYPE_CHECKING:
    from vcr.cassette import Cassette

WAIT_SLICE = 0.25  # seconds an item waits between progress checks


class Pacer:
    """Evenly spaced request starts, at most `per_minute` a minute (0 = unlimited), and a shared pause
    when the server says it is overloaded. Used only from the event loop's thread."""

    def __init__(self, per_minute: float):
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self._next = 0.0
        self._held_until = 0.0

    def hold(self, seconds: float) -> None:
        self._held_until = max(self._held_until, time.monotonic() + seconds)

    async def turn(self) -> None:
        while True:
            now = time.monotonic()
            start = max(now, self._next, self._held_until)
            self._next = start + self.interval
            if start > now:
                await asyncio.sleep(start - now)
            if time.monotonic() >= self._held_until:  # no pause began while this request waited
                return


@dataclass
class _Job:
    rendering: Rendering
    future: concurrent.futures.Future[ResultRow]
    cassette: Cassette | None = None
    responses: list[list[WireResponse | None]] = field(default_factory=list)
    # Per repeat and request: the interaction to append to the cassette (None when replayed).
    interactions: list[list[Any]] = field(default_factory=list)
    samples: list[dict[str, Any] | None] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)  # per repeat: responses still to come
    remaining: int = 0
    unsent: int = 0


@dataclass
class _Unit:
    job: _Job
    repeat: int
    index: int
    request: WireRequest
    tokens: int


@dataclass
class Stats:
    sent_ok: int = 0  # requests answered with 2xx (replayed ones not counted)
    retries: int = 0
    jobs: int = 0
    settled: int = 0
    failed: int = 0
    first_send: float | None = None
    last_answer: float | None = None


class Engine:
    """The asyncio engine on its background thread: the measurer's one sender. `submit` renderings (main
    thread, any order of calls, in item order), then `result` blocks for one, calling `on_wait` every
    WAIT_SLICE seconds while it waits (a progress line); `close` cancels whatever is left."""

    def __init__(self, measurer: Measurer, limits: Limits, on_wait: Callable[[], None] = lambda: None):
        self.measurer = measurer
        self.limits = limits
        self.on_wait = on_wait
        self.stats = Stats()
        self.cost = CostMeter(limits)
        self.stopped: str | None = None
        self._jobs: dict[str, _Job] = {}
        self._pending: collections.deque[_Job] = collections.deque()  # thread-safe appends/pops
        self._units: collections.deque[_Unit] = collections.deque()
        self._rng = random.Random(0)
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
            job = _Job(rendering, concurrent.futures.Future())
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
            self._pacer = Pacer(self.limits.rate)
            n = self.limits.concurrency
            limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
            transport = AsyncCassetteTransport(httpx.AsyncHTTPTransport(limits=limits))
            self._client = httpx.AsyncClient(transport=transport, timeout=self.limits.timeout)
            self._workers = [self._loop.create_task(self._work()) for _ in range(n)]
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
        await self._client.aclose()
        interrupted = MeasurementError("not recorded: the recording was interrupted", fatal=True)
        for job in self._jobs.values():
            self._settle(job, error=interrupted)

    async def _next_unit(self) -> _Unit:
        while True:
            if self._units:
                return self._units.popleft()
            if self._pending:
                self._expand(self._pending.popleft())
                continue
            self._wakeup.clear()
            await self._wakeup.wait()

    def _expand(self, job: _Job) -> None:
        """A job's requests become units at the back of the queue (lazily, so the first request of the
        first rendering goes out at once rather than after every cassette has been opened)."""
        if job.future.done():
            return
        if self.stopped:
            self._settle(job, error=MeasurementError(f"not recorded: {self.stopped}", fatal=True))
            return
        measurer = self.measurer
        try:
            job.cassette = measurer.open(job.rendering)  # a damaged file: the same one-line error as on replay
            repeats = measurer.ask(job.rendering)
        except MeasurementError as exc:
            self._settle(job, error=exc)
            return
        except Exception as exc:  # noqa: BLE001 - a bug: that item's error, never a worker gone quiet
            self._settle(job, error=MeasurementError(f"recording failed: {describe_exception(exc)}"))
            return
        job.responses = [[None] * len(requests) for requests in repeats]
        job.interactions = [[None] * len(requests) for requests in repeats]
        job.samples = [None] * len(repeats)
        job.missing = [len(requests) for requests in repeats]
        job.remaining = job.unsent = sum(job.missing)
        for repeat, requests in enumerate(repeats):
            for index, request in enumerate(requests):
                self._units.append(_Unit(job, repeat, index, request, estimate_tokens(request)))

    async def _work(self) -> None:
        while True:
            unit = await self._next_unit()
            job = unit.job
            if job.future.done():
                continue
            try:
                response, kept = await self._exchange(unit)
                job.interactions[unit.repeat][unit.index] = kept
                self._answered(unit, response)
            except MeasurementError as exc:
                self._settle(job, error=exc)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a bug; shown on the item, with its type
                self._settle(job, error=MeasurementError(f"recording failed: {describe_exception(exc)}"))

    def _answered(self, unit: _Unit, response: WireResponse) -> None:
        job = unit.job
        if job.future.done():
            return
        job.responses[unit.repeat][unit.index] = response
        job.missing[unit.repeat] -= 1
        job.remaining -= 1
        if job.missing[unit.repeat] == 0:  # a complete repeat: check the answers now, not at the end
            responses = [r for r in job.responses[unit.repeat] if r is not None]
            try:
                job.samples[unit.repeat] = self.measurer.sample(responses)
            except AnswerError as exc:
                self._settle(job, error=MeasurementError(f"malformed answer: {exc}"))
                return
        if job.remaining == 0:
            self._complete(job)

    def _complete(self, job: _Job) -> None:
        """Every repeat answered and parsed: save the cassette (atomically), then hand the row over."""
        assert job.cassette is not None
        server_model = self.measurer.reported([[r for r in responses if r is not None] for responses in job.responses])
        # Appended now, in repeat order: replay serves repeats in cassette order, so the recording run
        # and a later replay report the same samples in the same order.
        for repeat in job.interactions:
            for kept in repeat:
                if kept is not None:
                    job.cassette.append(*kept)
        recorded = bool(job.cassette.dirty)
        try:
            save_cassette(job.cassette)
        except OSError as exc:
            self._settle(job, error=MeasurementError(f"cannot save {job.cassette.path}: {exc}", fatal=True))
            return
        samples = [sample for sample in job.samples if sample is not None]
        self._settle(job, row=ResultRow.measured(job.rendering, samples, server_model=server_model, recorded=recorded))

    def _settle(self, job: _Job, *, row: ResultRow | None = None, error: MeasurementError | None = None) -> None:
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

    def _stop(self, reason: str) -> None:
        """No new request goes out; renderings with requests still unsent fail with `reason`. Those
        entirely in flight may still complete."""
        if self.stopped:
            return
        self.stopped = reason
        error = MeasurementError(f"not recorded: {reason}", fatal=True)
        for job in list(self._jobs.values()):
            if not job.future.done() and (job.unsent > 0 or job.cassette is None):
                self._settle(job, error=error)

    async def _turn(self, unit: _Unit) -> None:
        """Wait for this request's turn (rate, server pauses); refuse when stopped or over the cost cap."""
        while True:
            if self.stopped:
                raise MeasurementError(f"not recorded: {self.stopped}", fatal=True)
            await self._pacer.turn()
            if self.stopped:
                raise MeasurementError(f"not recorded: {self.stopped}", fatal=True)
            if self.cost.allows(unit.tokens):
                return
            cap = self.limits.max_cost
            self._stop(
                f"--sys1cal-max-cost ${cap:g} reached: ${self.cost.dollars():.4f} spent and "
                f"${dollars(self.cost.in_flight, self.limits.price):.4f} in flight; the next request would exceed it"
            )

    async def _exchange(self, unit: _Unit) -> tuple[WireResponse, Any]:
        """Send one request (or replay it, new_episodes), retrying what is worth retrying; with the
        answer, the interaction to record (None for a replayed one)."""
        job, request = unit.job, unit.request
        client = self._client
        content = request.content()

        def build() -> httpx.Request:
            return client.build_request(
                request.method, request.url, content=content, headers=dict(request.headers),
                extensions={EXTENSION_KEY: job.cassette},
            )  # fmt: skip

        assert job.cassette is not None
        first = build()
        if job.cassette.can_play_response_for(to_vcr_request(first)):  # new_episodes: already recorded
            job.unsent -= 1
            replayed = await client.send(first)
            return WireResponse(replayed.status_code, dict(replayed.headers), replayed.content), None

        attempt, started = 0, 0.0
        while True:
            attempt += 1
            await self._turn(unit)
            if attempt == 1:  # the retry budget runs from the first send, not from the wait for a turn
                job.unsent -= 1
                started = time.monotonic()
            answer, failure, retry_after = await self._attempt(unit, first if attempt == 1 else build())
            if answer is not None:
                return answer
            assert failure is not None
            delay = retry_after if retry_after is not None else backoff(attempt, self.limits, self._rng)
            # A server that refuses every connection before answering anything is not up: say so after a few
            # quick tries instead of spending the whole retry budget.
            never_up = (
                isinstance(failure, httpx.ConnectError) and self.stats.sent_ok == 0 and attempt >= NEVER_UP_ATTEMPTS
            )
            over_budget = time.monotonic() + delay > started + self.limits.retry_budget
            if never_up or attempt >= self.limits.max_attempts or over_budget:
                raise self._gave_up(request, failure, attempt, time.monotonic() - started)
            self.stats.retries += 1
            await asyncio.sleep(delay)

    async def _attempt(
        self, unit: _Unit, http_request: httpx.Request
    ) -> tuple[tuple[WireResponse, Any] | None, BaseException | None, float | None]:
        """One send: the answer with the interaction to record, or the failure worth retrying and the wait
        the server asked for. Raises MeasurementError for what no retry would mend."""
        projected = self.cost.projected(unit.tokens)
        self.cost.in_flight += projected
        if self.stats.first_send is None:
            self.stats.first_send = time.monotonic()
        try:
            response = await self._client.send(http_request)
        except (httpx.UnsupportedProtocol, httpx.LocalProtocolError) as exc:
            self.cost.in_flight -= projected
            raise MeasurementError(f"cannot send to {unit.request.url}: {exc}", fatal=True) from None
        except httpx.TransportError as exc:
            self.cost.in_flight -= projected
            return None, exc, None
        wire = WireResponse(response.status_code, dict(response.headers), response.content)
        if wire.ok:
            self.cost.answered(unit.tokens, projected, reported_input_tokens(wire))
            self.stats.sent_ok += 1
            self.stats.last_answer = time.monotonic()
            return (wire, response.extensions.get(INTERACTION_KEY)), None, None
        self.cost.in_flight -= projected  # assumed unbilled: the server did not answer
        error = self.measurer.adapter.error(wire)
        if wire.status not in RETRY_STATUSES or not error.retryable or error.fatal:
            raise MeasurementError(f"server error: {error}", fatal=error.fatal)
        retry_after = retry_after_seconds(wire.headers)
        if wire.status in SLOW_DOWN_STATUSES:
            self._pacer.hold(retry_after if retry_after is not None else self.limits.backoff_initial)
        return None, error, retry_after

    def _gave_up(self, request: WireRequest, failure: BaseException, attempts: int, elapsed: float) -> MeasurementError:
        tried = f"{attempts} attempt{'s' if attempts != 1 else ''} in {elapsed:.1f} s"
        if isinstance(failure, httpx.ConnectError):
            # Nothing answers at that address: every other item would fail the same way.
            return MeasurementError(
                f"cannot connect to {request.url}: {failure} ({tried}; is the server up? check --sys1cal-base-url)",
                fatal=True,
            )
        if isinstance(failure, httpx.TimeoutException):
            return MeasurementError(
                f"server error: no response from {request.url} within {self.limits.timeout:g} s ({tried}; "
                f"raise --sys1cal-timeout if the server is slow)"
            )
        if isinstance(failure, httpx.TransportError):
            return MeasurementError(
                f"server error: no response from {request.url}: {type(failure).__name__}: {failure} ({tried})"
            )
        return MeasurementError(f"server error: {failure} ({tried})")


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
        sys.modules.setdefault("sniffio", None)  # type: ignore[assignment]
