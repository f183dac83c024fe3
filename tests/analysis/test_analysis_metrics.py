"""The building blocks against brute force or an independent implementation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pytest_sys1cal.analysis.calibration import binned_gap, calibration, equal_mass_bins, equal_width_bins
from pytest_sys1cal.analysis.decisions import ACTIONS, action_risks
from pytest_sys1cal.analysis.items import LEVEL_VALUES, aggregate_items
from pytest_sys1cal.analysis.sensitivity import spread
from pytest_sys1cal.analysis.stats import Clusters, NotEnoughData, sign_flip_p, t_interval, t_test


def test_score_means_equal_per_item_numpy_mean():
    """Repeats of varying number, some without a Score answer: the batched per-item means are np.mean's, bit
    for bit, renormalised; NaN where Score was never asked."""
    rng = np.random.default_rng(3)
    items, expected = [], []
    for i in range(200):
        samples = [{"choice": 0.5} for _ in range(rng.integers(1, 6))]
        for sample in samples:
            if rng.random() < 0.7:
                sample["score"] = (rng.random(10) ** 3).tolist()
        scores = [sample["score"] for sample in samples if "score" in sample]
        mean = np.mean(np.asarray(scores), axis=0) if scores else np.full(10, np.nan)
        items.append(
            {
                "instance_id": f"i{i:03d}",
                "latent_instance_id": f"l{i // 4}",
                "family": "f",
                "representation": "r",
                "p_star": 0.5,
                "samples": samples,
                "error": None,
            }
        )
        expected.append(mean / mean.sum())
    table = aggregate_items(items)
    assert np.isnan(table.score_q[:, 0]).any()
    assert np.array_equal(table.score_q, np.array(expected), equal_nan=True)
    # μ_S: the ten products added exactly, then rounded once (the same float whatever BLAS would add first).
    exact = [math.fsum(row * LEVEL_VALUES) for row in expected]
    assert np.array_equal(table.mu_score, np.array(exact), equal_nan=True)
    with pytest.raises(ValueError):
        aggregate_items([{**items[0], "samples": [{"score": [0.2] * 5}, {"score": [0.2] * 5}]}])


def test_spread_equals_all_pairs():
    rng = np.random.default_rng(0)
    ids = np.repeat([f"latent{j}" for j in range(30)], rng.integers(1, 8, size=30))
    values = np.round(rng.random(ids.size), 2)  # rounded: ties within problems
    order = rng.permutation(ids.size)  # items need not arrive grouped
    ids, values = ids[order], values[order]
    means, maxima = [], []
    for latent in np.unique(ids):
        group = values[ids == latent]
        gaps = [abs(a - b) for a, b in itertools.combinations(group, 2)]
        if gaps:
            means.append(np.mean(gaps))
            maxima.append(max(gaps))
    result = spread(values, ids)
    assert result["latent_problems"] == len(means)
    assert result["mean_pairwise_tv"] == pytest.approx(np.mean(means), rel=1e-12)
    assert result["mean_max_tv"] == pytest.approx(np.mean(maxima), rel=1e-12)


def test_equal_width_bins_use_exact_edges():
    # 0.3 is an edge for B = 10; linspace would place its edge at 0.30000000000000004 and 0.3 one bin lower.
    assert equal_width_bins(np.array([0.0, 0.1, 0.3, 0.7, 0.999, 1.0]), 10).tolist() == [0, 1, 3, 7, 9, 9]


def test_equal_mass_bins_never_split_ties():
    p = np.array([0.2] * 6 + [0.5, 0.6, 0.7, 0.8])
    bins = equal_mass_bins(p, 5)
    assert len(set(bins[:6])) == 1
    assert np.array_equal(equal_mass_bins(p[::-1], 5), bins[::-1])


def test_binned_gap_is_weighted_mean_gap():
    p = np.array([0.1, 0.15, 0.5, 0.9])
    target = np.array([0.2, 0.15, 0.4, 0.95])
    ece, bins = binned_gap(np.array([0, 0, 1, 2]), p, target)
    assert bins == 3
    assert ece == pytest.approx((2 * abs(0.125 - 0.175) + abs(0.5 - 0.4) + abs(0.9 - 0.95)) / 4)


def test_calibration_of_a_perfect_and_a_shifted_model():
    p_star = np.linspace(0.05, 0.95, 50)
    perfect = calibration(p_star, p_star)
    assert (perfect["ece"], perfect["ece_equal_mass"], perfect["brier"]) == (0.0, 0.0, 0.0)
    shifted = calibration(p_star + 0.04, p_star)
    assert shifted["ece"] == pytest.approx(0.04)
    assert shifted["brier"] == pytest.approx(0.04**2)


def test_t_test_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    x = np.random.default_rng(1).normal(0.1, 0.3, size=25)
    for alternative in ("greater", "two-sided"):
        ours = t_test(x, alternative)
        reference = stats.ttest_1samp(x, 0.0, alternative=alternative)
        assert ours.statistic == pytest.approx(reference.statistic)
        assert ours.p_value == pytest.approx(reference.pvalue)
    low, high = stats.ttest_1samp(x, 0.0).confidence_interval(0.95)
    assert t_interval(t_test(x, "two-sided")) == pytest.approx([low, high])
    with pytest.raises(NotEnoughData, match="1 latent problem"):
        t_test(x[:1], "greater")


def test_sign_flip_enumerates_small_samples():
    x = np.array([0.3, -0.1, 0.2, 0.05])
    signs = np.array(list(itertools.product([1, -1], repeat=4)))
    expected = np.mean((signs * x).sum(axis=1) >= x.sum() - 1e-12)
    assert sign_flip_p(x, 0) == expected


def test_sign_flip_random_flips_are_the_int64_draws_of_before():
    # The signs come from the top bit of 32-bit draws; rng.integers(0, 2) drew the same bits, and the test
    # counted flipped sums computed in integers then.
    for seed, size in ((5, 40), (6, 2750), (7, 1001), (8, 33)):
        x = np.random.default_rng(seed).normal(0.01, 0.2, size=size)
        rng = np.random.default_rng(seed)
        exceed = sum(
            int(np.sum((1 - 2 * rng.integers(0, 2, size=(chunk, size))) @ x >= x.sum() - 1e-12 * np.abs(x).sum()))
            for chunk in (250,) * 39 + (249,)
        )
        assert sign_flip_p(x, seed) == (1 + exceed) / 10_000


def test_sign_flip_random_flips_are_seeded():
    x = np.random.default_rng(2).normal(0.05, 0.2, size=40)
    p = sign_flip_p(x, 5)
    assert p == sign_flip_p(x, 5)
    assert 0 < p < 1


def test_cluster_resampling_draws_whole_problems():
    clusters = Clusters.of(["b", "a", "b", "c", "a", "b"])
    assert clusters.sizes.tolist() == [2, 3, 1]
    assert clusters.means(np.array([1.0, 2.0, 3.0, 4.0, 4.0, 5.0])).tolist() == [3.0, 3.0, 4.0]
    counts = clusters.resample_counts(np.random.default_rng(0), 500)
    assert counts.shape == (500, 3)
    assert (counts.sum(axis=1) == 3).all()


def test_bayes_and_minimax_actions():
    p = np.array([0.2, 0.5, 0.7])
    risks = action_risks(p, p, 100.0, 45.0)
    assert [ACTIONS[k] for k in np.argmin(risks, axis=0)] == ["act_false", "defer", "act_true"]
    # P(True) = 0.3 acts False (risk 30); the interval [0.3, 0.6] defers (worst cases 70, 60 against 45).
    wide = action_risks(np.array([0.3]), np.array([0.6]), 100.0, 45.0)
    assert ACTIONS[int(np.argmin(wide[:, 0]))] == "defer"
