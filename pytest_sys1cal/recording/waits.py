"""What wait a server asks for before the next request, read from its headers in every form seen in the wild:
``retry-after-ms`` (milliseconds), ``Retry-After`` (seconds or an HTTP date), and, when neither is there, the
rate-limit reset headers (``x-ratelimit-reset-requests: 6m0s``, ``x-ratelimit-reset-tokens: 20ms``,
``x-ratelimit-reset: <seconds or epoch>``, ``anthropic-ratelimit-requests-reset: <date>``). The recording
honours the wait only while it fits the request's retry budget (exchange.py); a longer one stops it, and the
message quotes the header that asked, so the user sees exactly what the server said."""

from __future__ import annotations

import contextlib
import datetime as _dt
import email.utils
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

# A Go-style duration, as OpenAI-compatible servers send their resets: "1s", "6m0s", "59.5ms", "1h2m3.5s".
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)")
_DURATION_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
# A plain number above this is a Unix time (GitHub's x-ratelimit-reset), not a number of seconds.
_EPOCH_FLOOR = 1e9


@dataclass(frozen=True)
class Wait:
    """A requested wait: `seconds` from now, and the header that asked (``Retry-After: 3600``)."""

    seconds: float
    asked: str


def requested_wait(headers: Mapping[str, str], now: _dt.datetime | None = None) -> Wait | None:
    """The server's requested wait; None when it asks for none (or says nothing readable)."""
    lowered = {name.lower(): (name, str(value).strip()) for name, value in headers.items()}
    if "retry-after-ms" in lowered:
        name, text = lowered["retry-after-ms"]
        with contextlib.suppress(ValueError):
            milliseconds = float(text)
            if math.isfinite(milliseconds):
                return Wait(max(0.0, milliseconds / 1000), f"{name}: {text}")
    if "retry-after" in lowered:
        _, text = lowered["retry-after"]
        seconds = _seconds(text, now, epoch=False)
        if seconds is not None:
            return Wait(seconds, f"Retry-After: {text}")  # as RFC 9110 spells it (httpx lower-cases names)
    return _reset_wait(lowered, now)


def _reset_wait(lowered: Mapping[str, tuple[str, str]], now: _dt.datetime | None) -> Wait | None:
    """The longest reset among the exhausted limits: a reset whose limit still has requests left (its
    ``…-remaining-…`` header above 0) is not why the server refused, so it is not waited for."""
    longest: Wait | None = None
    for key, (name, text) in lowered.items():
        if "ratelimit" not in key or "reset" not in key:
            continue
        remaining = lowered.get(key.replace("reset", "remaining"))
        if remaining is not None and remaining[1] not in ("0", "0.0"):
            continue
        seconds = _seconds(text, now, epoch=True, milliseconds=key.endswith("-ms"))
        if seconds is not None and (longest is None or seconds > longest.seconds):
            longest = Wait(seconds, f"{name}: {text}")
    return longest


def _seconds(text: str, now: _dt.datetime | None, *, epoch: bool, milliseconds: bool = False) -> float | None:
    """Seconds from now that `text` names: a number (of seconds, or ms; with `epoch`, a Unix time when it is
    that large), a Go-style duration, or a date (HTTP or ISO 8601; a date in the past means now)."""
    try:
        number = float(text)
    except ValueError:
        number = math.nan
        seconds = _duration(text)
        if seconds is None:
            seconds = _until(text, now)
    else:
        if not math.isfinite(number):
            return None
        seconds = number / 1000 if milliseconds else number
        if epoch and not milliseconds and number > _EPOCH_FLOOR:
            seconds = number - _now(now).timestamp()
    if seconds is None or not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def _duration(text: str) -> float | None:
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(value + unit for value, unit in parts) != text:
        return None
    return sum(float(value) * _DURATION_UNITS[unit] for value, unit in parts)


def _until(text: str, now: _dt.datetime | None) -> float | None:
    when: _dt.datetime | None = None
    with contextlib.suppress(TypeError, ValueError, IndexError):
        when = email.utils.parsedate_to_datetime(text)
    if when is None:
        with contextlib.suppress(ValueError):
            when = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.UTC)
    return (when - _now(now)).total_seconds()


def _now(now: _dt.datetime | None) -> _dt.datetime:
    return now or _dt.datetime.now(_dt.UTC)


def seconds_text(seconds: float) -> str:
    """A wait as a person reads it: ``3,600 s (1.0 h)``, ``0.25 s``."""
    if seconds >= 3600:
        return f"{seconds:,.0f} s ({seconds / 3600:.1f} h)"
    if seconds >= 120:
        return f"{seconds:,.0f} s ({seconds / 60:.0f} min)"
    return f"{seconds:.3g} s"
