"""Concurrent recording (recording/) against real servers on 127.0.0.1, through real pytest runs:
concurrency and rate honoured, retryable faults ending in complete cassettes, non-retryable ones in
clear item errors, one fatal error for auth and refused connections, the cost cap, a killed recording
resumed to the same bytes, and xdist workers recording only their own items."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# pytester's in-process runs forget modules first imported during a run, but httpx keeps its table of
# httpcore exception classes from the first use: a run that re-imports httpcore raises classes httpx no
# longer translates (a raw httpcore.ReadTimeout instead of httpx.ReadTimeout). Import the async HTTP
# stack once, before any run.
import anyio._backends._asyncio  # noqa: F401
import httpcore._backends.anyio  # noqa: F401
import pytest
from jevcompat.mock import MockConfig

from pytest_sys1cal.dataset import Rendering, load_dataset
from pytest_sys1cal.recording.policy import Limits, backoff, retry_after_seconds
from pytest_sys1cal.session import recording_hooks
from tests.loopback import Behaviour, Handler, LoopbackServer, Serving, jevcompat_mock
from tests.runs import QUIET, sys1cal

RENDERINGS = load_dataset("sys1cal-v1").renderings
_REAL_CONNECT = socket.socket.connect, socket.socket.connect_ex


@pytest.fixture(autouse=True)
def _sockets_can_connect() -> None:
    """These tests talk to real servers. An in-process run elsewhere in the suite that patched
    `socket.socket.connect` to prove replay opens no socket (and did not undo it) must not leak here."""
    socket.socket.connect, socket.socket.connect_ex = _REAL_CONNECT


# ------------------------------------------------------------------------------------------ helpers


def subset(path: Path, count: int) -> tuple[Path, list[Rendering]]:
    """The first `count` renderings (in item order) as a dataset file of their own."""
    chosen = list(RENDERINGS[:count])
    source = load_dataset("sys1cal-v1").path.read_text(encoding="utf-8").splitlines()
    path.write_text("".join(source[r.line - 1] + "\n" for r in chosen), encoding="utf-8")
    return path, chosen


Action = tuple[Any, ...]


class FaultServer(Serving):
    """A `/v1/systemone` server on 127.0.0.1 answering like tests/loopback.py (deterministic: no noise),
    serving scripted faults first, one per request in arrival order:

    ("status", code, headers, body)  an error or odd response instead of the answer
    ("sleep", seconds)               answer, but only after `seconds` (longer than the client's timeout)
    ("reset",)                       drop the connection with a TCP reset, no response
    ("mutate", function)             the real answer passed through `function` (malformed answers)

    It counts requests, tracks requests in flight and the arrival times, can report a fixed
    `usage.input_tokens`, and can gzip its answers."""

    def __init__(
        self,
        renderings: Any,
        *,
        delay: float = 0.0,
        script: list[Action] | None = None,
        usage: int | None = None,
        gzip_answers: bool = False,
    ):
        self.model = LoopbackServer.for_renderings(renderings, Behaviour(bias=0.4))
        self.model.server.server_close()  # only its answer() is used
        self.delay, self.script, self.usage, self.gzip = delay, list(script or []), usage, gzip_answers
        self.requests = self.in_flight = self.max_seen_in_flight = 0
        self.arrivals: list[float] = []
        self.lock = threading.Lock()
        server = self.serve(type("Handler", (_FaultHandler,), {"owner": self}))
        server.handle_error = lambda request, address: None  # clients that timed out and left


class _FaultHandler(Handler):
    owner: FaultServer

    def do_POST(self) -> None:  # noqa: N802
        owner = self.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with owner.lock:
            owner.requests += 1
            owner.arrivals.append(time.monotonic())
            owner.in_flight += 1
            owner.max_seen_in_flight = max(owner.max_seen_in_flight, owner.in_flight)
            action = owner.script.pop(0) if owner.script else None
        try:
            if action and action[0] == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                return
            time.sleep(owner.delay + (action[1] if action and action[0] == "sleep" else 0))
            headers: dict[str, str] = {"Content-Type": "application/json"}
            if action and action[0] == "status":
                _, status, extra, payload = action
                headers.update(extra)
            else:
                status, answer = 200, owner.model.answer(json.loads(raw))
                if owner.usage is not None:
                    answer["usage"]["input_tokens"] = owner.usage
                if action and action[0] == "mutate":
                    answer = action[1](answer)
                payload = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                if owner.gzip:
                    payload = gzip.compress(payload)
                    headers["Content-Encoding"] = "gzip"
        finally:
            with owner.lock:
                owner.in_flight -= 1
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def record(
    pytester: pytest.Pytester, url: str, dataset: Path, root: Path, *args: str, mode: str = "once"
) -> pytest.RunResult:
    return sys1cal(pytester, "--sys1cal-model=systemone", f"--sys1cal-base-url={url}", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}", f"--sys1cal-record-mode={mode}", *args)  # fmt: skip


def cassettes(root: Path) -> dict[str, bytes]:
    """Every cassette file (the manifest left out: it carries the recording time)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.json")) if p.name != "manifest.json"}


def interactions(data: bytes) -> list[dict[str, Any]]:
    return json.loads(data)["interactions"]


@pytest.fixture
def dataset(tmp_path: Path) -> Iterator[tuple[Path, list[Rendering]]]:
    yield subset(tmp_path / "six.jsonl", 6)


# ------------------------------------------------------------------------------------------ pure parts


def test_retry_after_reads_milliseconds_seconds_and_http_dates() -> None:
    now = dt.datetime(2026, 11, 29, 12, 0, 0, tzinfo=dt.UTC)
    assert retry_after_seconds({"retry-after-ms": "250", "Retry-After": "9"}) == 0.25  # ms wins
    assert retry_after_seconds({"Retry-After": "3"}) == 3.0
    assert retry_after_seconds({"retry-after": "Sun, 29 Nov 2026 12:00:05 GMT"}, now=now) == 5.0
    assert retry_after_seconds({"Retry-After": "Sun, 29 Nov 2026 11:00:00 GMT"}, now=now) == 0.0  # past: now
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_backoff_doubles_with_jitter_and_a_cap() -> None:
    settings, rng = Limits(backoff_initial=0.5, backoff_max=4.0), random.Random(1)
    for attempt, full in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (9, 4.0)]:
        assert 0.75 * full <= backoff(attempt, settings, rng) <= full


