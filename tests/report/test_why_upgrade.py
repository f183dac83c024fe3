"""Why a version moved, end to end (issue 38): two copies of the bundled Jev set made here (tests/why_copies.py),
replayed by real pytest runs against the original as a version baseline.

- a monotone distortion (logit-scale shrink 0.6 and shift +0.7): every primitive FAILED, each diagnosed as
  miscalibration, the recalibrated Δ within the margin, ΔDSC 0;
- the answers shuffled across latent problems: diagnosed as lost discrimination, DSC down to about 0.

The diagnosis is said under the verdict in the terminal, the job summary and the pull-request comment, and it is
in the JSON report; it never changes the verdict."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.runs import GOLDEN, REAL_ANALYSIS, THRESHOLDS, sys1cal
from tests.version_roots import JEV, OLD
from tests.why_copies import distorted, shuffled

DISTORTED, SHUFFLED = "jev-1.14.0", "jev-1.15.0"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("why") / "cassettes"
    shutil.copytree(JEV, root / "jev" / OLD)
    distorted(JEV, root, DISTORTED)
    shuffled(JEV, root, SHUFFLED)
    return root


def upgrade(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, root: Path, version: str, tmp_path: Path
) -> tuple[pytest.RunResult, dict]:
    report = tmp_path / f"{version}.json"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    result = sys1cal(
        pytester,
        *REAL_ANALYSIS,  # the intervals and the held-out splits are what these tests read
        f"--sys1cal-cassettes={root}",
        f"--sys1cal-thresholds={THRESHOLDS}",
        f"--sys1cal-model-version={version}",
        f"--sys1cal-baseline={OLD}",
        f"--sys1cal-report={report}",
        f"--sys1cal-markdown={tmp_path / 'comment.md'}",
    )
    return result, json.loads(report.read_text(encoding="utf-8"))


def test_a_monotone_distortion_is_diagnosed_as_miscalibration(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, root: Path, tmp_path: Path
) -> None:
    result, report = upgrade(pytester, monkeypatch, root, DISTORTED, tmp_path)
    comparison = report["comparison"]
    assert comparison["verdict"] == "FAILED"  # the raw verdict decides: the diagnosis never turns it
    for prim, row in comparison["primitives"].items():
        why = row["why"]
        assert row["verdict"] == "FAILED", prim
        assert why["cause"] == "miscalibration", (prim, why["line"])
        recalibrated = why["recalibrated"]
        assert recalibrated["lower"] > -row["margin"], prim  # recalibrated Δ within the margin
        assert abs(recalibrated["difference"]) < 0.002 < -row["difference"], prim  # the drop is recovered
        assert abs(why["dsc"]["difference"]) < 1e-12 and why["mcb"]["difference"] > 0.01, prim  # ranking kept
        assert why["line"].startswith(f"{prim.capitalize()}: miscalibration — recalibration fitted on held-out")
        assert "within the margin 0.02); discrimination unchanged (ΔDSC +0.000 [+0.000, +0.000])" in why["line"]
    text = result.stdout.str()
    headline = next(i for i, line in enumerate(text.splitlines()) if line.startswith("upgrade jev-1.13.0 → jev-1.14.0"))
    below = text.splitlines()[headline + 1 : headline + 4]
    assert [line.split(" — ")[0] for line in below] == [
        "  why: Noul: miscalibration",
        "  why: Choice: miscalibration",
        "  why: Score: miscalibration",
    ]
    assert "Why it moved: miscalibration against discrimination" in text
    comment = (tmp_path / "comment.md").read_text(encoding="utf-8")
    verdict_at = comment.index("FAILED")
    assert verdict_at < comment.index("- **Why:** Noul: miscalibration —") < comment.index("| primitive |")
    assert "- **Why:** Score: miscalibration —" in (tmp_path / "summary.md").read_text(encoding="utf-8")


def test_answers_shuffled_across_latent_problems_are_diagnosed_as_lost_discrimination(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, root: Path, tmp_path: Path
) -> None:
    result, report = upgrade(pytester, monkeypatch, root, SHUFFLED, tmp_path)
    comparison = report["comparison"]
    assert comparison["verdict"] == "FAILED"
    for prim, row in comparison["primitives"].items():
        why = row["why"]
        assert why["cause"] == "lost discrimination", (prim, why["line"])
        assert why["recalibrated"]["upper"] < -row["fail_margin"], prim
        assert why["dsc"]["new"] < 0.005 < why["dsc"]["baseline"], prim  # no ranking left
        assert why["dsc"]["ci"][1] < 0, prim
        assert why["line"].endswith("retraining, not recalibration"), why["line"]
    # The shuffled version's own analysis says the same: its DSC is gone, and held out its best recalibration falls
    # far short of the original's (a map fitted on the same problems flatters it).
    original = json.loads((GOLDEN / "jev-report.json").read_text(encoding="utf-8"))
    for prim, parts in report["decomposition"].items():
        assert parts["dsc"] < 0.005 and parts["dsc_ci"][0] > -1e-12, prim  # ≥ 0 up to rounding
        held = report["recalibrated"][prim]
        assert held["held_out"]["mean"] < original["recalibrated"][prim]["held_out"]["mean"] - 0.1, prim
        assert held["in_sample"] > held["held_out"]["mean"], prim
    assert "  why: Noul: lost discrimination — " in result.stdout.str()
