"""One request's life on the wire, for the recording engine: its turn (the pace, the server's pauses, the
cost cap), its attempts and retries, and the error that says why it was given up."""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from ..dataset import Rendering
from ..errors import MeasurementError
from ..models.base import ModelAdapter, WireRequest, WireResponse
from ..results import ResultRow
from ..store.cassette import EXTENSION_KEY, INTERACTION_KEY
from ..store.vcrpy_side import save_cassette
from .plan import CostMeter, dollars, estimate_tokens, reported_input_tokens
from .policy import NEVER_UP_ATTEMPTS, RETRY_STATUSES, SLOW_DOWN_STATUSES, Limits, backoff, retry_after_seconds
from .transport import AsyncCassetteTransport, to_vcr_request

if TYPE_CHECKING:
    from vcr.cassette import Cassette


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
class Job:
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

    def units(self, repeats: list[list[WireRequest]]) -> list[Unit]:
        """The job's requests (per repeat, in order) as units to send; its bookkeeping set up for them."""
        self.responses = [[None] * len(requests) for requests in repeats]
        self.interactions = [[None] * len(requests) for requests in repeats]
        self.samples = [None] * len(repeats)
        self.missing = [len(requests) for requests in repeats]
        self.remaining = self.unsent = sum(self.missing)
        return [
            Unit(self, repeat, index, request, estimate_tokens(request))
            for repeat, requests in enumerate(repeats)
            for index, request in enumerate(requests)
        ]

    def save(self) -> bool:
        """Every repeat answered: append the new interactions in repeat order (replay serves repeats in cassette
        order, so the recording run and a later replay report the same samples in the same order) and save
        the cassette atomically. Whether anything new was recorded; OSError when it cannot be saved."""
        assert self.cassette is not None
        for repeat in self.interactions:
            for kept in repeat:
                if kept is not None:
                    self.cassette.append(*kept)
        recorded = bool(self.cassette.dirty)
        save_cassette(self.cassette)
        return recorded


@dataclass
class Unit:
    job: Job
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


class Exchange:
    """Sends the engine's requests (from its event loop's thread only): `send` one unit, retrying what is worth
    retrying; `stop(reason)` and `stopped()` are the engine's, which the cost cap and a fatal error share."""

    def __init__(
        self,
        adapter: ModelAdapter,
        limits: Limits,
        stats: Stats,
        cost: CostMeter,
        stop: Callable[[str], None],
        stopped: Callable[[], str | None],
    ):
        n = limits.concurrency
        pool = httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=n, max_keepalive_connections=n))
        # Each request carries its rendering's cassette, which replays it or lets it through (transport.py).
        self.client = httpx.AsyncClient(transport=AsyncCassetteTransport(pool), timeout=limits.timeout)
        self.adapter, self.limits = adapter, limits
        self.stats, self.cost = stats, cost
        self.stop, self.stopped = stop, stopped
        self.pacer = Pacer(limits.rate)
        self._rng = random.Random(0)

    async def turn(self, unit: Unit) -> None:
        """Wait for this request's turn (rate, server pauses); refuse when stopped or over the cost cap."""
        while True:
            if self.stopped():
                raise MeasurementError(f"not recorded: {self.stopped()}", fatal=True)
            await self.pacer.turn()
            if self.stopped():
                raise MeasurementError(f"not recorded: {self.stopped()}", fatal=True)
            if self.cost.allows(unit.tokens):
                return
            cap = self.limits.max_cost
            self.stop(
                f"--sys1cal-max-cost ${cap:g} reached: ${self.cost.dollars():.4f} spent and "
                f"${dollars(self.cost.in_flight, self.limits.price):.4f} in flight; the next request would exceed it"
            )

    async def send(self, unit: Unit) -> tuple[WireResponse, Any]:
        """Send one request (or replay it, new_episodes), retrying what is worth retrying; with the
        answer, the interaction to record (None for a replayed one)."""
        job, request = unit.job, unit.request
        client = self.client
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
            await self.turn(unit)
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
        self, unit: Unit, http_request: httpx.Request
    ) -> tuple[tuple[WireResponse, Any] | None, BaseException | None, float | None]:
        """One send: the answer with the interaction to record, or the failure worth retrying and the wait
        the server asked for. Raises MeasurementError for what no retry would mend."""
        projected = self.cost.projected(unit.tokens)
        self.cost.in_flight += projected
        if self.stats.first_send is None:
            self.stats.first_send = time.monotonic()
        try:
            response = await self.client.send(http_request)
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
        error = self.adapter.error(wire)
        if wire.status not in RETRY_STATUSES or not error.retryable or error.fatal:
            raise MeasurementError(f"server error: {error}", fatal=error.fatal)
        retry_after = retry_after_seconds(wire.headers)
        if wire.status in SLOW_DOWN_STATUSES:
            self.pacer.hold(retry_after if retry_after is not None else self.limits.backoff_initial)
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