# ------------------------------------------------------------------------------------------ concurrency, rate


def test_concurrent_recording_honours_concurrency_then_replays_offline(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    dataset, renderings = subset(tmp_path / "twelve.jsonl", 12)
    root, first, again = tmp_path / "cassettes", tmp_path / "first.json", tmp_path / "again.json"
    with FaultServer(renderings, delay=0.1) as server:
        result = record(
            pytester, server.url, dataset, root, "--sys1cal-repeats=2", "--sys1cal-concurrency=4",
            "--sys1cal-rate=0", f"--sys1cal-report={first}",
        )  # fmt: skip
        result.assert_outcomes(passed=12)
        assert server.requests == 24 and server.max_seen_in_flight == 4
        result.stdout.fnmatch_lines(
            [
                "sys1cal: recording 12 of 12 renderings (0 already have cassettes)",
                "sys1cal: 24 requests (2 repeats); about * input tokens ≈ $0.00* at $0.042 per million input tokens"
                " (Jev's list price; --sys1cal-price sets your server's; estimate: characters of each JSON request"
                " body ÷ 4)",
                "sys1cal: concurrency 4, no rate limit",
                "*sys1cal: recorded 24 requests in * s, * requests/s; * input tokens reported by the server ≈ $*",
            ]
        )
        files = cassettes(root)
        assert len(files) == 12 and all(len(interactions(data)) == 2 for data in files.values())
        headers = [i["response"]["headers"] for data in files.values() for i in interactions(data)]
        assert all("date" not in {name.lower() for name in h} for h in headers)  # volatile: left out

        replayed = sys1cal(pytester, "--sys1cal-model=systemone", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}", f"--sys1cal-report={again}")  # fmt: skip
        replayed.assert_outcomes(passed=12)
        assert server.requests == 24  # replay sent nothing
        assert "sys1cal: record" not in replayed.stdout.str()  # and said nothing about recording
    assert json.loads(first.read_text())["items"] == json.loads(again.read_text())["items"]


def test_progress_lines_while_recording(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, dataset: tuple[Path, list[Rendering]]
) -> None:
    path, renderings = dataset
    monkeypatch.setattr(recording_hooks, "PROGRESS_EVERY", 0.15)
    with FaultServer(renderings, delay=0.1) as server:
        result = record(
            pytester, server.url, path, pytester.path / "c", "--sys1cal-repeats=2", "--sys1cal-concurrency=2",
            "--sys1cal-rate=0", "-q",
        )  # fmt: skip
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(
        ["sys1cal: recorded */12 requests, * requests/s, about * s left", "sys1cal: recorded 12 requests in *"]
    )


def test_rate_limit_spaces_requests_evenly(pytester: pytest.Pytester, dataset: tuple[Path, list[Rendering]]) -> None:
    path, renderings = dataset
    with FaultServer(renderings) as server:
        record(
            pytester, server.url, path, pytester.path / "c", "--sys1cal-repeats=1", "--sys1cal-rate=240",
            "--sys1cal-concurrency=8",
        ).assert_outcomes(passed=6)  # fmt: skip
    assert len(server.arrivals) == 6
    # 240 a minute: one every 0.25 s, however many may be in flight. Judged on the average gap, since a
    # single gap between arrivals also carries the machine's scheduling jitter.
    average_gap = (server.arrivals[-1] - server.arrivals[0]) / 5
    assert 0.25 * 0.9 <= average_gap < 0.25 * 2


# ------------------------------------------------------------------------------------------ faults


def _wrong_keys(answer: dict[str, Any]) -> dict[str, Any]:
    answer["answers"]["choice"]["probabilities"] = {"yes": 0.5, "no": 0.5}
    return answer


def _no_score(answer: dict[str, Any]) -> dict[str, Any]:
    del answer["answers"]["score"]
    return answer


def test_retryable_faults_end_in_complete_recordings(
    pytester: pytest.Pytester, dataset: tuple[Path, list[Rendering]]
) -> None:
    path, renderings = dataset
    busy = b'{"detail": {"error_type": "rate_limit_error", "message": "slow down"}}'
    script: list[Action] = [
        ("status", 429, {"Retry-After": "0"}, busy),
        ("status", 429, {}, busy),
        ("status", 529, {}, b'{"detail": "TypeSafe is temporarily overloaded"}'),
        ("status", 500, {}, b'{"detail": "boom"}'),
        ("status", 503, {"retry-after-ms": "50"}, b"unavailable"),
        ("status", 408, {}, b""),
        ("sleep", 1.0),  # past the 0.4 s timeout below
        ("reset",),
    ]
    root = pytester.path / "c"
    with FaultServer(renderings, script=script) as server:
        result = record(
            pytester, server.url, path, root, "--sys1cal-repeats=2", "--sys1cal-concurrency=4", "--sys1cal-rate=0",
            "--sys1cal-timeout=0.4",
            # The faults take about a second to get through, longer than the breaker's default (two timeouts):
            # they are retries to sit out, not a server that answers nothing (tests/recording/test_stalls.py).
            "--sys1cal-stall-limit=30",
        )  # fmt: skip
        result.assert_outcomes(passed=6)
        assert server.requests == 12 + len(script)
    result.stdout.fnmatch_lines(["*sys1cal: recorded 12 requests in *, 8 retried;*"])
    files = cassettes(root)
    assert len(files) == 6
    assert all(i["response"]["status"]["code"] == 200 for data in files.values() for i in interactions(data))
    assert all(len(interactions(data)) == 2 for data in files.values())


def test_a_busy_jevcompat_server_is_waited_out(
    pytester: pytest.Pytester, dataset: tuple[Path, list[Rendering]]
) -> None:
    path, _ = dataset
    root = pytester.path / "c"
    with jevcompat_mock(MockConfig(busy_every=3)) as mock:  # every third request: 429, Retry-After: 0
        record(
            pytester, mock.url, path, root, "--sys1cal-repeats=2", "--sys1cal-model-version=jev-1.13.0",
            "--sys1cal-concurrency=3", "--sys1cal-rate=0",
        ).assert_outcomes(passed=6)  # fmt: skip
        assert mock.server.RequestHandlerClass.cfg.requests == 12 + 5  # requests 3, 6, 9, 12 and 15 were "busy"
    codes = [i["response"]["status"]["code"] for data in cassettes(root).values() for i in interactions(data)]
    assert codes == [200] * 12


def test_malformed_answers_fail_their_items_and_the_next_run_records_only_those(
    pytester: pytest.Pytester, dataset: tuple[Path, list[Rendering]]
) -> None:
    path, renderings = dataset
    root = pytester.path / "c"
    script: list[Action] = [
        ("status", 200, {}, b'{"answers": {"noul": '),  # cut short
        ("mutate", _wrong_keys),
        ("mutate", _no_score),
        ("status", 400, {}, b'{"detail": "Too many choices. Must have at most 255 choices."}'),
        ("status", 422, {}, b'{"detail": [{"loc": ["body", "state"], "msg": "Field required", "type": "missing"}]}'),
    ]
    with FaultServer(renderings, script=script) as server:
        # Concurrency 1: the n-th fault lands on the n-th rendering (each fails at its first request).
        result = record(pytester, server.url, path, root, "--sys1cal-repeats=2", "--sys1cal-concurrency=1")
        result.assert_outcomes(passed=1, failed=5)
        assert server.requests == 5 + 2  # nothing retried; the last rendering's two repeats
        result.stdout.fnmatch_lines(
            [
                "*bayes__seed_000042__repr_counts*: malformed answer: the response is not JSON: *",
                "*bayes__seed_000042__repr_direct*: malformed answer: answer to 'choice': probability keys *'no', 'yes'*"
                " are not the options *'False', 'True'*",
                "*bayes__seed_000042__repr_distractor*: malformed answer: no answer to question 'score'*",
                "*bayes__seed_000042__repr_prose*: server error: HTTP 400: Too many choices. Must have at most 255*",
                "*bayes__seed_000042__repr_table*: server error: HTTP 422: body.state: Field required*",
            ]
        )
        assert list(cassettes(root)) == [f"systemone/jev-latest/{renderings[5].family}/{renderings[5].short_id}.json"]

        again = record(pytester, server.url, path, root, "--sys1cal-repeats=2", "--sys1cal-concurrency=4")
        again.assert_outcomes(passed=6)
        again.stdout.fnmatch_lines(["sys1cal: recording 5 of 6 renderings (1 already have cassettes)"])
        assert server.requests == 7 + 10 and len(cassettes(root)) == 6


def test_a_typed_gguf_request_error_fails_its_item_at_once_where_a_plain_500_is_retried(
    pytester: pytest.Pytester, dataset: tuple[Path, list[Rendering]]
) -> None:
    path, renderings = dataset
    root = pytester.path / "c"
    script: list[Action] = [
        ("status", 500, {}, b'{"detail": "E_CTX_TOO_SMALL: the request needs 9000 tokens, the context holds 8192"}'),
        ("status", 500, {}, b'{"detail": "E_INTERNAL: RuntimeError: boom"}'),  # retried, then answered
    ]
    with FaultServer(renderings, script=script) as server:
        result = record(pytester, server.url, path, root, "--sys1cal-repeats=1", "--sys1cal-concurrency=1")
        result.assert_outcomes(passed=5, failed=1)
        assert server.requests == 6 + 1  # the E_CTX_TOO_SMALL request was not sent again
    result.stdout.fnmatch_lines(
        ["*bayes__seed_000042__repr_counts*: server error: HTTP 500: E_CTX_TOO_SMALL: the request needs 9000 tokens*"
         "the same request fails again; not retried*"]
    )  # fmt: skip
    assert len(cassettes(root)) == 5


def test_a_typed_gguf_setup_error_stops_the_run_with_one_clear_error(
    pytester: pytest.Pytester, dataset: tuple[Path, list[Rendering]]
) -> None:
    path, renderings = dataset
    root = pytester.path / "c"
    unresolved = b'{"detail": "E_TEMPLATE_UNRESOLVED: no template could render this prompt."}'
    with FaultServer(renderings, script=[("status", 500, {}, unresolved)] * 6) as server:
        result = record(pytester, server.url, path, root, "--sys1cal-repeats=1", "--sys1cal-concurrency=1")
        assert server.requests == 1
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*server error: HTTP 500: E_TEMPLATE_UNRESOLVED: no template could render this prompt. (the server cannot "
         "answer any request; not retried)*", "*Interrupted: sys1cal: *"]
    )  # fmt: skip
    assert cassettes(root) == {}


