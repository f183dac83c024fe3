"""The lines that say why the recording gave a request up, or stopped altogether: each names what happened,
the limit it met (with the option that sets it) and what to check. The exchange (exchange.py) decides; this
module words it, so the same case reads the same on every wire."""

from __future__ import annotations

import httpx

from ..errors import MeasurementError
from .policy import Limits
from .waits import Wait, seconds_text


class DeadlineExceeded(MeasurementError):
    """An attempt cut at the request's deadline (connect, send and the whole body within --sys1cal-timeout)."""


def gave_up(url: str, failure: BaseException, attempts: int, elapsed: float, limits: Limits) -> MeasurementError:
    """The error of a request whose retries are spent (its item fails; a server that never came up stops all)."""
    tried = f"{attempts} attempt{'s' if attempts != 1 else ''} in {elapsed:.1f} s"
    if isinstance(failure, httpx.ConnectError):
        # Nothing answers at that address: every other item would fail the same way.
        return MeasurementError(
            f"cannot connect to {url}: {failure} ({tried}; is the server up? check --sys1cal-base-url)", fatal=True
        )
    if isinstance(failure, (DeadlineExceeded, httpx.TimeoutException)):
        return MeasurementError(
            f"server error: no complete answer from {url} within {limits.timeout:g} s, the deadline of one request "
            f"(connect, send and every byte of the answer) ({tried}; raise --sys1cal-timeout if the server is slow)"
        )
    if isinstance(failure, httpx.TransportError):
        return MeasurementError(f"server error: no response from {url}: {type(failure).__name__}: {failure} ({tried})")
    return MeasurementError(f"server error: {failure} ({tried})")


def wait_too_long(wait: Wait, limits: Limits, budget_left: float) -> str | None:
    """Why the server's requested wait cannot be honoured (None when it can): it outlasts what is left of the
    request's retry budget, or the stall limit after which the whole recording would stop anyway."""
    if wait.seconds <= min(budget_left, limits.stall):
        return None
    if budget_left <= limits.stall:
        if limits.retry_budget == 0:
            allowed = "the retry budget allows (--sys1cal-retry-budget 0: no retries)"
        else:
            allowed = (
                f"the retry budget allows ({seconds_text(max(budget_left, 0.0))} left of --sys1cal-retry-budget "
                f"{limits.retry_budget:g} s)"
            )
        raise_it = "--sys1cal-retry-budget"
    else:
        allowed = f"the stall limit allows ({seconds_text(limits.stall)}, --sys1cal-stall-limit)"
        raise_it = "--sys1cal-stall-limit and --sys1cal-retry-budget"
    return (
        f"the server asked to wait {seconds_text(wait.seconds)} ({wait.asked}) before the next request, more than "
        f"{allowed}: the recording stopped rather than pause every request; try again later, or raise {raise_it} "
        "to wait it out"
    )


def unknown_model(
    error: str, model: str, served: list[str] | None, listing: str | None, source: str = "--sys1cal-model-version"
) -> MeasurementError:
    """The fatal error of a server that does not serve the model sent (`source`: the option it was sent from),
    with the models it lists."""
    if served:
        shown = ", ".join(served[:20]) + (f", … ({len(served)} in all)" if len(served) > 20 else "")
        said = (
            f"it serves: {shown} (GET {listing}); send one of them with --sys1cal-model-id (the version still names "
            "the cassette folder)"
        )
    elif served is not None:
        said = f"its list (GET {listing}) is empty"
    else:
        said = "it does not list the models it serves; check the name with the server's documentation"
    return MeasurementError(
        f"server error: {error} (the server does not serve the model {model!r}, sent from {source}; "
        f"{said}). Stopped at the first such answer: every request names the same model",
        fatal=True,
    )
