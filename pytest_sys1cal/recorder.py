"""Recording at the speed of the rate limit: concurrent, paced, retrying, resumable and cost-aware.

When the record mode is not ``none``, the renderings whose items will run and that need the network
are handed to a `Recorder`: one asyncio event loop on one background thread, with an
`httpx.AsyncClient` whose transport is `cassettes.AsyncCassetteTransport` (the same replay and
record-only-2xx rules as the synchronous path). Requests go out in item order, at most
``--sys1cal-concurrency`` at a time and at most ``--sys1cal-rate`` per minute (evenly spaced), and
are retried on 408, 429, 5xx, timeouts and connection errors with exponential backoff and jitter,
honouring ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP-date), within
``--sys1cal-retry-budget`` seconds per request. A rendering's cassette is saved (atomically) as soon as
every repeat of it has been answered and parsed, so an interrupted recording leaves only complete
cassettes and the next ``--sys1cal-record-mode=once`` records exactly what is missing.

Items still run one by one in pytest's order; an item blocks until its rendering's result is ready.
Replay (record mode ``none``) never starts any of this.

Where prefetching starts:

- without xdist, in ``pytest_runtestloop``: every selected rendering that needs the network, in item
  order, after the plan and the cost estimate are printed (and ``--sys1cal-max-cost`` is checked);
- under xdist, the controller prints the plan and checks the cost from the workers' collection, before
  anything is scheduled; each worker records only what it is given: the item it is running and the
  next one queued for it (``pytest_runtest_protocol``'s ``nextitem``), with 1/N of the concurrency,
  the rate and the cost cap, so N workers together stay within the limits.

Cost: Jev charges $0.042 per million input tokens. Before sending, the input tokens are estimated as
the characters of each JSON request body divided by 4 (the usual rule of thumb for English text with
a BPE tokenizer); while recording, the server's own ``usage.input_tokens`` replaces the estimate, and
the observed ratio of reported to estimated tokens prices the next request, so the cap stops the
recording before the spend would exceed it.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import datetime as _dt
import email.utils
import json
import math
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from .cassettes import EXTENSION_KEY, INTERACTION_KEY, AsyncCassetteTransport, to_vcr_request
from .collect import Sys1CalItem, item_name
from .dataset import Rendering
from .models.base import AnswerError, WireRequest, WireResponse

if TYPE_CHECKING:
    from vcr.cassette import Cassette

    from .session import Sys1CalRun

PRICE_PER_MILLION_INPUT_TOKENS = 0.042  # Jev, USD; output tokens are free
CHARS_PER_TOKEN = 4
ESTIMATE_NOTE = "estimate: characters of each JSON request body ÷ 4"
# Statuses worth another try (the SDK's list: 408, 429 and every 5xx, which includes 529 "overloaded").
RETRY_STATUSES = frozenset({408, 429, *range(500, 600)})
# Overload signals that slow every request down, not only the one that got them.
SLOW_DOWN_STATUSES = frozenset({429, 503, 529})
BACKOFF_INITIAL = 0.5
BACKOFF_MAX = 30.0
BACKOFF_JITTER = 0.25  # a random fraction up to this is taken off each backoff delay
MAX_ATTEMPTS = 10
NEVER_UP_ATTEMPTS = 3  # connection refused this often, with no answer yet in this run: the server is down
PROGRESS_EVERY = 10.0  # seconds between progress lines
WAIT_SLICE = 0.25  # seconds an item waits between progress checks


class RecordingError(Exception):
    """A rendering that could not be recorded; `fatal` stops the run (every other item would fail alike)."""

    def __init__(self, message: str, *, fatal: bool = False):
        super().__init__(message)
        self.fatal = fatal


# ---------------------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Settings:
    concurrency: int = 8
    rate: float = 1000.0  # requests per minute; 0 = no limit
    timeout: float = 60.0
    retry_budget: float = 120.0
    max_cost: float | None = None
    price: float = PRICE_PER_MILLION_INPUT_TOKENS
    backoff_initial: float = BACKOFF_INITIAL
    backoff_max: float = BACKOFF_MAX
    max_attempts: int = MAX_ATTEMPTS

    @classmethod
    def from_run(cls, run: Sys1CalRun, share: int = 1) -> Settings:
        """The run's settings; with `share` > 1 (xdist workers), this process's part of them."""
        from .options import resolve

        config = run.config
        max_cost = resolve(config, "--sys1cal-max-cost")
        return cls(
            concurrency=max(1, math.ceil(resolve(config, "--sys1cal-concurrency") / share)),
            rate=resolve(config, "--sys1cal-rate") / share,
            timeout=resolve(config, "--sys1cal-timeout"),
            retry_budget=resolve(config, "--sys1cal-retry-budget"),
            max_cost=None if max_cost is None else max_cost / share,
        )


def retry_after_seconds(headers: Mapping[str, str], now: _dt.datetime | None = None) -> float | None:
    """The server's requested wait: ``retry-after-ms`` first, then ``Retry-After`` in seconds or as an
    HTTP-date (a date in the past means now). None when neither is there or readable."""
    lowered = {name.lower(): value for name, value in headers.items()}
    with contextlib.suppress(TypeError, ValueError):
        milliseconds = float(lowered.get("retry-after-ms") or "nan")
        if math.isfinite(milliseconds):
            return max(0.0, milliseconds / 1000)
    text = (lowered.get("retry-after") or "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=_dt.UTC)
        seconds = (when - (now or _dt.datetime.now(_dt.UTC))).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def backoff(attempt: int, settings: Settings, rng: random.Random) -> float:
    """Exponential backoff after the `attempt`-th failure (1-based), capped, with jitter taken off."""
    delay = min(settings.backoff_max, settings.backoff_initial * 2 ** (attempt - 1))
    return delay * (1 - BACKOFF_JITTER * rng.random())


def estimate_tokens(request: WireRequest) -> int:
    return math.ceil(len(request.content().decode("utf-8")) / CHARS_PER_TOKEN)


def dollars(tokens: float, price: float = PRICE_PER_MILLION_INPUT_TOKENS) -> float:
    return tokens * price / 1e6


# ---------------------------------------------------------------------------------------- the plan


@dataclass
class Plan:
    """What this run will send: the renderings that need the network (in item order), and its price."""

    mode: str
    selected: int
    renderings: list[Rendering]
    requests: int
    tokens: int
    repeats: int

    def lines(self, settings: Settings, workers: int = 1) -> list[str]:
        if not self.renderings:
            have = "already have cassettes" if self.mode != "new_episodes" else "replay in full from their cassettes"
            return [f"sys1cal: nothing to record: all {self.selected} selected renderings {have}"]
        count = f"{len(self.renderings)} of {self.selected} renderings"
        skipped = self.selected - len(self.renderings)
        if self.mode == "all":
            first = f"sys1cal: re-recording {count} (record mode all)"
        elif self.mode == "new_episodes":
            first = f"sys1cal: recording missing requests of {count} ({skipped} replay in full from their cassettes)"
        else:
            first = f"sys1cal: recording {count} ({skipped} already have cassettes)"
        cost = dollars(self.tokens, settings.price)
        price = (
            f"sys1cal: {self.requests:,} requests ({self.repeats} repeat{'s' if self.repeats != 1 else ''}); "
            f"about {self.tokens:,} input tokens ≈ ${cost:.4f} at ${settings.price} per million input tokens "
            f"({ESTIMATE_NOTE})"
        )
        if settings.max_cost is not None:
            price += f"; cap --sys1cal-max-cost ${settings.max_cost * workers:g}"
        pace = f"sys1cal: concurrency {settings.concurrency * workers}"
        if settings.rate:
            rate = settings.rate * workers
            pace += f", at most {rate:,.0f} requests/min: at least {_duration(self.requests * 60 / rate)}"
        else:
            pace += ", no rate limit"
        if workers > 1:
            pace += f" (shared by {workers} xdist workers, each recording the items it is given)"
        return [first, price, pace]

    def refusal(self, settings: Settings) -> str | None:
        if settings.max_cost is None or not self.renderings:
            return None
        cost = dollars(self.tokens, settings.price)
        if cost <= settings.max_cost:
            return None
        return (
            f"sys1cal: recording {self.requests:,} requests would cost about ${cost:.4f} "
            f"({self.tokens:,} input tokens at ${settings.price} per million; {ESTIMATE_NOTE}), more than "
            f"--sys1cal-max-cost ${settings.max_cost:g}. Nothing was sent. Select fewer renderings (-k), lower "
            f"--sys1cal-repeats, or raise --sys1cal-max-cost."
        )


def network_requests(run: Sys1CalRun, rendering: Rendering) -> list[WireRequest]:
    """The requests of `rendering` (all repeats, in order) that its cassette cannot replay in this
    record mode: everything in ``all``; everything or nothing in ``once`` (an existing cassette is
    replay-only); the unplayable remainder in ``new_episodes``."""
    mode = run.record_mode
    if mode == "none":
        return []
    wanted = run.adapter.requests(rendering, run.question_ids) * run.repeats  # the same requests each repeat
    if mode == "all":
        return wanted
    exists = run.store.path_for(rendering).is_file()
    if mode == "once" or not exists:
        return [] if exists else wanted
    cassette = run.store.open(rendering)  # new_episodes: play what is there, count the rest
    missing = []
    for request in wanted:
        vcr_request = to_vcr_request(
            httpx.Request(request.method, request.url, content=request.content(), headers=dict(request.headers))
        )
        if cassette.can_play_response_for(vcr_request):
            cassette.play_response(vcr_request)
        else:
            missing.append(request)
    return missing


def make_plan(run: Sys1CalRun, renderings: Iterable[Rendering]) -> Plan:
    selected, to_record, requests, tokens = 0, [], 0, 0
    for rendering in renderings:
        selected += 1
        missing = network_requests(run, rendering)
        if missing:
            to_record.append(rendering)
            requests += len(missing)
            distinct = {id(request): request for request in missing}  # repeats share their request objects
            estimates = {key: estimate_tokens(request) for key, request in distinct.items()}
            tokens += sum(estimates[id(request)] for request in missing)
    return Plan(run.record_mode, selected, to_record, requests, tokens, run.repeats)


# ---------------------------------------------------------------------------------------- pacing and cost


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


class CostMeter:
    """Input tokens spent (server-reported where the server says, estimated where it does not), and
    projected for requests in flight and the next one."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.spent = 0.0  # tokens of answered requests
        self.reported = 0  # of which the server reported
        self.reported_estimate = 0  # our estimate for the requests the server reported on
        self.in_flight = 0.0

    @property
    def ratio(self) -> float:
        return self.reported / self.reported_estimate if self.reported and self.reported_estimate else 1.0

    def projected(self, estimate: int) -> float:
        return estimate * self.ratio

    def allows(self, estimate: int) -> bool:
        cap = self.settings.max_cost
        return (
            cap is None or dollars(self.spent + self.in_flight + self.projected(estimate), self.settings.price) <= cap
        )

    def answered(self, estimate: int, projected: float, usage: int | None) -> None:
        self.in_flight -= projected
        if usage is None:
            self.spent += estimate
        else:
            self.spent += usage
            self.reported += usage
            self.reported_estimate += estimate

    def dollars(self) -> float:
        return dollars(self.spent, self.settings.price)


