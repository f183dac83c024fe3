"""How recording treats a server: the limits of one recording (concurrency, rate, timeouts, cost cap),
which answers are retried, how long to back off, and what the server's Retry-After asks for."""

from __future__ import annotations

import contextlib
import datetime as _dt
import email.utils
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass

PRICE_PER_MILLION_INPUT_TOKENS = 0.042  # Jev, USD; output tokens are free
# Statuses worth another try (the SDK's list: 408, 429 and every 5xx, which includes 529 "overloaded").
RETRY_STATUSES = frozenset({408, 429, *range(500, 600)})
# Overload signals that slow every request down, not only the one that got them.
SLOW_DOWN_STATUSES = frozenset({429, 503, 529})
BACKOFF_INITIAL = 0.5
BACKOFF_MAX = 30.0
BACKOFF_JITTER = 0.25  # a random fraction up to this is taken off each backoff delay
MAX_ATTEMPTS = 10
NEVER_UP_ATTEMPTS = 3  # connection refused this often, with no answer yet in this run: the server is down


@dataclass(frozen=True)
class Limits:
    """How one recording treats the server: what it may have in flight, how fast, how long, how much."""

    concurrency: int = 8
    rate: float = 1000.0  # requests per minute; 0 = no limit
    timeout: float = 60.0
    retry_budget: float = 120.0
    max_cost: float | None = None
    price: float = PRICE_PER_MILLION_INPUT_TOKENS
    price_source: str = "Jev's list price; --sys1cal-price sets your server's"  # said beside the price
    backoff_initial: float = BACKOFF_INITIAL
    backoff_max: float = BACKOFF_MAX
    max_attempts: int = MAX_ATTEMPTS


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


def backoff(attempt: int, limits: Limits, rng: random.Random) -> float:
    """Exponential backoff after the `attempt`-th failure (1-based), capped, with jitter taken off."""
    delay = min(limits.backoff_max, limits.backoff_initial * 2 ** (attempt - 1))
    return delay * (1 - BACKOFF_JITTER * rng.random())
