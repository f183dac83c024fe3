"""The isotonic fit (analysis/isotonic.py) against two independent computations: the max–min formula written here
(a different algorithm from PAV: c_i = max over j ≤ i of min over k ≥ i of the weighted mean of points j…k) and
scipy.optimize.isotonic_regression; its two code paths (lockstep over many weightings, one row in plain Python)
give the same bits; ties are pooled; the map evaluates as numpy.interp of the whole fit."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_sys1cal.analysis import isotonic
from pytest_sys1cal.analysis.isotonic import IsotonicMap, Pooled, fit_map, fit_rows


def max_min(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The isotonic least-squares fit of y (in the given order, weights w > 0) by the max–min formula, O(n³)."""
    n = y.size
    means = np.full((n, n), np.nan)
    for j in range(n):
        for k in range(j, n):
            means[j, k] = np.sum(w[j : k + 1] * y[j : k + 1]) / np.sum(w[j : k + 1])
    return np.array([max(min(means[j, k] for k in range(i, n)) for j in range(i + 1)) for i in range(n)])


def random_case(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Answers on a coarse grid (many ties), targets, and several weightings with zeros."""
    n = int(rng.integers(1, 40))
    answers = np.round(rng.random(n), 1)
    target = rng.random(n)
    weights = rng.integers(0, 4, size=(int(rng.integers(1, 6)), n)).astype(float)
    return answers, target, weights


def fits(answers: np.ndarray, target: np.ndarray, weights: np.ndarray) -> tuple[Pooled, np.ndarray, np.ndarray]:
    pooled = Pooled.of(answers)
    w = pooled.sums(weights)
    return pooled, w, fit_rows(w, pooled.sums(weights, target[None, :]))


@pytest.mark.parametrize("seed", range(40))
def test_the_fit_is_the_max_min_formula_and_scipys(seed: int) -> None:
    from scipy.optimize import isotonic_regression

    answers, target, weights = random_case(np.random.default_rng(seed))
    pooled, w, fitted = fits(answers, target, weights)
    for row in range(weights.shape[0]):
        used = w[row] > 0
        if not used.any():
            assert np.isnan(fitted[row]).all()
            continue
        # Each distinct answer is one point: its summed weight and the weighted mean of its targets.
        y = pooled.sums(weights[row : row + 1], target[None, :])[0][used] / w[row][used]
        expected = max_min(y, w[row][used])
        np.testing.assert_allclose(fitted[row][used], expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(fitted[row][used], isotonic_regression(y, weights=w[row][used]).x, atol=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_lockstep_and_one_row_at_a_time_give_the_same_bits(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(100 + seed)
    answers, target = np.round(rng.random(200), 2), rng.random(200)
    weights = rng.integers(0, 3, size=(30, 200)).astype(float)
    monkeypatch.setattr(isotonic, "FEW_ROWS", 0)
    lockstep = fits(answers, target, weights)[2]
    monkeypatch.setattr(isotonic, "FEW_ROWS", 10**6)
    one_by_one = fits(answers, target, weights)[2]
    assert np.array_equal(lockstep, one_by_one, equal_nan=True)


def test_tied_answers_share_one_value_whatever_their_order() -> None:
    rng = np.random.default_rng(7)
    answers, target = np.round(rng.random(300), 1), rng.random(300)
    order = rng.permutation(300)
    first, again = fit_map(answers, target), fit_map(answers[order], target[order])
    assert np.array_equal(first.x, again.x) and np.allclose(first.y, again.y, rtol=0, atol=1e-15)
    fitted = first(answers)
    for value in np.unique(answers):
        assert np.ptp(fitted[answers == value]) == 0.0


def test_the_map_is_numpy_interp_of_the_whole_fit_with_fewer_knots() -> None:
    rng = np.random.default_rng(3)
    answers, target = rng.random(500), rng.random(500) ** 2
    pooled, _, fitted = fits(answers, target, np.ones((1, 500)))
    full = IsotonicMap(pooled.x, fitted[0])
    kept = fit_map(answers, target)
    assert kept.x.size < full.x.size  # the knots inside flat runs are dropped
    probe = np.concatenate([np.linspace(-0.1, 1.1, 2001), answers])
    np.testing.assert_allclose(kept(probe), np.interp(probe, pooled.x, fitted[0]), rtol=0, atol=1e-15)
    assert np.all(np.diff(kept.y) >= 0)
