"""How recording treats a server: the limits of one recording (concurrency, rate, the deadline of one
request, the stall limit, the largest body, the cost cap), which answers are retried, how long to back off,
and what the server's Retry-After asks for."""

from __future__ import annotations

import datetime as _dt
import ipaddress
import random
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from .waits import requested_wait

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
# With no --sys1cal-stall-limit, the recording stops when nothing has been answered for this many deadlines:
# every request then had a full attempt and a retry, and a server that answered none of them is not coming back.
STALL_DEADLINES = 2.0
# The largest response body kept (after decompression): a Jev answer is about 1 KB and a SemIf one a few KB, so
# this is a thousand times what a sane server sends, and a cassette of 40 such bodies stays under GitHub's
# 100 MB file limit.
MAX_BODY_BYTES = 1_000_000
JEV_RATE = 1000.0  # requests per minute: the default, under Jev's published 1,200/min


@dataclass(frozen=True)
class Limits:
    """How one recording treats the server: what it may have in flight, how fast, how long, how much."""

    concurrency: int = 8
    rate: float = JEV_RATE  # requests per minute; 0 = no limit
    rate_source: str = "the default, under Jev's 1,200/min"  # said beside the rate in the plan
    timeout: float = 60.0  # seconds one request may take, whole: connect, send and every byte of the answer
    retry_budget: float = 120.0
    stall_limit: float | None = None  # None: STALL_DEADLINES × timeout
    max_body: int = MAX_BODY_BYTES
    max_cost: float | None = None
    price: float = PRICE_PER_MILLION_INPUT_TOKENS
    price_source: str = "Jev's list price; --sys1cal-price sets your server's"  # said beside the price
    backoff_initial: float = BACKOFF_INITIAL
    backoff_max: float = BACKOFF_MAX
    max_attempts: int = MAX_ATTEMPTS

    @property
    def stall(self) -> float:
        """Seconds without any answer, while requests are out, after which the recording stops."""
        return self.stall_limit if self.stall_limit is not None else STALL_DEADLINES * self.timeout


def retry_after_seconds(headers: Mapping[str, str], now: _dt.datetime | None = None) -> float | None:
    """The server's requested wait in seconds (waits.py reads every form), None when it asks for none."""
    wait = requested_wait(headers, now)
    return None if wait is None else wait.seconds


def backoff(attempt: int, limits: Limits, rng: random.Random) -> float:
    """Exponential backoff after the `attempt`-th failure (1-based), capped, with jitter taken off."""
    delay = min(limits.backoff_max, limits.backoff_initial * 2 ** (attempt - 1))
    return delay * (1 - BACKOFF_JITTER * rng.random())


def local_origin(url: str) -> str | None:
    """The host of `url` when it is this machine or a private network (localhost, a loopback, private or
    link-local address literal), else None. Names are not resolved: a private server reached by a DNS name
    keeps the default rate unless --sys1cal-rate says otherwise."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return host
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    return host if address.is_loopback or address.is_private or address.is_link_local else None