def test_gzipped_answers_are_stored_decoded_and_replay(
    pytester: pytest.Pytester, dataset: tuple[Path, list[Rendering]]
) -> None:
    path, renderings = dataset
    root = pytester.path / "c"
    with FaultServer(renderings, gzip_answers=True) as server:
        record(pytester, server.url, path, root, "--sys1cal-repeats=1").assert_outcomes(passed=6)
    response = interactions(next(iter(cassettes(root).values())))[0]["response"]
    assert "content-encoding" not in {name.lower() for name in response["headers"]}
    replayed = sys1cal(
        pytester, "--sys1cal-model=systemone", f"--sys1cal-dataset={path}", f"--sys1cal-cassettes={root}"
    )
    replayed.assert_outcomes(passed=6)


# ------------------------------------------------------------------------------------------ fatal errors


@pytest.mark.parametrize(
    ("key", "status", "message"),
    [("wrong", 401, "Cannot authenticate with the server."), (None, 403, "Must supply an API key!")],
)
def test_auth_errors_stop_the_run_with_one_clear_error(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    dataset: tuple[Path, list[Rendering]],
    key: str | None,
    status: int,
    message: str,
) -> None:
    path, _ = dataset
    root = pytester.path / "c"
    if key:
        monkeypatch.setenv("SYS1CAL_API_KEY", key)
    else:
        monkeypatch.delenv("SYS1CAL_API_KEY", raising=False)
    with jevcompat_mock(MockConfig(key="the-right-key")) as mock:
        result = record(pytester, mock.url, path, root, "--sys1cal-repeats=2", "--sys1cal-model-version=jev-1.13.0")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*server error: HTTP {status}: {message}*", f"*Interrupted: sys1cal: *{status}*"])
    assert cassettes(root) == {}


