"""The paper's published numbers, recomputed from its per-item Jev outputs (one sample per rendering).

Expected values are the paper's, compared at the precision it prints them.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

from pytest_sys1cal.analysis.latent import LatentFit


def printed(value: float, digits: int = 3) -> float:
    return round(value, digits)


def test_table1(published):
    prims = published["primitives"]
    assert printed(prims["noul"]["mean_tv"], 4) == 0.0817
    assert printed(prims["noul"]["mean_ovl"]) == 0.918
    assert printed(prims["choice"]["mean_ovl"]) == 0.764
    assert printed(prims["score"]["mean_ovl"]) == 0.886
    assert published["counts"] == {"renderings": 365, "measured": 365, "failed": 0, "latent_problems": 92}


def test_latent_fit(published):
    unc = published["uncertainty"]
    assert printed(unc["lambda"]) == 0.978
    assert printed(unc["alpha"]) == 0.512
    assert printed(unc["beta"]) == 1.000
    assert printed(unc["r2"]) == 0.834
    # Derived quantities agree with their definitions.
    lam, alpha, beta = unc["lambda"], unc["alpha"], unc["beta"]
    expected_u_max = lam * alpha**alpha * beta**beta / (alpha + beta) ** (alpha + beta)
    assert unc["u_max"] == pytest.approx(expected_u_max, rel=1e-12)
    assert unc["u_peak_at"] == pytest.approx(alpha / (alpha + beta))
    assert 0 < unc["r2_vs_identity"] < unc["r2"]


def test_bootstrap_intervals(published):
    unc = published["uncertainty"]
    assert unc["bootstrap_resamples"] == 1000
    low, high = unc["u_max_ci"]
    assert low < unc["u_max"] < high
    # λ sits near its bound: the percentile interval reaches 1, which is why it is no test.
    assert unc["lambda_ci"][1] == pytest.approx(1.0)
    assert any("weakly identified" in note for note in unc["notes"])


def test_paper_lambda_statistic(published):
    unc = published["uncertainty"]
    assert printed(unc["lambda_latent_mean"]) == 0.821
    assert [printed(v) for v in unc["lambda_latent_ci"]] == [0.760, 0.882]
    assert unc["lambda_latent_p"] == pytest.approx(2.9e-44, rel=0.05)
    improvement = unc["improvement"]
    assert printed(improvement["mean"]) == 0.110
    assert [printed(v, 4) for v in improvement["ci"]] == [0.0853, 0.1351]


def test_valid_test_of_lambda_zero(published):
    test = published["uncertainty"]["test"]
    assert test["alternative"] == "greater"
    assert test["df"] == 91
    assert test["p_value"] == 1e-10  # floored, and said so
    assert "1e-10" in test["note"]
    assert test["effect"] > 0
    assert test["effect_ci"][0] < test["effect"] < test["effect_ci"][1]
    assert test["permutation_p_value"] == pytest.approx(1 / 10000)


def test_table3(published):
    cal = published["choice_calibration"]
    assert (printed(cal["raw"]["mean_ovl"]), printed(cal["raw"]["median_ovl"])) == (0.764, 0.771)
    assert (printed(cal["inverse"]["mean_ovl"]), printed(cal["inverse"]["median_ovl"])) == (0.880, 0.903)
    assert (printed(cal["tuf"]["mean_ovl"]), printed(cal["tuf"]["median_ovl"])) == (0.931, 0.978)
    assert printed(cal["tuf"]["mean_width"]) == 0.292
    assert printed(cal["tuf"]["coverage"]) == 0.405


def test_inverse_map_matches_published_predictions(published_dir):
    """With the paper's rounded parameters the tabulated inverse reproduces its 80-step bisection."""
    with open(published_dir / "choice_inverse_uncertainty_predictions.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    choice = np.array([float(row["p_choice"]) for row in rows])
    expected = np.array([float(row["p_choice_inverse_uncertainty"]) for row in rows])
    assert np.abs(LatentFit(0.978, 0.512, 1.0).inverse(choice) - expected).max() < 1e-8


def test_table6(published):
    sens = published["representation_sensitivity"]
    significant = {name: (f"{s['mean_pairwise_tv']:.3g}", f"{s['mean_max_tv']:.3g}") for name, s in sens.items()}
    assert significant == {
        "choice": ("0.0998", "0.181"),
        "noul": ("0.0441", "0.0787"),
        "score": ("0.0656", "0.116"),
    }
    assert {s["latent_problems"] for s in sens.values()} == {92}


def test_worked_decision_example(published):
    example = published["decisions"]["worked_example"]
    assert printed(example["choice"]) == 0.632
    assert printed(example["inverse"]) == 0.400
    assert [printed(v) for v in example["interval"]] == [0.400, 0.767]
    assert example["actions"] == {"raw": "act_true", "inverse": "act_false", "interval": "defer"}
    # The example sits inside the range where the three rules choose three different actions.
    low, high = example["region"]
    assert low <= example["mu_score"] <= high


def test_decision_rules(published):
    dec = published["decisions"]
    rules = dec["rules"]
    for stats in rules.values():
        assert sum(stats["share"].values()) == pytest.approx(1.0)
        assert stats["mean_regret"] >= 0
    assert rules["oracle"]["mean_regret"] == 0
    # On these data inverse calibration recovers most of the regret of reading Choice raw.
    assert rules["inverse"]["mean_regret"] < rules["raw"]["mean_regret"]
    assert set(dec["agreement"]) == {"raw_vs_inverse", "raw_vs_interval", "inverse_vs_interval"}


def test_no_swap_measured(published):
    assert published["option_swap"] is None
