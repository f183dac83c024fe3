"""A recording that cannot make progress stops (issues 25 and 28), on both built-in wires, against servers on
127.0.0.1 that misbehave on purpose (tests/misbehave.py): a server that never answers trips the circuit
breaker at the stall limit, in one line; a body trickled a byte at a time is cut at the request's deadline,
which covers the whole exchange; a requested wait beyond the retry budget (Retry-After in seconds or as a
date, the millisecond and rate-limit-reset variants) stops the recording at once, naming the wait and the
budget; the progress line says what is happening. Short deadlines and limits keep each run to seconds."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

# pytester's in-process runs forget modules first imported during a run; import the async HTTP stack once,
# before any run (see tests/recording/test_recording.py).
import anyio._backends._asyncio  # noqa: F401
import httpcore._backends.anyio  # noqa: F401
import pytest

from pytest_sys1cal.recording.waits import requested_wait
from pytest_sys1cal.session import recording_hooks
from tests.misbehave import ENVIRONMENT, WIRES, Misbehaving, recording, subset
from tests.runs import run

RATE_LIMITED = b'{"detail": {"error_type": "rate_limit_error", "message": "rate limited"}}'


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


# ------------------------------------------------------------------------------------------ the requested wait


def test_every_form_of_a_requested_wait_is_read_with_the_header_that_asked() -> None:
    now = dt.datetime(2026, 11, 29, 12, 0, 0, tzinfo=dt.UTC)
    cases = {
        (("Retry-After", "3600"),): (3600.0, "Retry-After: 3600"),
        (("retry-after", "Sun, 29 Nov 2026 13:00:00 GMT"),): (3600.0, "Retry-After: Sun, 29 Nov 2026 13:00:00 GMT"),
        (("retry-after-ms", "1500"), ("Retry-After", "9")): (1.5, "retry-after-ms: 1500"),  # ms wins
        (("x-ratelimit-reset-requests", "6m0s"), ("x-ratelimit-remaining-requests", "0")): (
            360.0,
            "x-ratelimit-reset-requests: 6m0s",
        ),
        (("x-ratelimit-reset-tokens", "59.5ms"),): (0.0595, "x-ratelimit-reset-tokens: 59.5ms"),
        (("x-ratelimit-reset-ms", "2500"),): (2.5, "x-ratelimit-reset-ms: 2500"),
        (("x-ratelimit-reset", str(int(now.timestamp()) + 90)),): (
            90.0,
            f"x-ratelimit-reset: {int(now.timestamp()) + 90}",
        ),
        (("anthropic-ratelimit-requests-reset", "2026-11-29T12:02:00Z"),): (
            120.0,
            "anthropic-ratelimit-requests-reset: 2026-11-29T12:02:00Z",
        ),
    }
    for headers, (seconds, asked) in cases.items():
        wait = requested_wait(dict(headers), now=now)
        assert wait is not None and (round(wait.seconds, 6), wait.asked) == (seconds, asked), headers
    # A reset of a limit that still has room is not why the server refused; a date past means now.
    assert requested_wait({"x-ratelimit-reset-requests": "1h", "x-ratelimit-remaining-requests": "12"}) is None
    assert requested_wait({"Retry-After": "Sun, 29 Nov 2026 11:00:00 GMT"}, now=now).seconds == 0.0  # type: ignore[union-attr]
    assert requested_wait({"Retry-After": "soon"}) is None and requested_wait({}) is None


# ------------------------------------------------------------------------------------------ a server that stalls


@pytest.mark.parametrize("wire", WIRES)
def test_a_server_that_never_answers_stops_the_recording_at_the_stall_limit(
    pytester: pytest.Pytester, tmp_path: Path, wire: str
) -> None:
    """It accepts every connection and answers nothing. Without the breaker each of 30 renderings would spend
    its retry budget (120 s) in turn; with it the run stops at the stall limit, in one line."""
    dataset, _ = subset(tmp_path, 30)
    with Misbehaving([], default=("hang",), wire=wire) as server:
        started = time.monotonic()
        result = run(
            pytester,
            *recording(wire, server.url, dataset, tmp_path / "c", "--sys1cal-timeout=0.5", "--sys1cal-stall-limit=1.5"),
        )
        elapsed = time.monotonic() - started
        sent = server.requests
    result.assert_outcomes(failed=1)
    line = (
        f"*the server at {server.url} has answered no request successfully for 1.5 s (* cut at the 0.5 s deadline*): the "
        "recording stopped rather than retry every request; check that the server is up and answering*"
    )
    result.stdout.fnmatch_lines([f"*__parallel_primitives: not recorded: {line}", f"*Interrupted: sys1cal: *{line}"])
    assert elapsed < 30, elapsed  # not 30 renderings × the retry budget
    assert sent <= 8 * 3, sent  # the first attempts and their retries, not 30 renderings' worth
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").rglob("*/*.json"))


@pytest.mark.parametrize("wire", WIRES)
def test_a_trickled_answer_is_cut_at_the_deadline_of_the_whole_exchange(
    pytester: pytest.Pytester, tmp_path: Path, wire: str
) -> None:
    """One byte every 50 ms: each read returns in time, so a per-read timeout never fires; the request's
    deadline (connect, send, every byte) does, after 1 s. The other renderings record."""
    dataset, _ = subset(tmp_path, 3)
    with Misbehaving([], script=[("trickle", 0.05)], wire=wire) as server:
        started = time.monotonic()
        result = run(pytester, *recording(wire, server.url, dataset, tmp_path / "c", "--sys1cal-timeout=1", "--sys1cal-retry-budget=0",
                       "--sys1cal-concurrency=1"))  # fmt: skip
        elapsed = time.monotonic() - started
        cut = server.wait_for_cut()
    result.assert_outcomes(failed=1, passed=2)
    result.stdout.fnmatch_lines(
        ["*server error: no complete answer from http://127.0.0.1:*/v1/* within 1 s, the deadline of one request "
         "(connect, send and every byte of the answer) (1 attempt in *; raise --sys1cal-timeout if the server is slow)*"]
    )  # fmt: skip
    assert cut == 1 and elapsed < 30, (cut, elapsed)  # the answer would have taken about a minute


def test_the_progress_line_says_what_the_attempts_meet(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(recording_hooks, "PROGRESS_EVERY", 0.2)
    dataset, _ = subset(tmp_path, 4)
    with Misbehaving([], default=("hang",)) as server:
        result = run(pytester, *recording("systemone", server.url, dataset, tmp_path / "c", "--sys1cal-timeout=0.4",
                       "--sys1cal-stall-limit=2", "--sys1cal-concurrency=2"))  # fmt: skip
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["sys1cal: recorded 0/4 requests, 0.0 requests/s, * retried; nothing answered for * s (* cut at the 0.4 s "
         "deadline*; the recording stops at 2 s, --sys1cal-stall-limit)"]
    )  # fmt: skip
    assert "waiting for the server" not in result.stdout.str()


def test_the_progress_line_says_when_the_server_asked_for_a_pause(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(recording_hooks, "PROGRESS_EVERY", 0.2)
    dataset, _ = subset(tmp_path, 4)
    script = [("status", 429, {"Retry-After": "1"}, RATE_LIMITED)]
    with Misbehaving([], script=script) as server:
        result = run(pytester, *recording("systemone", server.url, dataset, tmp_path / "c", "--sys1cal-concurrency=1"))
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        ["sys1cal: recorded 0/4 requests, * requests/s*; paused * s more, as the server asked (Retry-After: 1)*"]
    )


# ------------------------------------------------------------------------------------------ back-off inside the budget


@pytest.mark.parametrize("wire", WIRES)
def test_a_one_hour_retry_after_ends_the_recording_at_once_saying_why(
    pytester: pytest.Pytester, tmp_path: Path, wire: str
) -> None:
    """Every request answered 429 with Retry-After: 3600, at the default settings: the recording ends within a
    minute (here in seconds), naming the wait and the budget, instead of pausing every request for an hour."""
    dataset, _ = subset(tmp_path, 24)
    with Misbehaving([], default=("status", 429, {"Retry-After": "3600"}, RATE_LIMITED), wire=wire) as server:
        started = time.monotonic()
        result = run(pytester, *recording(wire, server.url, dataset, tmp_path / "c"))
        elapsed = time.monotonic() - started
        sent = server.requests
    result.assert_outcomes(failed=1)
    line = (
        "*the server asked to wait 3,600 s (1.0 h) (Retry-After: 3600) before the next request, more than the retry "
        "budget allows (* s left of --sys1cal-retry-budget 120 s): the recording stopped rather than pause every "
        "request; try again later, or raise --sys1cal-retry-budget to wait it out*"
    )
    result.stdout.fnmatch_lines([f"*__parallel_primitives: not recorded: {line}", f"*Interrupted: sys1cal: *{line}"])
    assert elapsed < 60 and sent <= 8, (elapsed, sent)


def test_on_the_jev_wire_a_retry_after_of_100000_says_the_wait_exceeded_the_budget(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test-key-for-the-jev-wire")
    dataset, _ = subset(tmp_path, 6)
    with Misbehaving([], default=("status", 429, {"Retry-After": "100000"}, RATE_LIMITED)) as server:
        result = run(
            pytester, *recording("jev", server.url, dataset, tmp_path / "c", "--sys1cal-model-version=jev-1.14.0")
        )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*Interrupted: sys1cal: *the server asked to wait 100,000 s (27.8 h) (Retry-After: 100000) before the next "
         "request, more than the retry budget allows*"]
    )  # fmt: skip


@pytest.mark.parametrize("wire", WIRES)
def test_a_rate_limit_reset_beyond_the_budget_stops_the_recording_naming_the_header(
    pytester: pytest.Pytester, tmp_path: Path, wire: str
) -> None:
    """The OpenAI-style reset headers, no Retry-After; and a small budget: the shared pause never outlasts it."""
    dataset, _ = subset(tmp_path, 6)
    headers = {"x-ratelimit-reset-tokens": "20s", "x-ratelimit-remaining-tokens": "0"}
    with Misbehaving([], default=("status", 429, headers, RATE_LIMITED), wire=wire) as server:
        started = time.monotonic()
        result = run(pytester, *recording(wire, server.url, dataset, tmp_path / "c", "--sys1cal-retry-budget=5"))
        elapsed = time.monotonic() - started
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*Interrupted: sys1cal: *the server asked to wait 20 s (x-ratelimit-reset-tokens: 20s) before the next "
         "request, more than the retry budget allows (* s left of --sys1cal-retry-budget 5 s)*"]
    )  # fmt: skip
    assert elapsed < 20, elapsed


def test_a_wait_within_the_budget_is_honoured_and_shared(pytester: pytest.Pytester, tmp_path: Path) -> None:
    dataset, _ = subset(tmp_path, 6)
    script = [("status", 429, {"retry-after-ms": "600"}, RATE_LIMITED)]
    with Misbehaving([], script=script) as server:
        started = time.monotonic()
        result = run(pytester, *recording("systemone", server.url, dataset, tmp_path / "c"))
        elapsed = time.monotonic() - started
        sent = server.requests
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*sys1cal: recorded 6 requests in *, 1 retried;*"])
    assert sent == 7 and elapsed >= 0.6, (sent, elapsed)
