"""The diagnosis of an upgrade (analysis/diagnosis.py) on copies of the bundled Jev report: a monotone distortion is
miscalibration, answers shuffled across latent problems are lost discrimination, a primitive that passed gets no
line, and explaining never changes a verdict. End to end through pytest: tests/report/test_why_upgrade.py; the
rule's error rates: scripts/diagnosis_simulation.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pytest_sys1cal.analysis import analyze
from pytest_sys1cal.analysis.upgrade import compare_reports
from pytest_sys1cal.recalibration_map import two_levels

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
KEYS = ("instance_id", "latent_instance_id", "family", "representation", "p_star")


@pytest.fixture(scope="module")
def base() -> dict:
    return json.loads((GOLDEN / "jev-report.json").read_text(encoding="utf-8"))


def copy_of(base: dict, answer) -> dict:
    """A report of the same renderings, each sample changed by answer(sample, index)."""
    items = [{**{k: item[k] for k in KEYS}, "samples": [answer(s, i) for s in item["samples"]]}
             for i, item in enumerate(base["items"])]  # fmt: skip
    return {**base, **analyze(items, bootstrap=0)}


def logit_map(p: float) -> float:
    return p if p in (0.0, 1.0) else 1 / (1 + math.exp(-(0.6 * math.log(p / (1 - p)) + 0.7)))


def distorted(sample: dict, _index: int) -> dict:
    q = sample["score"]
    mu = math.fsum(v * j / 9 for j, v in enumerate(q)) / math.fsum(q)
    return {
        "noul": logit_map(sample["noul"]),
        "choice": logit_map(sample["choice"]),
        "score": two_levels(logit_map(mu)),
    }


def test_a_monotone_distortion_is_miscalibration_and_explaining_changes_no_verdict(base: dict) -> None:
    new = copy_of(base, distorted)
    plain, explained = compare_reports(new, base), compare_reports(new, base, explain=True)
    for prim, metric in explained["metrics"].items():
        assert metric["verdict"] == plain["metrics"][prim]["verdict"] == "FAILED"
        why = metric["why"]
        assert why["cause"] == "miscalibration" and why["recalibrated"]["lower"] > -metric["margin"], why["line"]
        assert why["dsc"]["difference"] == pytest.approx(0, abs=1e-12) and why["mcb"]["ci"][0] > 0
        assert "why" not in plain["metrics"][prim]


def test_shuffled_answers_are_lost_discrimination(base: dict) -> None:
    latent = [item["latent_instance_id"] for item in base["items"]]
    rng = np.random.default_rng(0)
    while True:
        order = rng.permutation(len(latent))
        if all(latent[i] != latent[j] for i, j in enumerate(order)):
            break
    new = copy_of(base, lambda sample, index: base["items"][order[index]]["samples"][0])
    for metric in compare_reports(new, base, explain=True)["metrics"].values():
        why = metric["why"]
        assert why["cause"] == "lost discrimination", why["line"]
        assert why["recalibrated"]["upper"] < -metric["fail_margin"] and why["dsc"]["ci"][1] < 0


def test_a_primitive_that_passed_has_no_line(base: dict) -> None:
    better = copy_of(base, lambda s, _i: {**s, "noul": s["noul"]})  # the same answers: every primitive passes
    for metric in compare_reports(better, base, explain=True)["metrics"].values():
        assert metric["verdict"] == "passed" and metric["why"]["cause"] is None and metric["why"]["line"] is None
        assert metric["why"]["recalibrated"]["difference"] == 0.0