def test_a_server_that_is_not_up_is_one_fatal_error_within_seconds(
    pytester: pytest.Pytester, dataset: tuple[Path, list[Rendering]]
) -> None:
    path, _ = dataset
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    # The default retry budget (120 s): refused before anything ever answered, the run gives up after 3 tries.
    result = record(pytester, f"http://127.0.0.1:{port}", path, pytester.path / "c")
    assert time.monotonic() - started < 20
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*cannot connect to http://127.0.0.1:{port}/v1/systemone: All connection attempts failed (3 attempts in *; is the server up?*",
            "*Interrupted: sys1cal: *",
        ]
    )


# ------------------------------------------------------------------------------------------ cost


def test_max_cost_refuses_to_start_and_leaves_nothing_behind(
    pytester: pytest.Pytester, dataset: tuple[Path, list[Rendering]]
) -> None:
    path, renderings = dataset
    root = pytester.path / "c"
    with FaultServer(renderings) as server:
        result = record(pytester, server.url, path, root, "--sys1cal-max-cost=0.00001")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: sys1cal: recording 60 requests would cost about $0.0017 (* input tokens at $0.042 per million,"
            " Jev's list price; --sys1cal-price sets your server's; estimate: characters of each JSON request body"
            " ÷ 4), more than --sys1cal-max-cost $1e-05. Nothing was sent.*"
        ]
    )
    assert server.requests == 0 and not root.exists()