def reported_input_tokens(response: WireResponse) -> int | None:
    try:
        tokens = json.loads(response.content)["usage"]["input_tokens"]
    except (ValueError, KeyError, TypeError):
        return None
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else None


# ---------------------------------------------------------------------------------------- the engine


@dataclass
class _Job:
    rendering: Rendering
    future: concurrent.futures.Future[dict[str, Any]]
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


class Recorder:
    """The asyncio engine on its background thread. `submit` renderings (main thread, any order of
    calls, in item order), then `result` blocks for one; `close` cancels whatever is left."""

    def __init__(self, run: Sys1CalRun, settings: Settings):
        self.run = run
        self.settings = settings
        self.stats = Stats()
        self.cost = CostMeter(settings)
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

    def result(self, rendering: Rendering, tick: Callable[[], None] = lambda: None) -> dict[str, Any]:
        """The rendering's result row, once recorded; RecordingError when it could not be."""
        future = self._jobs[rendering.instance_id].future
        while True:
            try:
                return future.result(timeout=WAIT_SLICE)
            except concurrent.futures.TimeoutError:
                tick()

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
            self._pacer = Pacer(self.settings.rate)
            n = self.settings.concurrency
            limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
            transport = AsyncCassetteTransport(httpx.AsyncHTTPTransport(limits=limits))
            self._client = httpx.AsyncClient(transport=transport, timeout=self.settings.timeout)
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
        interrupted = RecordingError("not recorded: the recording was interrupted", fatal=True)
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
            self._settle(job, error=RecordingError(f"not recorded: {self.stopped}", fatal=True))
            return
        run = self.run
        try:
            job.cassette = run.store.open(job.rendering)
            repeats = [run.adapter.requests(job.rendering, run.question_ids) for _ in range(run.repeats)]
        except Exception as exc:  # noqa: BLE001 - a broken cassette file: that item's error
            self._settle(job, error=RecordingError(f"cannot open the cassette: {type(exc).__name__}: {exc}"))
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
            except RecordingError as exc:
                self._settle(job, error=exc)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a bug; shown on the item, with its type
                self._settle(job, error=RecordingError(f"recording failed: {_describe(exc)}"))

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
                job.samples[unit.repeat] = self.run.adapter.parse(self.run.question_ids, responses)
            except AnswerError as exc:
                self._settle(job, error=RecordingError(f"malformed answer: {exc}"))
                return
        if job.remaining == 0:
            self._complete(job)

    def _complete(self, job: _Job) -> None:
        """Every repeat answered and parsed: save the cassette (atomically), then hand the row over."""
        run = self.run
        assert job.cassette is not None
        server_model = None
        for responses in job.responses:
            server_model = run.adapter.reported_model([r for r in responses if r is not None]) or server_model
        # Appended now, in repeat order: replay serves repeats in cassette order, so the recording run
        # and a later replay report the same samples in the same order.
        for repeat in job.interactions:
            for kept in repeat:
                if kept is not None:
                    job.cassette.append(*kept)
        recorded = bool(job.cassette.dirty)
        try:
            run.store.save(job.cassette)
        except OSError as exc:
            self._settle(job, error=RecordingError(f"cannot save {job.cassette.path}: {exc}", fatal=True))
            return
        row = {
            **run.identity(job.rendering),
            "samples": job.samples,
            "server_model": server_model,
            "recorded": recorded,
        }
        self._settle(job, row=row)

    def _settle(self, job: _Job, *, row: dict[str, Any] | None = None, error: RecordingError | None = None) -> None:
        if job.future.done():
            return
        self.stats.settled += 1
        if error is not None:
            self.stats.failed += 1
            job.future.set_exception(error)
            if error.fatal and not self.stopped:
                self._stop(f"recording stopped after: {error}")
        else:
            job.future.set_result(row or {})

    def _stop(self, reason: str) -> None:
        """No new request goes out; renderings with requests still unsent fail with `reason`. Those
        entirely in flight may still complete."""
        if self.stopped:
            return
        self.stopped = reason
        error = RecordingError(f"not recorded: {reason}", fatal=True)
        for job in list(self._jobs.values()):
            if not job.future.done() and (job.unsent > 0 or job.cassette is None):
                self._settle(job, error=error)

    async def _turn(self, unit: _Unit) -> None:
        """Wait for this request's turn (rate, server pauses); refuse when stopped or over the cost cap."""
        while True:
            if self.stopped:
                raise RecordingError(f"not recorded: {self.stopped}", fatal=True)
            await self._pacer.turn()
            if self.stopped:
                raise RecordingError(f"not recorded: {self.stopped}", fatal=True)
            if self.cost.allows(unit.tokens):
                return
            cap = self.settings.max_cost
            self._stop(
                f"--sys1cal-max-cost ${cap:g} reached: ${self.cost.dollars():.4f} spent and "
                f"${dollars(self.cost.in_flight, self.settings.price):.4f} in flight; the next request would exceed it"
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
            projected = self.cost.projected(unit.tokens)
            self.cost.in_flight += projected
            if self.stats.first_send is None:
                self.stats.first_send = time.monotonic()
            retry_after: float | None = None
            try:
                response = await client.send(first if attempt == 1 else build())
            except (httpx.UnsupportedProtocol, httpx.LocalProtocolError) as exc:
                self.cost.in_flight -= projected
                raise RecordingError(f"cannot send to {request.url}: {exc}", fatal=True) from None
            except httpx.TransportError as exc:
                self.cost.in_flight -= projected
                failure: BaseException = exc
            else:
                wire = WireResponse(response.status_code, dict(response.headers), response.content)
                if 200 <= wire.status < 300:
                    self.cost.answered(unit.tokens, projected, reported_input_tokens(wire))
                    self.stats.sent_ok += 1
                    self.stats.last_answer = time.monotonic()
                    return wire, response.extensions.get(INTERACTION_KEY)
                self.cost.in_flight -= projected  # assumed unbilled: the server did not answer
                error = self.run.adapter.error(wire)
                if wire.status not in RETRY_STATUSES or not error.retryable or error.fatal:
                    raise RecordingError(f"server error: {error}", fatal=error.fatal)
                failure = error
                retry_after = retry_after_seconds(wire.headers)
                if wire.status in SLOW_DOWN_STATUSES:
                    self._pacer.hold(retry_after if retry_after is not None else self.settings.backoff_initial)
            delay = retry_after if retry_after is not None else backoff(attempt, self.settings, self._rng)
            # A server that refuses every connection before answering anything is not up: say so after a few
            # quick tries instead of spending the whole retry budget.
            never_up = (
                isinstance(failure, httpx.ConnectError) and self.stats.sent_ok == 0 and attempt >= NEVER_UP_ATTEMPTS
            )
            over_budget = time.monotonic() + delay > started + self.settings.retry_budget
            if never_up or attempt >= self.settings.max_attempts or over_budget:
                raise self._gave_up(request, failure, attempt, time.monotonic() - started)
            self.stats.retries += 1
            await asyncio.sleep(delay)

    def _gave_up(self, request: WireRequest, failure: BaseException, attempts: int, elapsed: float) -> RecordingError:
        tried = f"{attempts} attempt{'s' if attempts != 1 else ''} in {elapsed:.1f} s"
        if isinstance(failure, httpx.ConnectError):
            # Nothing answers at that address: every other item would fail the same way.
            return RecordingError(
                f"cannot connect to {request.url}: {failure} ({tried}; is the server up? check --sys1cal-base-url)",
                fatal=True,
            )
        if isinstance(failure, httpx.TimeoutException):
            return RecordingError(
                f"server error: no response from {request.url} within {self.settings.timeout:g} s ({tried}; "
                f"raise --sys1cal-timeout if the server is slow)"
            )
        if isinstance(failure, httpx.TransportError):
            return RecordingError(
                f"server error: no response from {request.url}: {type(failure).__name__}: {failure} ({tried})"
            )
        return RecordingError(f"server error: {failure} ({tried})")


def _describe(exc: BaseException) -> str:
    """`Type: message`, with the leaves of an exception group (anyio raises those) spelled out."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


def _remember_missing_sniffio() -> None:
    """httpcore imports `sniffio` on every pool operation to tell asyncio from trio; when it is not
    installed, each failed import searches sys.path again (a third of the engine's CPU time at 80
    requests/s). Recording the miss in sys.modules makes later attempts fail at once, as they would."""
    try:
        import sniffio  # noqa: F401
    except ImportError:
        sys.modules.setdefault("sniffio", None)  # type: ignore[assignment]


# ---------------------------------------------------------------------------------------- pytest glue


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
        self.run = run
        self.settings = settings
        self.plan = plan
        self.engine: Recorder | None = None
        self._last_progress = time.monotonic()
        self._reported_end = False
        self.quiet = False  # xdist workers cannot write to the terminal

    def ensure_engine(self) -> Recorder:
        if self.engine is None:
            self.engine = Recorder(self.run, self.settings)
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
        left = f"about {_duration((total - stats.sent_ok) / rate)} left" if rate > 0 else "waiting for the server"
        retried = f", {stats.retries} retried" if stats.retries else ""
        say(
            self.run.config,
            f"sys1cal: recorded {stats.sent_ok:,}/{total:,} requests, {rate:.1f} requests/s, {left}{retried}",
        )

    def closing_line(self) -> str:
        assert self.engine is not None
        stats, cost = self.engine.stats, self.engine.cost
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
            say(self.run.config, self.closing_line())


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
    if not run.recording or run.recorder is not None:
        return
    renderings = _renderings(run, items)
    plan = make_plan(run, renderings)
    settings = Settings.from_run(run)
    _announce(run, plan, settings)
    recording = Recording(run, settings, plan)
    run.recorder = recording
    if not plan.renderings or run.adapter.missing_key():
        return  # nothing to send, or the synchronous path says clearly why it cannot
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
    if not run.recording or run.recorder is not None:
        return
    by_name = {item_name(run.model_name, r): r for r in run.dataset.renderings}
    renderings = [by_name[name] for name in (nodeid.rsplit("::", 1)[-1] for nodeid in ids) if name in by_name]
    plan = make_plan(run, renderings)
    settings = Settings.from_run(run, share=max(1, workers))
    run.recorder = Recording(run, settings, plan)
    _announce(run, plan, settings, workers=max(1, workers))
    if plan.renderings:
        run.start_recording()
        _sweep_leftovers(run)


def prefetch(run: Sys1CalRun, item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """xdist worker: record the item about to run and the next one queued for this worker."""
    if not run.recording or run.adapter.missing_key():
        return
    if run.recorder is None:
        workers = int(getattr(run.config, "workerinput", {}).get("workercount", 1) or 1)
        run.recorder = Recording(run, Settings.from_run(run, share=workers), None)
        run.recorder.quiet = True
    recording = run.recorder
    wanted = [r for r in _renderings(run, [item, nextitem]) if not recording.handles(r) and network_requests(run, r)]
    if wanted:
        recording.ensure_engine().submit(wanted)


def _renderings(run: Sys1CalRun, items: Iterable[pytest.Item | None]) -> list[Rendering]:
    return [item.rendering for item in items if isinstance(item, Sys1CalItem) and item.run is run]


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    return f"{minutes:.0f} min" if minutes < 90 else f"{minutes / 60:.1f} h"


__all__ = [
    "Plan",
    "Recorder",
    "Recording",
    "RecordingError",
    "Settings",
    "begin",
    "begin_distributed",
    "make_plan",
    "prefetch",
    "retry_after_seconds",
]
