"""One request's life on the wire, for the recording engine: its turn (the pace, the server's pauses, the
cost cap), its attempts within the request's deadline, its retries within the retry budget, and the rules
every wire shares (a redirect shown, never followed; an unknown model, a wait beyond the budget and a
server that answers nothing stop the recording at once). The lines it gives up with: give_up.py."""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Callable
from typing import Any

import httpx

from ..errors import MeasurementError
from ..models.base import ModelAdapter, ServerError, WireResponse, names_unknown_model, redirect_message, served_models
from ..store.cassette import EXTENSION_KEY, INTERACTION_KEY
from . import give_up
from .body import BodyRefused
from .breaker import CONNECTION, DEADLINE, Breaker
from .jobs import Stats, Unit
from .plan import CostMeter, dollars, reported_input_tokens
from .policy import NEVER_UP_ATTEMPTS, RETRY_STATUSES, SLOW_DOWN_STATUSES, Limits, backoff
from .proxies import route_for
from .transport import make_client, to_vcr_request
from .waits import Wait, requested_wait

# Seconds the model list may take when an unknown model stops the recording (the stop waits for it).
SERVED_LIST_TIMEOUT = 10.0
Outcome = tuple[tuple[WireResponse, Any] | None, BaseException | None, Wait | None]


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


