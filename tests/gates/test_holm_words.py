"""Holm's step-down said where it stops (issue 37): a bound that reads decisive but did not decide says why, in
the gate's explanation and under the pull-request comment's Δ table (docs/statistics.md §6.3)."""

from __future__ import annotations

from typing import Any

from pytest_sys1cal.analysis.paired import holm
from pytest_sys1cal.gates.schema import UpgradeConfig
from pytest_sys1cal.gates.upgrade import _upgrade_row
from pytest_sys1cal.report.upgrade_text import holm_lines

ALPHA = 0.05


def metric(label: str, p_worse: float, upper: float, upper_level: float, lower_level: float) -> dict[str, Any]:
    return {
        "metric": "x.mean_ovl", "label": f"{label} mean OVL", "n": 365, "latent_problems": 92,
        "baseline": 0.8, "new": 0.78, "difference": -0.02, "margin": 0.02, "fail_margin": 0.01,
        "verdict": "inconclusive", "se": 0.004, "sd_d": 0.05, "p_noninferior": 0.6, "p_worse": p_worse,
        "lower": -0.031, "lower_level": lower_level, "upper": upper, "upper_level": upper_level,
        "advice": {"towards": "FAILED", "renderings": 900, "repeats": None, "text": "about 900 renderings would decide it"},
    }  # fmt: skip


def comparison(metrics: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"alpha": ALPHA, "matched": 365, "only_in_new": 0, "only_in_baseline": 0, "repeats": 10,
            "resamples": 2000, "seed": 0, "reading": "mean", "cells": {"q": 0.1, "tested": 0, "regressed": 0},
            "metrics": metrics}  # fmt: skip


def test_a_bound_past_its_margin_that_holm_never_reached_says_so() -> None:
    """The finding: Choice's one-sided 97.5% upper bound −0.0128 is below −0.01, yet Choice was not shown worse,
    because Noul, first in the step-down (p 0.021 > 0.05/3), stopped it. The text used to say "is not below"."""
    p_values = [0.021, 0.023, 0.4]
    reject, levels, _ = holm(p_values, ALPHA)
    assert not reject.any() and list(levels.round(4)) == [0.0167, 0.025, 0.05]
    metrics = {
        "noul": metric("Noul", 0.021, -0.0105, 1 - levels[0], 0.95),
        "choice": metric("Choice", 0.023, -0.0128, 1 - levels[1], 0.975),
        "score": metric("Score", 0.4, 0.01, 1 - levels[2], 0.983),
    }
    row = _upgrade_row("choice", metrics["choice"], comparison(metrics), UpgradeConfig(), None)  # type: ignore[arg-type]
    assert "one-sided 97.5% upper bound -0.0128 is below -0.01, but Holm's step-down stopped at Noul mean OVL " in (
        row.explanation
    )
    assert "(bootstrap p 0.021 above its level 0.01667) before it" in row.explanation
    assert "is not below" not in row.explanation
    # The primitive that stopped it: its own bound is past the margin too, and its p missed its own level.
    noul = _upgrade_row("noul", metrics["noul"], comparison(metrics), UpgradeConfig(), None)  # type: ignore[arg-type]
    assert "upper bound -0.0105 is below -0.01, but its bootstrap p 0.021 is above its Holm level 0.01667" in (
        noul.explanation
    )
    # Score's bound is not past the margin: said plainly, as before.
    score = _upgrade_row("score", metrics["score"], comparison(metrics), UpgradeConfig(), None)  # type: ignore[arg-type]
    assert "one-sided 95% upper bound +0.0100 is not below -0.01)" in score.explanation


def test_the_comment_lists_each_familys_steps_and_where_it_stopped() -> None:
    block = {
        "primitives": {
            "noul": {"p_worse": 0.021, "upper_level": 1 - ALPHA / 3, "p_noninferior": 0.001, "lower_level": 1 - ALPHA / 3},
            "choice": {"p_worse": 0.023, "upper_level": 1 - ALPHA / 2, "p_noninferior": 0.6, "lower_level": 1 - ALPHA},
            "score": {"p_worse": 0.4, "upper_level": 1 - ALPHA, "p_noninferior": 0.002, "lower_level": 1 - ALPHA / 2},
        }
    }  # fmt: skip
    worse, within = holm_lines(block)  # type: ignore[arg-type]
    assert worse == (
        "Holm's step-down, shown worse: Noul p 0.021 > 0.0167, Choice p 0.023 ≤ 0.025, Score p 0.4 > 0.05: "
        "stops at Noul, so none after it is shown so"
    )
    assert within == (
        "Holm's step-down, shown within the margin: Noul p 0.001 ≤ 0.0167, Score p 0.002 ≤ 0.025, "
        "Choice p 0.6 > 0.05: stops at Choice"
    )
    assert holm_lines({"primitives": {"noul": block["primitives"]["noul"]}}) == []  # type: ignore[typeddict-item]
