"""Degenerate runs give clear results (None plus a reason), never a crash or a NaN; results are deterministic."""

from __future__ import annotations

import json
import random

import pytest

from pytest_sys1cal.analysis import analyze


def clean(result: dict) -> dict:
    """The result, checked to be JSON with no NaN or infinity."""
    json.dumps(result, allow_nan=False)
    return result


def grid(make_item, latents: int, renderings: int, **answers_of) -> list[dict]:
    """latents × renderings items; answers_of maps an answer name to f(latent, rendering) → value."""
    return [
        make_item(
            f"conditional__seed_{j:06d}",
            f"r{r}",
            0.1 + 0.8 * j / max(latents - 1, 1),
            **{name: f(j, r) for name, f in answers_of.items()},
        )
        for j in range(latents)
        for r in range(renderings)
    ]


def test_no_items():
    result = clean(analyze([]))
    assert result["counts"] == {"renderings": 0, "measured": 0, "failed": 0, "latent_problems": 0}
    assert result["primitives"]["choice"] == {
        "n": 0,
        "mean_tv": None,
        "mean_ovl": None,
        "median_ovl": None,
        "per_call": {
            "calls": 0,
            "mean_tv": None,
            "mean_ovl": None,
            "median_ovl": None,
            "reason": "no rendering was measured",
        },
    }
    assert result["representation_sensitivity"]["noul"]["reason"].startswith("not enough data")
    unc = result["uncertainty"]
    assert unc["lambda"] is None and unc["test"]["p_value"] is None
    assert "not enough data" in unc["reason"]
    assert result["decisions"]["rules"]["raw"] is None
    assert result["option_swap"] is None
    assert result["calibration"]["score"]["ece"] is None
    assert result["items"] == []


def test_failed_items_are_counted_not_analysed(make_item):
    items = [
        make_item("bayes__seed_000042", "direct", 0.3, error="HTTP 500"),
        make_item("bayes__seed_000042", "table", 0.3),  # no samples at all
    ]
    result = clean(analyze(items))
    assert result["counts"] == {"renderings": 2, "measured": 0, "failed": 2, "latent_problems": 0}
    assert result["uncertainty"]["test"]["p_value"] is None
    assert result["failures"] == [  # each, and why, for whoever reads the report alone
        {"instance_id": "bayes__seed_000042__repr_direct", "error": "HTTP 500"},
        {"instance_id": "bayes__seed_000042__repr_table", "error": "no samples"},
    ]
    assert "failures" not in analyze([items[0] | {"error": None, "samples": [{"noul": 0.3}]}])  # none: no key


def test_single_latent_problem(make_item):
    items = [
        make_item("bayes__seed_000042", f"r{r}", 0.4, noul=0.4, choice=0.5 + 0.1 * r, mu=0.3 + 0.05 * r)
        for r in range(5)
    ]
    result = clean(analyze(items))
    unc = result["uncertainty"]
    assert unc["lambda"] is not None  # five renderings are enough for the curve itself
    assert unc["u_max_ci"] is None and unc["lambda_latent_ci"] is None
    assert unc["test"]["p_value"] is None
    assert unc["test"]["reason"] == "not enough data: 1 latent problem"
    assert "not enough data: 1 latent problem" in unc["reason"]
    assert result["representation_sensitivity"]["choice"]["latent_problems"] == 1


@pytest.mark.parametrize("extreme", [0.0, 1.0])
def test_score_expectation_only_at_the_ends(make_item, extreme):
    items = grid(make_item, 6, 3, choice=lambda j, r: 0.2 + 0.1 * r + 0.03 * j, mu=lambda j, r: extreme)
    result = clean(analyze(items))
    unc = result["uncertainty"]
    assert unc["lambda"] is None and "strictly between 0 and 1" in unc["reason"]
    assert unc["test"]["p_value"] is not None  # the test of λ = 0 needs no fit
    cal = result["choice_calibration"]
    assert cal["raw"]["mean_ovl"] is not None and cal["inverse"]["mean_ovl"] is None
    assert result["decisions"]["rules"]["inverse"] is None
    assert result["decisions"]["rules"]["raw"] is not None


def test_choice_identical_to_score_expectation(make_item):
    items = grid(
        make_item, 8, 3, choice=lambda j, r: 0.1 + 0.1 * j + 0.02 * r, mu=lambda j, r: 0.1 + 0.1 * j + 0.02 * r
    )
    result = clean(analyze(items))
    unc = result["uncertainty"]
    assert unc["u_max"] == pytest.approx(0.0, abs=1e-9)
    assert unc["r2_vs_identity"] is None and "Choice equals μ_S" in unc["reason"]
    test = unc["test"]
    assert test["effect"] == 0.0
    assert test["p_value"] is None and test["reason"].startswith("no variation")
    assert test["permutation_p_value"] == 1.0
    assert result["choice_calibration"]["inverse"]["mean_ovl"] == pytest.approx(
        result["choice_calibration"]["raw"]["mean_ovl"], abs=1e-6
    )


def test_no_score_answers(make_item):
    items = grid(make_item, 4, 3, noul=lambda j, r: 0.5, choice=lambda j, r: 0.2 * r + 0.1)
    result = clean(analyze(items))
    assert result["primitives"]["score"]["n"] == 0
    assert result["uncertainty"]["n"] == 0
    assert result["choice_calibration"]["raw"]["mean_ovl"] is None
    assert "no rendering has both" in result["decisions"]["reason"]
    assert result["readout"]["score"]["recall_true"] is None
    assert result["calibration"]["score"]["reason"] == "not enough data: no answers"


def test_determinism_and_order_independence(published_items):
    first = json.dumps(analyze(published_items, seed=7, bootstrap=200))
    again = json.dumps(analyze(published_items, seed=7, bootstrap=200))
    shuffled = list(published_items)
    random.Random(1).shuffle(shuffled)
    assert json.dumps(analyze(shuffled, seed=7, bootstrap=200)) == first == again
    other_seed = analyze(published_items, seed=8, bootstrap=200)["uncertainty"]
    assert other_seed["u_max_ci"] != json.loads(first)["uncertainty"]["u_max_ci"]