def test_max_cost_stops_cleanly_when_the_server_reports_more_than_estimated(
    pytester: pytest.Pytester, dataset: tuple[Path, list[Rendering]]
) -> None:
    path, renderings = dataset
    root = pytester.path / "c"
    # About 650 tokens estimated per request, 200,000 reported ($0.0084): after the first answer the
    # reported/estimated ratio prices the rest, so the third request is the last that fits in $0.03.
    with FaultServer(renderings, usage=200_000) as server:
        result = record(
            pytester, server.url, path, root, "--sys1cal-repeats=2", "--sys1cal-concurrency=1",
            "--sys1cal-max-cost=0.03",
        )  # fmt: skip
        assert server.requests == 3
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*not recorded: --sys1cal-max-cost $0.03 reached: $0.0252 spent and $0.0000 in flight; the next request"
            " would exceed it*",
            "*Interrupted: sys1cal: *",
        ]
    )
    assert len(cassettes(root)) == 1


# ------------------------------------------------------------------------------------------ resumable


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FaultServer, Path, Path]]:
    """One deterministic server for the whole module (the port is in the recorded requests), a dataset
    of 20 renderings, and a reference recording made without interruption."""
    folder = tmp_path_factory.mktemp("resume")
    path, renderings = subset(folder / "twenty.jsonl", 20)
    with FaultServer(renderings, delay=0.05) as server:
        reference = folder / "reference"
        done = _subprocess_record(server.url, path, reference, folder, concurrency=8)
        assert done.wait(timeout=60) == 0
        yield server, path, reference