class Exchange:
    """Sends the engine's requests (from its event loop's thread only): `send` one unit, retrying what is worth
    retrying; `stop(reason, everything)` and `stopped()` are the engine's, which the cost cap, the breaker and
    a fatal error share."""

    def __init__(
        self,
        adapter: ModelAdapter,
        limits: Limits,
        stats: Stats,
        cost: CostMeter,
        stop: Callable[..., None],
        stopped: Callable[[], str | None],
    ):
        # Each request carries its rendering's cassette, which replays it or lets it through (transport.py).
        self.client = make_client(limits, route_for(adapter.base_url, os.environ))
        self.adapter, self.limits = adapter, limits
        self.stats, self.cost = stats, cost
        self.stop, self.stopped = stop, stopped
        self.pacer = Pacer(limits.rate)
        self.breaker = Breaker(limits.stall, limits.timeout)
        self._rng = random.Random(0)
        self._served: asyncio.Future[tuple[list[str] | None, str | None]] | None = None

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
            answer, failure, wait = await self._attempt(unit, first if attempt == 1 else build())
            if answer is not None:
                return answer
            assert failure is not None
            delay = self._delay(failure, wait, attempt, started)
            # A server that refuses every connection before answering anything is not up: say so after a few
            # quick tries instead of spending the whole retry budget.
            never_up = (
                isinstance(failure, httpx.ConnectError) and self.stats.sent_ok == 0 and attempt >= NEVER_UP_ATTEMPTS
            )
            over_budget = time.monotonic() + delay > started + self.limits.retry_budget
            if never_up or attempt >= self.limits.max_attempts or over_budget:
                raise give_up.gave_up(request.url, failure, attempt, time.monotonic() - started, self.limits)
            self.stats.retries += 1
            await asyncio.sleep(delay)

    def _delay(self, failure: BaseException, wait: Wait | None, attempt: int, started: float) -> float:
        """How long before the next attempt: the server's requested wait (shared by every request when it is an
        overload signal), else the backoff. A requested wait beyond what the budget allows stops the recording."""
        if wait is not None:
            budget_left = started + self.limits.retry_budget - time.monotonic()
            refused = give_up.wait_too_long(wait, self.limits, budget_left)
            if refused:
                self.stop(refused, everything=True)
                raise MeasurementError(refused, fatal=True)
        status = failure.status if isinstance(failure, ServerError) else None
        if status in SLOW_DOWN_STATUSES:
            pause = wait.seconds if wait is not None else self.limits.backoff_initial
            self.pacer.hold(pause)
            self.breaker.paused(pause, wait.asked if wait is not None else f"HTTP {status}")
        return wait.seconds if wait is not None else backoff(attempt, self.limits, self._rng)

    async def _attempt(self, unit: Unit, http_request: httpx.Request) -> Outcome:
        """One send, within the request's deadline: the answer with the interaction to record, or the failure
        worth retrying and the wait the server asked for. Raises MeasurementError for what no retry would mend."""
        projected = self.cost.projected(unit.tokens)
        self.cost.in_flight += projected
        if self.stats.first_send is None:
            self.stats.first_send = time.monotonic()
        self.breaker.sent()
        try:
            async with asyncio.timeout(self.limits.timeout):  # the whole exchange, not each read
                response = await self.client.send(http_request)
        except asyncio.CancelledError:
            self.breaker.in_flight -= 1
            raise
        except Exception as exc:
            self.cost.in_flight -= projected
            return None, self._failed(unit, exc), None
        wire = WireResponse(response.status_code, dict(response.headers), response.content)
        if wire.ok:
            self.cost.answered(unit.tokens, projected, reported_input_tokens(wire))
            self.stats.sent_ok += 1
            self.stats.last_answer = time.monotonic()
            self.breaker.answered()
            return (wire, response.extensions.get(INTERACTION_KEY)), None, None
        self.cost.in_flight -= projected  # assumed unbilled: the server did not answer
        error = await self._refusal(unit, wire)
        self.breaker.failed(f"HTTP {wire.status}")
        return None, error, requested_wait(wire.headers)

    def _failed(self, unit: Unit, exc: BaseException) -> BaseException:
        """The failure of an attempt that got no answer, counted by the breaker; raised when no retry can mend it."""
        if isinstance(exc, TimeoutError):  # asyncio.timeout: the deadline passed mid-exchange
            self.breaker.failed(DEADLINE)
            return give_up.DeadlineExceeded(f"no complete answer within {self.limits.timeout:g} s")
        if isinstance(exc, BodyRefused):  # an answer came: too large, or unreadable
            self.breaker.answered()
            raise MeasurementError(f"server error: {exc}") from None
        if isinstance(exc, (httpx.UnsupportedProtocol, httpx.LocalProtocolError)):
            self.breaker.failed(CONNECTION)
            raise MeasurementError(f"cannot send to {unit.request.url}: {exc}", fatal=True) from None
        if isinstance(exc, httpx.TransportError):
            self.breaker.failed(DEADLINE if isinstance(exc, httpx.TimeoutException) else CONNECTION)
            return exc
        self.breaker.answered()  # a bug, not the server's: the engine shows it on the item
        raise exc

    async def _refusal(self, unit: Unit, wire: WireResponse) -> ServerError:
        """A non-2xx answer: the retryable error, or MeasurementError for what no retry would mend (fatal for a
        redirect, an unknown model, or what the adapter says repeats on every request)."""
        redirect = redirect_message(wire, unit.request.url)
        if redirect is not None:
            self.breaker.answered()
            raise MeasurementError(f"server error: {redirect}", fatal=True)
        error = self.adapter.error(wire)
        if names_unknown_model(wire, self.adapter.sent_model, error.message):
            self.breaker.answered()
            served, listing = await self.served_models()
            adapter = self.adapter
            raise give_up.unknown_model(str(error), adapter.sent_model, served, listing, adapter.model_id_source)
        if wire.status not in RETRY_STATUSES or not error.retryable or error.fatal:
            self.breaker.answered()
            raise MeasurementError(f"server error: {error}", fatal=error.fatal)
        return error

    async def served_models(self) -> tuple[list[str] | None, str | None]:
        """The models the server lists (GET, nothing billable; None when it lists none), and the list's URL. Asked
        once, however many requests meet the unknown model at the same time."""
        if self._served is None:
            self._served = asyncio.ensure_future(self._ask_served())
        return await asyncio.shield(self._served)

    async def _ask_served(self) -> tuple[list[str] | None, str | None]:
        url = self.adapter.models_url()
        if url is None:
            return None, None
        headers = {k: v for k, v in self.adapter.json_headers().items() if k.lower() != "content-type"}
        try:
            async with asyncio.timeout(min(self.limits.timeout, SERVED_LIST_TIMEOUT)):
                response = await self.client.get(url, headers=headers)
        except Exception:  # noqa: BLE001 - the list is a courtesy: the stop stands without it
            return None, url
        return (served_models(response.content) if 200 <= response.status_code < 300 else None), url
