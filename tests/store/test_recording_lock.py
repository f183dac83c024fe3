"""Two recordings into one cassette folder (issue 20): the second is refused before it sends anything while
the first holds the folder's lock; a lock left by a killed recording is taken over with a notice; the lock is
never a cassette and never left behind by a recording that ends, cleanly or not."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_sys1cal.redact import Redactor
from pytest_sys1cal.store.folder import CassetteFolder
from pytest_sys1cal.store.lock import LOCK_NAME, FolderLock, FolderLocked
from tests.loopback import Behaviour, LoopbackServer
from tests.recording.test_recording import subset
from tests.runs import QUIET

# Runs recordings in subprocesses against loopback servers.
pytestmark = pytest.mark.e2e


@pytest.fixture
def slow(tmp_path: Path) -> Iterator[tuple[LoopbackServer, Path]]:
    """A loopback server that takes 50 ms per request (a test may slow it down), and 20 renderings."""
    dataset, renderings = subset(tmp_path / "twenty.jsonl", 20)
    with LoopbackServer.for_renderings(renderings, Behaviour(delay=0.05)) as server:
        yield server, dataset


def recording(url: str, dataset: Path, root: Path, *extra: str) -> subprocess.Popen[bytes]:
    args = [
        sys.executable, "-m", "pytest", "--sys1cal", "--sys1cal-model=systemone", f"--sys1cal-base-url={url}",
        f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}", "--sys1cal-record-mode=once",
        "--sys1cal-repeats=2", "--sys1cal-concurrency=2", "--sys1cal-rate=0", "-q", *QUIET, *extra,
    ]  # fmt: skip
    return subprocess.Popen(args, cwd=root.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def wait_for(condition, timeout: float = 30) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def leftovers(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob(f"{LOCK_NAME}*"))


def test_a_second_recording_into_a_held_folder_is_refused_and_spends_nothing(
    slow: tuple[LoopbackServer, Path], tmp_path: Path
) -> None:
    server, dataset = slow
    root = tmp_path / "cassettes"
    server.behaviour.delay = 1.0  # a second per request while the second recording starts: the first is live
    first = recording(server.url, dataset, root)
    try:
        wait_for(lambda: bool(leftovers(root)) and server.requests > 0)
        second = recording(server.url, dataset, root)
        said = second.communicate(timeout=60)[0].decode()
        requests_during = server.requests
        assert first.poll() is None, "the first recording should still be running"
        server.behaviour.delay = 0.0
        assert first.wait(timeout=60) == 0
    finally:
        first.kill()
    assert second.returncode == pytest.ExitCode.USAGE_ERROR, said
    lock = root / "systemone" / "jev-latest" / LOCK_NAME
    assert (
        f"ERROR: {lock.parent}: another recording into this folder is running (pid {first.pid} on host "
        f"{socket.gethostname()}, started "
    ) in said
    assert "Nothing was sent" in said and f"delete {lock}" in said and "Traceback" not in said
    # Only the first recording's requests reached the server: 20 renderings × 2 repeats, once each.
    assert server.requests == 20 * 2 and requests_during <= 20 * 2
    assert len(list(root.glob("systemone/jev-latest/*/*.json"))) == 20
    assert leftovers(root) == []  # released at the end, never left behind


def test_a_killed_recordings_lock_is_taken_over_with_a_notice(
    slow: tuple[LoopbackServer, Path], tmp_path: Path
) -> None:
    server, dataset = slow
    root = tmp_path / "cassettes"
    killed = recording(server.url, dataset, root)
    try:
        wait_for(lambda: len(list(root.glob("systemone/jev-latest/*/*.json"))) >= 3)
        killed.kill()  # SIGKILL: nothing runs at exit, the lock stays
        killed.wait(timeout=30)
    finally:
        killed.kill()
    lock = root / "systemone" / "jev-latest" / LOCK_NAME
    assert json.loads(lock.read_text())["pid"] == killed.pid
    kept = len(list(root.glob("systemone/jev-latest/*/*.json")))
    before = server.requests
    # A replay does not care about a recording's lock.
    replay = recording(server.url, dataset, root, "--sys1cal-record-mode=none", "--co")
    assert replay.wait(timeout=60) == 0
    resumed = recording(server.url, dataset, root)
    out = resumed.communicate(timeout=60)[0].decode()
    assert resumed.returncode == 0, out
    assert f"sys1cal: took over {lock}: the recording that held it (pid {killed.pid} on host " in out
    assert f"sys1cal: recording {20 - kept} of 20 renderings ({kept} already have cassettes)" in out
    assert server.requests - before == (20 - kept) * 2
    assert leftovers(root) == []


def test_a_recording_stopped_with_ctrl_c_releases_the_lock(slow: tuple[LoopbackServer, Path], tmp_path: Path) -> None:
    server, dataset = slow
    root = tmp_path / "cassettes"
    server.behaviour.delay = 0.2
    stopped = recording(server.url, dataset, root)
    try:
        wait_for(lambda: len(list(root.glob("systemone/jev-latest/*/*.json"))) >= 2)
        stopped.send_signal(signal.SIGINT)
        out = stopped.communicate(timeout=60)[0].decode()
    finally:
        stopped.kill()
    assert stopped.returncode == pytest.ExitCode.INTERRUPTED, out
    assert leftovers(root) == []


def test_a_recording_that_fails_releases_the_lock(tmp_path: Path) -> None:
    dataset, renderings = subset(tmp_path / "three.jsonl", 3)
    root = tmp_path / "cassettes"
    refusal = (400, {}, b'{"detail": "bad request"}')
    with LoopbackServer.for_renderings(renderings, Behaviour(script=[refusal])) as server:
        failed = recording(server.url, dataset, root)
        out = failed.communicate(timeout=60)[0].decode()
    assert failed.returncode == pytest.ExitCode.TESTS_FAILED, out
    assert "HTTP 400: bad request" in out and "1 failed, 2 passed" in out
    assert len(list(root.glob("systemone/jev-latest/*/*.json"))) == 2
    assert leftovers(root) == []


def folder(root: Path, mode: str = "once") -> CassetteFolder:
    return CassetteFolder(root, "systemone", "jev-latest", mode, Redactor())


def test_a_lock_of_another_host_or_an_unreadable_one_is_never_taken(tmp_path: Path) -> None:
    lock = FolderLock(tmp_path / "v")
    (tmp_path / "v").mkdir()
    lock.path.write_text(json.dumps({"pid": os.getpid(), "host": "ci-runner-7", "started": "2026-01-01T00:00:00"}))
    with pytest.raises(FolderLocked) as excinfo:
        lock.acquire()
    assert "may be running (it cannot be checked from this host) (pid " in str(excinfo.value)
    assert "on host ci-runner-7" in str(excinfo.value) and f"delete {lock.path}" in str(excinfo.value)
    lock.path.write_text("{half")
    with pytest.raises(FolderLocked, match="the lock file cannot be read, so who holds it is unknown"):
        lock.acquire()
    assert lock.path.read_text() == "{half"  # refused, and left as it was
    lock.path.unlink()
    assert lock.acquire() is None and json.loads(lock.path.read_text())["pid"] == os.getpid()
    lock.release()
    lock.release()  # idempotent
    assert sorted(p.name for p in (tmp_path / "v").iterdir()) == []


def test_the_lock_is_no_cassette_and_a_folder_that_recorded_nothing_is_removed(tmp_path: Path) -> None:
    from pytest_sys1cal.dataset import load_dataset

    dataset = load_dataset("sys1cal-v1")
    root = tmp_path / "cassettes"
    held = folder(root)
    assert held.start_recording(dataset, 2, ("noul",), {}, "http://u:p@127.0.0.1:9") is None
    assert (held.path / LOCK_NAME).is_file() and held.cassette_count() == 0
    assert folder(root, "none").base_url == "http://127.0.0.1:9"  # the manifest written at the start
    with pytest.raises(FolderLocked):  # in-process too: a second folder object of the same folder
        folder(root).start_recording(dataset, 2, ("noul",), {}, None)
    held.finish_recording([], 2, dataset)
    assert not root.exists()
