"""Size and power of the test of H0: λ = 0 on simulated runs, against the paper's λ_j statistic.

Simulated run: 92 latent problems with 3–5 renderings each; μ_S = p* + N(0, 0.05²) per rendering and
Choice = f(μ_S; λ, α = 1.5, β = 2) + N(0, 0.05²), so λ = 0 means Choice = μ_S + noise.
"""

from __future__ import annotations

import numpy as np
import pytest

from pytest_sys1cal.analysis.latent import LatentData, LatentFit
from pytest_sys1cal.analysis.uncertainty import uncertainty_table

SIMULATIONS = 200
LEVEL = 0.05


def simulate(seed: int, lam: float) -> LatentData:
    rng = np.random.default_rng(seed)
    latent = np.repeat(np.arange(92), rng.integers(3, 6, size=92))
    p_star = rng.uniform(0.15, 0.85, size=92)[latent]
    mu = np.clip(p_star + rng.normal(0, 0.05, latent.size), 0, 1)
    choice = np.clip(LatentFit(lam, 1.5, 2.0).choice(mu) + rng.normal(0, 0.05, latent.size), 0, 1)
    return LatentData.of(mu, choice, p_star, latent.astype(str))


def rejection_rates(lam: float) -> dict[str, float]:
    rejected = {"valid": 0, "permutation": 0, "paper": 0}
    for seed in range(SIMULATIONS):
        # bootstrap=0: the intervals play no part in the tests and would dominate the run time.
        result = uncertainty_table(simulate(seed, lam), seed=seed, bootstrap=0)
        rejected["valid"] += result["test"]["p_value"] < LEVEL
        rejected["permutation"] += result["test"]["permutation_p_value"] < LEVEL
        rejected["paper"] += result["lambda_latent_p"] is not None and result["lambda_latent_p"] < LEVEL
    return {name: count / SIMULATIONS for name, count in rejected.items()}


@pytest.mark.slow
def test_valid_test_holds_its_size_and_has_power_where_the_paper_statistic_does_not():
    null = rejection_rates(0.0)
    alternative = rejection_rates(0.3)
    assert null["valid"] <= 0.07
    assert null["permutation"] <= 0.07
    assert alternative["valid"] >= 0.80
    assert alternative["permutation"] >= 0.80
    # The paper's clipped λ_j t-test rejects (nearly) every run in which Choice is μ_S plus noise.
    assert null["paper"] >= 0.95
