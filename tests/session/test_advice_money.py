"""Advice that never spends money by mistake (issue 37), each printed command run as printed: a replay from the
wrong folder is pointed at the version folder that exists above or below it (never at a paid recording); a run of
the default model in a project whose thresholds file init wrote for another one names the ini snippet it lacks;
and after a recording stopped by an "Unknown model" answer, the command that writes the gates records what is
missing (record mode once). Real pytest runs (pytester), real cassettes on disk, a real server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_sys1cal.commands.project_files import no_gates_yet
from tests.recording.test_recording import FaultServer, subset
from tests.runs import run
from tests.version_roots import NEW, two_versions


def error_line(result: pytest.RunResult) -> str:
    (line,) = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    return line


def printed_command(text: str, after: str) -> list[str]:
    """The `pytest …` command printed after `after`, as a list of arguments (shlex: as a shell would split it)."""
    start = text.index(after) + len(after)
    return shlex.split(text[start:].split(", or run pytest", 1)[0].split(", then python", 1)[0])


@pytest.mark.parametrize("where", ["above", "below"])
def test_a_replay_from_the_wrong_folder_is_pointed_at_the_folder_that_exists(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    project = pytester.path / "project"
    two_versions(project / "cassettes")
    (project / "tests").mkdir()
    monkeypatch.chdir(project / "tests" if where == "above" else pytester.path)
    result = run(pytester, "--sys1cal", f"--sys1cal-model-version={NEW}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    line = error_line(result)
    found = "../cassettes/jev/jev-1.14.0" if where == "above" else "project/cassettes/jev/jev-1.14.0"
    assert f"The same model and version is recorded in {found}, {where} this run's cassette root" in line
    assert "record-mode=once" not in line and "record this model" not in line  # no paid recording offered
    command = printed_command(line, "replay it (nothing is sent) with: ")
    assert command[0] == "pytest" and "--sys1cal-record-mode=none" in command
    again = run(pytester, *command[1:])  # as printed, from the same folder
    assert again.ret == pytest.ExitCode.OK, again.stdout.str()[-1500:]
    again.assert_outcomes(passed=365)


def test_a_run_without_inits_snippet_names_the_snippet(pytester: pytest.Pytester) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_sys1cal", "init", "--model", "systemone", "--version", "my-model-1"],
        cwd=pytester.path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # init's "Next: 1." pasted before the snippet: without it the run would be of jev and ask for Jev's key.
    result = run(pytester, "--sys1cal", "--sys1cal-record-mode=once", "--sys1cal-max-cost=5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert error_line(result) == (
        "ERROR: thresholds.yaml is written for systemone, but no ini names a model, so this run would be of jev, the "
        "default (recording it would need Jev's key): add the snippet init printed to pyproject.toml, "
        '[tool.pytest.ini_options] sys1cal_model = "systemone" sys1cal_model_version = "my-model-1" '
        "(or give --sys1cal-model=systemone --sys1cal-model-version=my-model-1)"
    )
    assert "TYPESAFE_API_KEY" not in result.stdout.str() + result.stderr.str()
    # With the snippet, the same command is a run of systemone my-model-1.
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nsys1cal_model = "systemone"\nsys1cal_model_version = "my-model-1"\n'
    )
    replay = run(pytester, "--sys1cal")
    assert "no cassettes for systemone my-model-1" in error_line(replay)


def test_after_an_unknown_model_stop_the_printed_command_records_and_runs_as_printed(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    dataset, renderings = subset(tmp_path / "six.jsonl", 6)
    (pytester.path / "thresholds.yaml").write_text(no_gates_yet("systemone", "v1"), encoding="utf-8")
    refusal = {"detail": {"error_type": "api_usage_error", "message": "Unknown model: v1"}}
    unknown = ("status", 400, {}, json.dumps(refusal).encode())
    args = ["--sys1cal", "--sys1cal-model=systemone", "--sys1cal-model-version=v1", f"--sys1cal-dataset={dataset}"]
    with FaultServer(renderings, script=[unknown]) as server:
        stopped = run(
            pytester, *args, f"--sys1cal-base-url={server.url}", "--sys1cal-record-mode=once", "--sys1cal-repeats=1",
            "--sys1cal-concurrency=1",
        )  # fmt: skip
        assert "Unknown model: v1" in stopped.stdout.str()
        text = stopped.stdout.str().replace("\n", " ")
        (notice,) = re.findall(r"Write them from a full run of the version you trust: (pytest [^,]*)", text)
        command = shlex.split(notice)
        assert "--sys1cal-record-mode=once" in command and f"--sys1cal-base-url={server.url}" in command
        assert "--sys1cal-report=sys1cal-report.json" in command
        again = run(pytester, *command[1:])  # as printed
    assert again.ret == pytest.ExitCode.OK, again.stdout.str()[-1500:]
    again.assert_outcomes(passed=6)
    update = subprocess.run(
        [sys.executable, "-m", "pytest_sys1cal", "thresholds", "sys1cal-report.json", "--update"],
        cwd=pytester.path, capture_output=True, text=True, timeout=120, env={**os.environ},
    )  # fmt: skip
    assert update.returncode == 0, update.stderr
    assert "systemone:" in (pytester.path / "thresholds.yaml").read_text(encoding="utf-8")
    shutil.rmtree(pytester.path / "cassettes")
