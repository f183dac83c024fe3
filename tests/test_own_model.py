"""A team's own model on its own terms (issue 24), in pytester against the jevcompat mock serving the team's
version names: `init --model systemone` writes that model's section only; the first recording is told, in one
line, that it has no gates yet and how to write them from its report; `thresholds --update` writes them; the
replay passes them; the next version is gated on them (inherited, and said so) and compared with the first.
Never a Jev floor. A fresh 12-problem dataset keeps it quick; the README's path on the full dataset with the
built wheel is tests/test_packaging.py."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import jevcompat.mock as jevcompat
import pytest
import yaml

from tests.loopback import jevcompat_mock
from tests.runs import sys1cal

VERSIONS = ("team-model-1", "team-model-2")


@pytest.fixture
def mock(monkeypatch: pytest.MonkeyPatch):
    """The jevcompat mock, serving (and listing) the team's two version names, with a little repeat noise."""
    names = [{"name": v, "description": "a team's model", "release_date": "2026-10-01"} for v in VERSIONS]
    monkeypatch.setattr(jevcompat, "MODELS", jevcompat.MODELS + names)
    monkeypatch.setattr(jevcompat, "ACCEPTED_MODELS", jevcompat.ACCEPTED_MODELS | set(VERSIONS))
    with jevcompat_mock(jevcompat.MockConfig(noise=0.3)) as running:
        yield running


def command(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_sys1cal", *args], cwd=cwd, capture_output=True, text=True)


def test_a_teams_model_from_init_to_a_gated_second_version(pytester: pytest.Pytester, mock) -> None:
    root = pytester.path
    fresh = command("generate", "--seed", "3", "--problems", "12", "--out", "fresh.jsonl", cwd=root)
    assert fresh.returncode == 0, fresh.stderr
    assert command("init", "--model", "systemone", "--version", VERSIONS[0], cwd=root).returncode == 0
    assert yaml.safe_load((root / "thresholds.yaml").read_text()) == {"systemone": {"reading": "call"}}
    common = ("--sys1cal-model=systemone", f"--sys1cal-base-url={mock.url}", "--sys1cal-dataset=fresh.jsonl")
    common += ("--sys1cal-rate=0", "--sys1cal-repeats=4")

    first = sys1cal(pytester, *common, f"--sys1cal-model-version={VERSIONS[0]}", "--sys1cal-record-mode=once", "--sys1cal-report=first.json")  # fmt: skip
    assert first.ret == pytest.ExitCode.OK
    told = [line for line in first.stdout.lines if "no gates for" in line]
    assert told == [
        f"notice: thresholds.yaml: no gates for systemone {VERSIONS[0]} yet (systemone sets none): this "
        "run gates nothing. Write them from a full run of the version you trust: pytest --sys1cal "
        f"--sys1cal-model=systemone --sys1cal-model-version={VERSIONS[0]} --sys1cal-dataset={root / 'fresh.jsonl'} "
        f"--sys1cal-cassettes={root / 'cassettes'} --sys1cal-report=sys1cal-report.json, then python -m "
        "pytest_sys1cal thresholds sys1cal-report.json --update"
    ]
    # This run measured the whole dataset and wrote its report: the shortcut, under the gates.
    shortcut = f"  If {VERSIONS[0]} is the version you trust, write its gates from this run's report: "
    line = next(line for line in first.stdout.lines if line.startswith(shortcut))
    assert line == shortcut + "python -m pytest_sys1cal thresholds first.json --update"
    written = command(*shlex.split(line.rsplit(": ", 1)[1])[3:], cwd=root)  # the command, as printed
    assert written.returncode == 0, written.stderr
    assert "+  noul:" in written.stdout and "updated thresholds.yaml" in written.stderr

    replay = sys1cal(pytester, *common, f"--sys1cal-model-version={VERSIONS[0]}")
    assert replay.ret == pytest.ExitCode.OK, replay.stdout.str()[-3000:]
    header = next(line for line in replay.stdout.lines if line.startswith("sys1cal: thresholds"))
    assert "thresholds.yaml: systemone (" in header and "jev" not in header.split("thresholds ", 1)[1]

    second = sys1cal(pytester, *common, f"--sys1cal-model-version={VERSIONS[1]}", "--sys1cal-record-mode=once", f"--sys1cal-baseline={VERSIONS[0]}", "--sys1cal-report=second.json")  # fmt: skip
    assert second.ret == pytest.ExitCode.OK, second.stdout.str()[-4000:]
    header = next(line for line in second.stdout.lines if line.startswith("sys1cal: thresholds"))
    assert f"gates; {VERSIONS[1]} has no block of its own and inherits them)" in header
    gates = json.loads((root / "second.json").read_text())["gates"]
    names = {g["name"] for g in gates}
    assert {"noul.min_mean_ovl", "regression.noul.mean_ovl"} <= names and len(names) >= 20
    assert all(g["verdict"] == "passed" for g in gates), [g for g in gates if g["verdict"] != "passed"]
    assert "jev" not in (root / "thresholds.yaml").read_text().replace("--sys1cal", "")