def _subprocess_record(url: str, dataset: Path, root: Path, cwd: Path, concurrency: int) -> subprocess.Popen[bytes]:
    args = [
        sys.executable, "-m", "pytest", "--sys1cal", "--sys1cal-model=systemone", f"--sys1cal-base-url={url}",
        f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}", "--sys1cal-record-mode=once",
        "--sys1cal-repeats=2", f"--sys1cal-concurrency={concurrency}", "--sys1cal-rate=0", "-q", *QUIET,
    ]  # fmt: skip
    return subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _wait_for(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.e2e  # pytest processes against a loopback server, signalled
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_an_interrupted_recording_resumes_to_the_same_cassettes(
    slow_server: tuple[FaultServer, Path, Path], tmp_path: Path, how: signal.Signals
) -> None:
    server, dataset, reference = slow_server
    root = tmp_path / "cassettes"
    process = _subprocess_record(server.url, dataset, root, tmp_path, concurrency=2)
    try:
        _wait_for(lambda: len(cassettes(root)) >= 4, timeout=30)
        process.send_signal(how)
        code = process.wait(timeout=30)
    finally:
        process.kill()
    output = process.stdout.read().decode() if process.stdout else ""
    assert code == (-signal.SIGKILL if how == signal.SIGKILL else pytest.ExitCode.INTERRUPTED), output
    kept = cassettes(root)
    assert 4 <= len(kept) < 20
    assert all(kept[name] == reference.joinpath(name).read_bytes() for name in kept)  # only complete ones
    if how == signal.SIGINT:  # a clean stop finishes or removes what it was writing
        assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")]

    half_written = root.joinpath(next(iter(kept))).parent / ".bayes__seed_000042__repr_counts.json.k1ll3d.tmp"
    half_written.write_text('{"version": 1, "interac')  # what a kill during a write would leave
    resumed = _subprocess_record(server.url, dataset, root, tmp_path, concurrency=4)
    out = resumed.communicate(timeout=60)[0].decode()
    assert resumed.returncode == 0, out
    assert f"sys1cal: recording {20 - len(kept)} of 20 renderings ({len(kept)} already have cassettes)" in out
    assert cassettes(root) == cassettes(reference)
    assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")]  # a kill's half-written file is swept


# ------------------------------------------------------------------------------------------ xdist


def test_xdist_workers_record_only_what_they_run(pytester: pytest.Pytester, tmp_path: Path) -> None:
    path, renderings = subset(tmp_path / "twelve.jsonl", 12)
    root = tmp_path / "c"
    with FaultServer(renderings, delay=0.05) as server:
        result = record(pytester, server.url, path, root, "--sys1cal-repeats=2", "-n", "2")
        result.assert_outcomes(passed=12)
        assert server.requests == 24  # each rendering recorded once, by one worker
    result.stdout.fnmatch_lines(
        [
            "sys1cal: recording 12 of 12 renderings (0 already have cassettes)",
            "sys1cal: concurrency 8, no rate limit (shared by 2 xdist workers, *)",
        ]
    )
    assert len(cassettes(root)) == 12
