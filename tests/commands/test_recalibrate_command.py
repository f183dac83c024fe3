"""`python -m pytest_sys1cal recalibrate REPORT.json --out map.json` (issue 38), and a run replayed through the map it
writes (`--sys1cal-recalibration`): the file holds the isotonic map fitted on every problem and its held-out
estimate; a real pytest run through it puts every mapped answer through the map, says so, and gates what a team
would ship; every bad input is one line naming the file and the fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pytest_sys1cal.analysis.isotonic import fit_map
from pytest_sys1cal.recalibration_map import load_map
from tests.runs import GOLDEN, sys1cal

COLUMNS = {"noul": "p_noul", "choice": "p_choice", "score": "mu_score"}

# Runs the command in a child process, and pytest through pytester.
pytestmark = pytest.mark.e2e


def recalibrate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_sys1cal", "recalibrate", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def jev_map(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("map")
    done = recalibrate(str(GOLDEN / "jev-report.json"), "--out", "map.json", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].endswith(
        "pytest --sys1cal --model=jev --sys1cal-model-version=jev-1.13.0 --sys1cal-recalibration=map.json"
    )
    return folder / "map.json"


def test_the_map_is_the_isotonic_fit_on_every_problem_with_its_held_out_estimate(jev_map: Path) -> None:
    report = json.loads((GOLDEN / "jev-report.json").read_text(encoding="utf-8"))
    document = json.loads(jev_map.read_text(encoding="utf-8"))
    assert (document["schema"], document["model"], document["version"]) == (
        "sys1cal-recalibration/1",
        "jev",
        "jev-1.13.0",
    )
    assert document["dataset"] == {"name": "sys1cal-v1", "sha256": report["dataset"]["sha256"]}
    p_star = np.array([item["p_star"] for item in report["items"]])
    for prim, column in COLUMNS.items():
        fitted = fit_map(np.array([item[column] for item in report["items"]]), p_star)
        entry = document["maps"][prim]
        assert entry["x"] == fitted.x.tolist() and entry["y"] == fitted.y.tolist()
        block = report["recalibrated"][prim]  # the run's own held-out estimate, recomputed from the report alone
        assert entry["held_out"] == block["held_out"] and entry["in_sample_mean_ovl"] == block["in_sample"]
    assert load_map(jev_map).knots["noul"](0.5) == pytest.approx(float(np.interp(0.5, *fitted_noul(document))))


def fitted_noul(document: dict) -> tuple[list[float], list[float]]:
    return document["maps"]["noul"]["x"], document["maps"]["noul"]["y"]


def test_a_run_through_the_map_puts_every_answer_through_it(pytester: pytest.Pytester, jev_map: Path) -> None:
    report = pytester.path / "mapped.json"
    result = sys1cal(pytester, f"--sys1cal-recalibration={jev_map}", f"--sys1cal-report={report}")
    text = result.stdout.str()
    assert f"answers through the recalibration map {jev_map}" in text  # the header
    assert "notice: answers replayed through the recalibration map map.json (Noul, Choice, Score; fitted on " in text
    assert "it was fitted on these very answers, so these numbers are in-sample" in text
    mapped = json.loads(report.read_text(encoding="utf-8"))
    raw = json.loads((GOLDEN / "jev-report.json").read_text(encoding="utf-8"))
    document = json.loads(jev_map.read_text(encoding="utf-8"))
    assert mapped["recalibration"]["primitives"] == ["noul", "choice", "score"]
    for item, before in zip(mapped["items"], raw["items"], strict=True):
        for prim in ("noul", "choice"):
            entry = document["maps"][prim]
            assert item[COLUMNS[prim]] == pytest.approx(
                np.interp(before[COLUMNS[prim]], entry["x"], entry["y"]), abs=1e-12
            )
        score = document["maps"]["score"]
        assert item["mu_score"] == pytest.approx(np.interp(before["mu_score"], score["x"], score["y"]), abs=1e-12)
    # In-sample the map removes all the miscalibration its isotonic fit can see: MCB 0 on every primitive.
    for prim, parts in mapped["decomposition"].items():
        assert parts["mcb"] == pytest.approx(0, abs=1e-12) and parts["mcb"] < raw["decomposition"][prim]["mcb"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("not json", "not a JSON file"),
        ('{"schema": "sys1cal-report/1"}', "not a recalibration map (schema 'sys1cal-report/1'"),
        ('{"schema": "sys1cal-recalibration/1", "maps": {}}', "maps: no primitive is mapped"),
        (
            '{"schema": "sys1cal-recalibration/1", "model": "jev", "version": "v", "maps": {"noul": {"x": [0.1, 0.5], "y": [0.6, 0.2]}}}',
            "maps.noul.y: the map must be monotone (non-decreasing)",
        ),
        (
            '{"schema": "sys1cal-recalibration/1", "model": "jev", "version": "v", "maps": {"noul": {"x": [0.1, 1.5], "y": [0.1, 0.2]}}}',
            "maps.noul: every knot must be a number in [0, 1]",
        ),
        (
            '{"schema": "sys1cal-recalibration/1", "model": "semif", "version": "v", "maps": {"noul": {"x": [0.1], "y": [0.2]}}}',
            "a map fitted on model semif's answers, and this run measures jev",
        ),
    ],
)
def test_a_bad_map_is_one_usage_error_line(pytester: pytest.Pytester, content: str, expected: str) -> None:
    (pytester.path / "map.json").write_text(content, encoding="utf-8")
    result = sys1cal(pytester, "--sys1cal-recalibration=map.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in (result.stdout.str() + result.stderr.str()).splitlines() if line.startswith("ERROR: ")]
    assert len(errors) == 1 and expected in errors[0], errors
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize(
    ("setup", "args", "expected"),
    [
        (None, ["missing.json", "--out", "m.json"], "error: missing.json: cannot read it"),
        ("interrupted", ["report.json", "--out", "m.json"], "report.json: the report of an interrupted run"),
        ("mapped", ["report.json", "--out", "m.json"], "its answers already went through the map map.json"),
        ("plain", ["report.json", "--out", "."], "error: --out .: a folder, not a file"),
    ],
)
def test_bad_input_is_one_line_and_exit_4(tmp_path: Path, setup: str | None, args: list[str], expected: str) -> None:
    report = json.loads((GOLDEN / "jev-report.json").read_text(encoding="utf-8"))
    if setup == "interrupted":
        report["interrupted"] = {"reason": "Ctrl-C", "selected": 365, "measured": 100}
    if setup == "mapped":
        report["recalibration"] = {
            "file": "map.json",
            "sha256": "0",
            "model": "jev",
            "version": "v",
            "primitives": [],
            "held_out": {},
        }
    if setup:
        (tmp_path / "report.json").write_text(json.dumps(report), encoding="utf-8")
    done = recalibrate(*args, cwd=tmp_path)
    assert done.returncode == 4 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and expected in done.stderr, done.stderr
