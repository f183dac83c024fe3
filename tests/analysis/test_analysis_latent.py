"""The latent uncertainty model: the batched solver against scipy, the inverse map, the point fit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import least_squares

from pytest_sys1cal.analysis.latent import LOWER, UPPER, LatentData, LatentFit, fit_batch, fit_latent_model


def test_inverse_map_undoes_the_curve():
    fit = LatentFit(0.8, 1.2, 1.5)
    mu = np.linspace(0, 1, 501)
    assert np.abs(fit.inverse(fit.choice(mu)) - mu).max() < 1e-6
    assert not fit.inverse_ill_conditioned
    assert LatentFit(1.0, 0.05, 1.0).inverse_ill_conditioned


def test_fit_recovers_the_curve():
    rng = np.random.default_rng(4)
    truth = LatentFit(0.6, 1.5, 2.0)
    mu = rng.uniform(0.02, 0.98, 2000)
    fit = fit_latent_model(mu, truth.choice(mu) + rng.normal(0, 0.01, mu.size))
    grid = np.linspace(0.05, 0.95, 19)
    # The curve is identified even where λ alone is not.
    assert np.abs(fit.choice(grid) - truth.choice(grid)).max() < 0.01
    assert fit.u_max == pytest.approx(truth.u_max, abs=0.005)


def test_batched_weighted_fits_match_scipy(published_items):
    from pytest_sys1cal.analysis.items import aggregate_items

    table = aggregate_items(published_items)
    data = LatentData.of(table.mu_score, table.p_choice, table.p_star, table.latent_ids)
    weights = data.clusters.resample_counts(np.random.default_rng(0), 6)[:, data.clusters.codes]
    batched = fit_batch(data.mu, data.choice, weights, np.tile(data.fit.params, (6, 1)))

    def cost(params: np.ndarray, w: np.ndarray) -> float:
        return float(np.sum(w * (LatentFit(*params).choice(data.mu) - data.choice) ** 2))

    for w, params in zip(weights, batched, strict=True):
        root = np.sqrt(w)
        reference = least_squares(
            lambda x, root=root: root * (LatentFit(*x).choice(data.mu) - data.choice),
            data.fit.params,
            bounds=(LOWER, UPPER),
            method="trf",
            ftol=1e-12,
            xtol=1e-12,
            gtol=1e-12,
        )
        assert cost(params, w) <= cost(reference.x, w) * (1 + 1e-9)
        assert LatentFit(*params).u_max == pytest.approx(LatentFit(*reference.x).u_max, abs=1e-4)
