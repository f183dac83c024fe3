"""SIGTERM handled like the first Ctrl-C (issue 28): CI cancels a job with SIGTERM. The signal is sent to a real
pytest subprocess as CI sends it (to the pytest process; under xdist also to its whole process group), during
a replay and during a recording against a slow loopback server. Before: exit 143 and no word, no JUnit XML, no
report; under xdist the workers went on sending and printed ``PluggyTeardownRaisedWarning … OSError: cannot
send (already closed?)``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.field import environ, subset
from tests.loopback import Behaviour, LoopbackServer
from tests.runs import CASSETTES, QUIET

# Each test starts a pytest process (and some a loopback server) and signals it.
pytestmark = pytest.mark.e2e

COMPLETE = Path(__file__).resolve().parents[1] / "golden" / "jev-report.json"  # a complete run's report, to be kept
SLOW_ITEMS = (
    "import time\nfrom pathlib import Path\nseen = []\n\n"
    "def pytest_runtest_call(item):\n"
    "    seen.append(item)\n"
    "    if len(seen) == 30:\n"
    "        Path(f'thirty-{len(list(Path().glob(\"thirty-*\")))}').touch()\n"
    "    time.sleep(0.02)\n"
)


def wait_for(condition: Callable[[], bool], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def start(command: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    # A session of its own, as a CI runner starts each job: the group can be signalled as a whole. The job
    # summary goes where GitHub Actions would read it.
    env = environ(GITHUB_STEP_SUMMARY=str(cwd / "summary.md"))
    return subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )


def terminate(process: subprocess.Popen[bytes], *, group: bool = False, twice: bool = False) -> tuple[int, str]:
    try:
        if group:
            os.killpg(process.pid, signal.SIGTERM)
        else:
            process.send_signal(signal.SIGTERM)
        if twice:
            time.sleep(0.05)
            process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
    finally:
        with_group_killed(process)
    return code, process.stdout.read().decode() if process.stdout else ""


def with_group_killed(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def interrupted_case(xml: Path) -> str:
    cases = {case.get("name"): case for case in ET.parse(xml).getroot().iter("testcase")}
    (skipped,) = cases["interrupted"].iter("skipped")
    return skipped.get("message", "")


def assert_clean(output: str) -> None:
    for bad in ("Traceback", "INTERNALERROR", "PluggyTeardownRaisedWarning", "cannot send", "crashed"):
        assert bad not in output, output[-3000:]


def replay(tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    (tmp_path / "conftest.py").write_text(SLOW_ITEMS, encoding="utf-8")
    (tmp_path / "report.json").write_bytes(COMPLETE.read_bytes())
    command = [
        sys.executable, "-m", "pytest", "--sys1cal", f"--sys1cal-cassettes={CASSETTES}", "--sys1cal-report=report.json",
        "--junitxml=junit.xml", *QUIET, *args,
    ]  # fmt: skip
    return start(command, tmp_path)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_sigterm_to_a_replay_keeps_the_complete_report_and_marks_the_junit_xml(
    tmp_path: Path, workers: list[str]
) -> None:
    page = "<!DOCTYPE html><title>Sys1Cal calibration: jev jev-1.13.0</title>a complete run's page"
    (tmp_path / "report.html").write_text(page, encoding="utf-8")
    process = replay(tmp_path, *workers, "--sys1cal-html=report.html")
    wait_for(lambda: any(tmp_path.glob("thirty-*")))
    code, output = terminate(process)
    assert code == pytest.ExitCode.INTERRUPTED, output[-3000:]
    assert_clean(output)
    assert (tmp_path / "report.json").read_bytes() == COMPLETE.read_bytes()  # the complete report, untouched
    interrupted = json.loads((tmp_path / "report.interrupted.json").read_text())["interrupted"]
    assert interrupted["reason"] == "SIGTERM" and interrupted["selected"] == 365
    assert 1 <= interrupted["measured"] < 365
    assert f"interrupted (SIGTERM): {interrupted['measured']} of 365 selected renderings measured" in output
    assert interrupted_case(tmp_path / "junit.xml").startswith("sys1cal: interrupted (SIGTERM): ")
    sentence = f"nterrupted (SIGTERM): {interrupted['measured']} of 365 selected renderings measured"
    assert f"> **I{sentence}" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == page  # the complete page, untouched
    assert sentence in (tmp_path / "report.interrupted.html").read_text(encoding="utf-8")


def test_sigterm_to_the_process_group_under_xdist_stops_the_workers_at_once(tmp_path: Path) -> None:
    process = replay(tmp_path, "-n", "2")
    wait_for(lambda: any(tmp_path.glob("thirty-*")))
    code, output = terminate(process, group=True)
    assert code == pytest.ExitCode.INTERRUPTED, output[-3000:]
    assert_clean(output)
    assert (tmp_path / "report.json").read_bytes() == COMPLETE.read_bytes()
    assert interrupted_case(tmp_path / "junit.xml").startswith("sys1cal: interrupted (SIGTERM): ")


def test_a_second_sigterm_ends_it_at_once_and_cleanly(tmp_path: Path) -> None:
    process = replay(tmp_path)
    wait_for(lambda: any(tmp_path.glob("thirty-*")))
    code, output = terminate(process, twice=True)
    assert code == pytest.ExitCode.INTERRUPTED, output[-3000:]
    assert_clean(output)
    assert (tmp_path / "report.json").read_bytes() == COMPLETE.read_bytes()
    assert "the end-of-run analysis was interrupted (SIGTERM): no gate was evaluated" in output
    assert "SIGTERM" in interrupted_case(tmp_path / "junit.xml")


def cassette_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*.json") if p.name != "manifest.json"]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_sigterm_while_recording_keeps_what_was_finished_and_resumes(tmp_path: Path, workers: list[str]) -> None:
    renderings = subset(tmp_path / "thirty.jsonl", 30)
    root = tmp_path / "cassettes"
    with LoopbackServer.for_renderings(renderings, Behaviour(delay=0.05, max_in_flight=1)) as server:
        command = [
            sys.executable, "-m", "pytest", "--sys1cal", "--sys1cal-model=systemone", f"--sys1cal-base-url={server.url}",
            "--sys1cal-dataset=thirty.jsonl", f"--sys1cal-cassettes={root}", "--sys1cal-record-mode=once",
            "--sys1cal-repeats=1", "--sys1cal-concurrency=1", "--sys1cal-rate=0", "--sys1cal-report=report.json",
            "--junitxml=junit.xml", *QUIET,
        ]  # fmt: skip
        process = start([*command, *workers], tmp_path)
        wait_for(lambda: len(cassette_files(root)) >= 4)
        code, output = terminate(process)
        asked = server.requests
        time.sleep(0.5)
        assert server.requests == asked  # nothing is sent after the run ended
        assert code == pytest.ExitCode.INTERRUPTED, output[-3000:]
        assert_clean(output)
        interrupted = json.loads((tmp_path / "report.json").read_text())["interrupted"]
        assert interrupted["reason"] == "SIGTERM" and interrupted["selected"] == 30
        assert interrupted["measured"] < 30
        assert "SIGTERM" in interrupted_case(tmp_path / "junit.xml")
        assert not (root / "systemone" / "jev-latest" / ".recording.lock").exists()
        kept = len(cassette_files(root))
        resumed = subprocess.run(command, cwd=tmp_path, env=environ(), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert f"sys1cal: recording {30 - kept} of 30 renderings ({kept} already have cassettes)" in resumed.stdout
    assert len(cassette_files(root)) == 30
