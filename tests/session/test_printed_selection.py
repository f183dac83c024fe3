"""Printed commands keep the run's selection (issue 36): a run of 6 renderings (-k) refused to record into a
reconstructed folder printed a command for recording into another folder without its -k, which, followed,
recorded all 365. The printed command is run here as printed, against a loopback server, and records the 6."""

from __future__ import annotations

import shlex
import shutil
import subprocess

import pytest

from pytest_sys1cal.dataset import load_dataset
from pytest_sys1cal.session.advice import selection_of
from tests.field import environ
from tests.loopback import LoopbackServer
from tests.runs import CASSETTES, sys1cal

SUBSET = "frequency__seed_000042"  # six renderings


def test_the_selection_is_what_the_run_was_given() -> None:
    assert selection_of("x and y", "", ["tests", "sys1cal::jev[a/b]"]) == ("-k", "x and y", "sys1cal::jev[a/b]")
    assert selection_of(None, "slow", []) == ("-m", "slow")
    assert selection_of("", None, ["tests"]) == ()


def test_the_command_for_recording_elsewhere_keeps_the_k_and_records_only_the_selection(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = pytester.path / "cassettes"
    shutil.copytree(CASSETTES / "jev", root / "jev")  # reconstructed: nothing may be recorded into it
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test")
    renderings = load_dataset("sys1cal-v1").renderings
    with LoopbackServer.for_renderings(renderings) as server:
        refused = sys1cal(pytester, f"--sys1cal-base-url={server.url}", "--sys1cal-record-mode=once", "--sys1cal-repeats=1", "-k", SUBSET)  # fmt: skip
        assert refused.ret == pytest.ExitCode.USAGE_ERROR
        (line,) = [text for text in refused.stderr.lines if text]
        printed = line.split("Record into another cassette folder: ", 1)[1]
        assert printed.endswith(f"--sys1cal-record-mode=once -k {SUBSET}")
        done = subprocess.run(
            [*shlex.split(printed), "-p", "no:cacheprovider", "-q"],
            cwd=pytester.path, env=environ(TYPESAFE_API_KEY="sk-test"), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    elsewhere = root.with_name("cassettes-recorded") / "jev" / "jev-1.13.0"
    recorded = sorted(p for p in elsewhere.rglob("*.json") if p.name != "manifest.json")
    assert len(recorded) == 6 and server.requests == 6
    assert all(SUBSET in p.name for p in recorded)
    assert "6 passed, 359 deselected" in done.stdout
