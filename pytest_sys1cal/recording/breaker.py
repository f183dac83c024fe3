"""The recording's circuit breaker, and its account of what the server is doing for the progress line.

Every attempt is counted as it goes out and as it ends: answered (a 2xx, or an answer no retry would change,
such as a 400), or failed in a way that is retried (cut at the deadline, no connection, a 429/5xx). The clock
of a stall starts with the first attempt sent after the last answer; when it reaches the stall limit
(--sys1cal-stall-limit, by default two deadlines) with nothing answered, the breaker trips and the recording
stops at once, in one line that says what the attempts met and what to check, rather than spend its retry
budget on every one of 3,650 requests (docs/recording.md, "When the server stalls")."""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable

from .jobs import Stats
from .plan import duration
from .waits import seconds_text

# The kinds of failed attempt, as the lines name them.
DEADLINE = "deadline"
CONNECTION = "connection"


class Breaker:
    """Counts of attempts in flight and failed since the last answer; `tripped` once the stall limit passed.
    Used from the event loop's thread only (the progress line reads it from the main thread: plain ints)."""

    def __init__(self, stall_limit: float, deadline: float):
        self.stall_limit = stall_limit
        self.deadline = deadline
        self.in_flight = 0
        self.stall_started: float | None = None  # the first attempt sent since the last answer
        self.failed_since = collections.Counter[str]()  # failed attempts since the last answer, by kind
        self.retried = 0
        self.paused_until = 0.0  # a pause the server asked for, shared by every request
        self.pause_asked = ""

    def sent(self, now: float | None = None) -> None:
        self.in_flight += 1
        if self.stall_started is None:
            self.stall_started = time.monotonic() if now is None else now

    def answered(self, now: float | None = None) -> None:
        """The server answered (whatever it said): the stall clock restarts with what is still out."""
        self.in_flight -= 1
        self.failed_since.clear()
        self.stall_started = (time.monotonic() if now is None else now) if self.in_flight else None

    def failed(self, kind: str) -> None:
        """An attempt that met `kind`: DEADLINE, CONNECTION, or ``HTTP <status>``."""
        self.in_flight -= 1
        self.failed_since[kind] += 1

    def paused(self, seconds: float, asked: str) -> None:
        self.paused_until = max(self.paused_until, time.monotonic() + seconds)
        self.pause_asked = asked

    def stalled_for(self, now: float | None = None) -> float:
        if self.stall_started is None:
            return 0.0
        return (time.monotonic() if now is None else now) - self.stall_started

    def tripped(self, now: float | None = None) -> bool:
        return self.stall_started is not None and self.stalled_for(now) >= self.stall_limit

    async def watch(self, stopped: Callable[[], str | None], stop: Callable[[str], None], url: str) -> None:
        """The breaker's clock, as a task of the engine: it trips between attempts too (a server that holds every
        request open past the stall limit, under a deadline longer still), calling `stop` with the reason."""
        period = min(1.0, self.stall_limit / 8)
        while not stopped():
            await asyncio.sleep(period)
            if self.tripped():
                stop(self.reason(url))

    def met(self) -> str:
        """What the attempts since the last answer met: ``8 cut at the 60 s deadline, 8 still waiting``."""
        parts = []
        for kind, count in self.failed_since.most_common():
            if kind == DEADLINE:
                parts.append(f"{count} cut at the {self.deadline:g} s deadline")
            elif kind == CONNECTION:
                parts.append(f"{count} found no connection")
            else:
                parts.append(f"{count} answered {kind}")
        if self.in_flight:
            parts.append(f"{self.in_flight} still waiting")
        return ", ".join(parts) or "none sent"

    def reason(self, url: str) -> str:
        """The one line of a tripped breaker."""
        return (
            f"the server at {url} has answered no request successfully for {seconds_text(self.stall_limit)} ({self.met()}): "
            "the recording stopped rather than retry every request; check that the server is up and answering "
            "(--sys1cal-base-url, its logs), or raise --sys1cal-stall-limit (and --sys1cal-timeout) if it is only slow"
        )

    def state(self, now: float | None = None) -> str | None:
        """What the progress line adds while something is wrong (None while answers come)."""
        now = time.monotonic() if now is None else now
        parts = []
        if self.paused_until > now:
            parts.append(f"paused {self.paused_until - now:.0f} s more, as the server asked ({self.pause_asked})")
        stalled = self.stalled_for(now)
        if self.failed_since or (self.in_flight and stalled >= min(self.deadline, 10.0)):
            parts.append(
                f"nothing answered for {stalled:.0f} s ({self.met()}; the recording stops at "
                f"{self.stall_limit:g} s, --sys1cal-stall-limit)"
            )
        return "; ".join(parts) or None


def progress_line(stats: Stats, breaker: Breaker, total: int, now: float) -> str:
    """``sys1cal: recorded 12/24 requests, 3.1 requests/s, about 4 s left``, and what is wrong when something is:
    the server's pause, what the attempts since the last answer met, the stall limit."""
    rate = stats.sent_ok / max(now - (stats.first_send or now), 1e-9)
    line = f"sys1cal: recorded {stats.sent_ok:,}/{total:,} requests, {rate:.1f} requests/s"
    if rate > 0:
        line += f", about {duration((total - stats.sent_ok) / rate)} left"
    if stats.retries:
        line += f", {stats.retries} retried"
    state = breaker.state(now)
    if state:
        line += f"; {state}"
    elif rate <= 0:
        line += ", waiting for the first answer"
    return line
