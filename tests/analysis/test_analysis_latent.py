"""The latent uncertainty model: the batched solver against scipy, the inverse map, the point fit.

scipy.optimize is the oracle here only: the package fits in numpy (importing scipy.optimize costs ~0.4 s)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from scipy.optimize import least_squares

from pytest_sys1cal.analysis import latent, uncertainty
from pytest_sys1cal.analysis.items import aggregate_items
from pytest_sys1cal.analysis.latent import (
    BLOCK,
    LOWER,
    STARTS,
    UPPER,
    LatentData,
    LatentFit,
    _evaluate,
    _Work,
    curves,
    fit_batch,
    fit_latent_model,
    log_terms,
    one_step_starts,
    peak_mass,
)
from pytest_sys1cal.analysis.uncertainty import bootstrap_fits


def published_data(items: list[dict]) -> LatentData:
    table = aggregate_items(items)
    return LatentData.of(table.mu_score, table.p_choice, table.p_star, table.latent_ids)


def synthetic(truth: tuple[float, float, float], n: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n items with μ uniform on [0, 1] (0 and 1 included) and Choice = f(μ) + noise, clipped to [0, 1]."""
    rng = np.random.default_rng(seed)
    mu = np.concatenate([[0.0, 1.0, 0.5], rng.uniform(0, 1, n - 3)])
    return mu, np.clip(LatentFit(*truth).choice(mu) + rng.normal(0, noise, n), 0, 1)


def scipy_cost(mu: np.ndarray, choice: np.ndarray) -> float:
    """The lowest cost scipy's trust-region-reflective least_squares reaches from any of the starts."""

    def residuals(x: np.ndarray) -> np.ndarray:
        return LatentFit(*x).choice(mu) - choice

    tight = {"ftol": 1e-15, "xtol": 1e-15, "gtol": 1e-15}
    fits = [least_squares(residuals, start, bounds=(LOWER, UPPER), method="trf", **tight) for start in STARTS]
    return min(2 * fit.cost for fit in fits)


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


@pytest.mark.parametrize(
    ("truth", "n", "noise"),
    [
        ((0.6, 1.5, 2.0), 300, 0.03),
        ((0.6, 1.5, 2.0), 40, 0.1),
        ((0.0, 1.0, 1.0), 300, 0.03),  # no effect: a long flat ridge, optimum at β's upper bound
        ((1.0, 0.05, 1.0), 300, 0.03),  # the degenerate corner, at two bounds
        ((0.9, 2.9, 3.9), 300, 0.03),
        ((0.2, 0.3, 3.5), 40, 0.1),
    ],
)
def test_point_fit_equals_or_beats_scipy(truth, n, noise):
    mu, choice = synthetic(truth, n, noise, seed=n)
    fit = fit_latent_model(mu, choice)
    cost = float(np.sum((fit.choice(mu) - choice) ** 2))
    assert cost <= scipy_cost(mu, choice) * (1 + 1e-13)


def test_point_fit_on_the_published_data_equals_or_beats_scipy(published_items):
    data = published_data(published_items)
    cost = float(np.sum((data.fit.choice(data.mu) - data.choice) ** 2))
    assert cost <= scipy_cost(data.mu, data.choice) * (1 + 1e-13)
    # The same optimum from every start: the ridge does not leave λ start-dependent.
    starts = np.array(STARTS)
    fits = fit_batch(data.mu, data.choice, np.ones((len(starts), data.n)), starts, tol=0.0)
    assert np.abs(fits - data.fit.params).max() < 1e-6


def test_batched_weighted_fits_match_scipy(published_items):
    data = published_data(published_items)
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


def reference_evaluate(mu, choice, weights, params):
    """_evaluate as the plain expressions it was before its scratch arrays: fresh temporaries, all 9 sums."""
    logs = (np.log(np.clip(mu, np.finfo(float).tiny, 1.0)), np.log(np.clip(1.0 - mu, np.finfo(float).tiny, 1.0)))
    lam, alpha, beta = params[:, 0, None], params[:, 1, None], params[:, 2, None]
    g = np.exp(alpha * logs[0] + beta * logs[1])
    d = 1.0 - lam * g
    residual = mu / d - choice
    cost = np.sum(weights * residual**2, axis=1)
    m = mu * g / (d * d)
    features = np.stack([np.ones_like(mu), logs[0], logs[1]])
    products = (features[:, None, :] * features[None, :, :]).reshape(9, -1)
    scale = np.concatenate([np.ones_like(lam), lam, lam], axis=1)
    weighted = weights * m
    sums = np.einsum("bn,kn->bk", weighted * m, products).reshape(-1, 3, 3)
    hess = sums * scale[:, :, None] * scale[:, None, :]
    grad = np.einsum("bn,kn->bk", weighted * residual, features) * scale
    return cost, hess, grad


def reference_curvature(mu, choice, weights, params):
    """Σ w·(f − Choice)·∇²f by the plain second derivatives of f = μ/(1 − λ·g), g = μ^α·(1−μ)^β."""
    logs = (np.log(np.clip(mu, np.finfo(float).tiny, 1.0)), np.log(np.clip(1.0 - mu, np.finfo(float).tiny, 1.0)))
    out = np.empty((params.shape[0], 3, 3))
    for row, (lam, alpha, beta) in enumerate(params):
        g = np.exp(alpha * logs[0] + beta * logs[1])
        d = 1.0 - lam * g
        m = mu * g / d**2
        q = (1.0 + lam * g) / d
        second = {
            (0, 0): m * 2 * g / d,
            (0, 1): m * q * logs[0],
            (0, 2): m * q * logs[1],
            (1, 1): m * q * lam * logs[0] ** 2,
            (1, 2): m * q * lam * logs[0] * logs[1],
            (2, 2): m * q * lam * logs[1] ** 2,
        }
        wr = weights[row] * (mu / d - choice)
        for (i, j), values in second.items():
            out[row, i, j] = out[row, j, i] = np.sum(wr * values)
    return out


def test_the_scratch_array_evaluation_gives_the_bits_of_the_plain_expressions():
    # mu includes 0 and 1 (the clipped logs) and the rows include bounds and a zero-weight row.
    mu, choice = synthetic((0.6, 1.5, 2.0), 200, 0.05, seed=3)
    rng = np.random.default_rng(5)
    weights = rng.integers(0, 3, size=(5, mu.size)).astype(float)
    weights[2] = 0.0
    params = np.array([[0.6, 1.5, 2.0], [0.0, 0.05, 1.0], [1.0, 3.0, 4.0], [0.3, 0.7, 1.2], [0.9, 2.9, 3.9]])
    logs = log_terms(mu)
    work = _Work(mu, logs, rows=8)  # more rows than used: views of the first five
    # Reused: a second call on fewer rows overwrites the scratch and still agrees; the curvature (computed
    # last, from the same scratch) changes none of the other three.
    for rows, curvature in ((slice(None), False), (slice(3, None), False), (slice(None), True)):
        *got, curv = _evaluate(mu, logs, choice, weights[rows], params[rows], work, curvature)
        for got_part, expected in zip(got, reference_evaluate(mu, choice, weights[rows], params[rows]), strict=True):
            assert np.array_equal(got_part, expected)
        assert (curv is None) is not curvature
    expected = reference_curvature(mu, choice, weights, params)
    assert np.allclose(curv, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def test_the_curvature_completes_the_hessian_of_the_cost():
    # Central differences of the gradient 2·JᵀW(f − Choice) are the cost's Hessian 2·(JᵀWJ + curvature).
    mu, choice = synthetic((0.6, 1.5, 2.0), 300, 0.05, seed=8)
    weights = np.random.default_rng(2).integers(1, 4, size=(3, mu.size)).astype(float)
    params = np.array([[0.6, 1.5, 2.0], [0.3, 0.7, 1.2], [0.9, 2.9, 3.9]])
    logs = log_terms(mu)
    work = _Work(mu, logs, rows=3)
    _, hess, _, curv = _evaluate(mu, logs, choice, weights, params, work, curvature=True)
    step = 1e-6
    for k in range(3):
        shift = np.zeros(3)
        shift[k] = step
        up = _evaluate(mu, logs, choice, weights, params + shift, work)[2]
        down = _evaluate(mu, logs, choice, weights, params - shift, work)[2]
        numeric = (up - down) / (2 * step)  # column k of JᵀWJ + curvature
        assert np.allclose(numeric, (hess + curv)[:, :, k], rtol=1e-6, atol=1e-8)
        assert not np.allclose(numeric, hess[:, :, k], rtol=1e-6, atol=1e-8)  # Gauss–Newton alone is not it


def clustered(truth: tuple[float, float, float], problems: int, per: int, seed: int) -> LatentData:
    """problems latent problems of `per` renderings: a shared μ and Choice shift per problem, item noise."""
    rng = np.random.default_rng(seed)
    centre = np.repeat(rng.uniform(0.05, 0.95, problems), per)
    mu = np.clip(centre + rng.normal(0, 0.03, centre.size), 0.0, 1.0)
    shift = np.repeat(rng.normal(0, 0.03, problems), per)
    choice = LatentFit(*truth).choice(mu) + shift + rng.normal(0, 0.02, mu.size)
    ids = np.repeat([f"p{j:04d}" for j in range(problems)], per)
    return LatentData.of(mu, choice, np.full(mu.size, 0.5), ids)


@pytest.mark.parametrize(
    ("truth", "problems", "per"),
    [
        ((0.6, 1.5, 2.0), 600, 3),  # interior, well identified: the one step lands near every minimiser
        ((0.0, 1.0, 1.0), 500, 2),  # no effect: λ at its bound, α and β on a flat ridge
        ((1.0, 0.05, 1.0), 500, 1),  # the degenerate corner, one rendering per problem
        ((0.3, 2.9, 3.9), 520, 4),
    ],
)
def test_one_step_starts_reach_the_minimisers_of_point_fit_starts(truth, problems, per):
    # Tolerance: the minimiser is resolved to ~1e-9 (fit_batch's polish); the ridge cases move λ most.
    data = clustered(truth, problems, per, seed=problems + per)
    assert data.fit is not None
    old = bootstrap_fits(data, data.fit, 3, 120, one_step=False)
    new = bootstrap_fits(data, data.fit, 3, 120, one_step=True)
    assert np.all((new >= LOWER) & (new <= UPPER))
    weights = data.clusters.resample_counts(np.random.default_rng(3), 120)[:, data.clusters.codes]
    cost_old = np.sum(weights * (curves(data.mu, old) - data.choice) ** 2, axis=1)
    cost_new = np.sum(weights * (curves(data.mu, new) - data.choice) ** 2, axis=1)
    assert np.all(cost_new <= cost_old * (1 + 1e-12))  # never a worse refit
    # Where the minimiser is well defined the two starts agree to ~1e-10 in u_max; on the flat λ/α/β ridge
    # (the last case) a refit may settle elsewhere along it (α by 1.0, λ by 1e-5, u_max by 5e-7): the
    # stated tolerance is a thousandth of the bootstrap SD, far inside a percentile's Monte Carlo error.
    for old_values, new_values in ((peak_mass(old), peak_mass(new)), (old[:, 0], new[:, 0])):
        assert np.abs(new_values - old_values).max() <= 1e-3 * old_values.std()


def test_one_step_starts_fall_back_where_the_step_is_singular_or_worse():
    data = clustered((0.0, 1.0, 1.0), 50, 2, seed=9)  # λ = 0: α and β do not move f, JᵀJ is singular
    assert data.fit is not None
    counts = data.clusters.resample_counts(np.random.default_rng(0), 40)
    starts, costs = one_step_starts(data.mu, data.choice, data.clusters, counts, data.fit)
    assert np.all(np.isfinite(starts)) and np.all((starts >= LOWER) & (starts <= UPPER))
    weights = counts[:, data.clusters.codes]
    expected = np.sum(weights * (data.fit.choice(data.mu) - data.choice) ** 2, axis=1)
    assert np.allclose(costs, expected, rtol=1e-12)  # the point fit's cost, from per-problem sums
    # A start that is worse than the point fit is replaced by it: where the far-off start costs more, the
    # refit is the point-fit refit, bit for bit (the others start far off, and may end elsewhere on the ridge).
    far = np.tile(UPPER, (40, 1))
    point = np.tile(data.fit.params, (40, 1))
    worse = np.sum(weights * (curves(data.mu, far) - data.choice) ** 2, axis=1) > costs
    assert 0 < worse.sum() < 40
    from_far = fit_batch(data.mu, data.choice, weights, far, fallback=(point, costs))
    assert np.array_equal(from_far[worse], fit_batch(data.mu, data.choice, weights, point)[worse])


@pytest.mark.parametrize("one_step", [False, True])
def test_bootstrap_refits_on_threads_are_the_same_bits_as_one_after_another(monkeypatch, one_step):
    # 600 × 3 renderings: BLOCK // 1800 = 72 resamples per block, so 300 resamples are 5 blocks on the threads.
    data = clustered((0.6, 1.5, 2.0), 600, 3, seed=11)
    assert data.fit is not None and BLOCK // data.n < 300
    monkeypatch.setattr(uncertainty, "available_cores", lambda: 4)
    monkeypatch.setattr(uncertainty, "THREADED_WORK", data.n * 300)  # this much work goes to the threads
    threads = []

    def fit_batch(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return real_fit_batch(*args, **kwargs)

    real_fit_batch = uncertainty.fit_batch
    monkeypatch.setattr(uncertainty, "fit_batch", fit_batch)
    threaded = bootstrap_fits(data, data.fit, 5, 300, one_step=one_step)
    assert len(threads) == 5 and all(name.startswith("sys1cal-bootstrap") for name in threads)
    threads.clear()
    monkeypatch.setattr(uncertainty, "THREADED_WORK", data.n * 300 + 1)  # less: one block after another
    serial = bootstrap_fits(data, data.fit, 5, 300, one_step=one_step)
    assert len(threads) == 5 and not any(name.startswith("sys1cal-bootstrap") for name in threads)
    assert np.array_equal(threaded, serial)
    assert len(np.unique(threaded[:, 0])) > 100  # the resamples' own refits, not one value copied


def shrunk_score(problems: int, per: int, seed: int) -> LatentData:
    """A misspecified set like bench_scale.py's 18k one: μ_S shrunk toward 0.5 (a Score read off coarse levels),
    Choice unbiased around the truth, so Choice − μ_S changes sign at 0.5 and the fit sits at α = 3, β = 1."""
    rng = np.random.default_rng(seed)
    truth = np.clip(np.repeat(rng.uniform(0.02, 0.98, problems), per) + rng.normal(0, 0.02, problems * per), 0, 1)
    choice = np.clip(truth + rng.normal(0, 0.05, truth.size), 0, 1)
    ids = np.repeat([f"p{j:04d}" for j in range(problems)], per)
    return LatentData.of(0.5 + 0.8 * (truth - 0.5), choice, np.full(truth.size, 0.5), ids)


def refits(data: LatentData, resamples: int, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    """(weights, fit_batch's refits) from one-step starts, as bootstrap_fits runs them with 500+ problems."""
    assert data.fit is not None
    counts = data.clusters.resample_counts(np.random.default_rng(0), resamples)
    starts, costs = one_step_starts(data.mu, data.choice, data.clusters, counts, data.fit)
    weights = counts[:, data.clusters.codes]
    point = np.tile(data.fit.params, (resamples, 1))
    return weights, fit_batch(data.mu, data.choice, weights, starts, fallback=(point, costs), **kwargs)


def rows_through(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Records the rows of every call of latent.<name> from now on (its fifth argument: parameters or starts)."""
    rows: list[int] = []
    real = getattr(latent, name)

    def counted(*args, **kwargs):
        rows.append(args[4].shape[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(latent, name, counted)
    return rows


def test_newton_first_settles_refits_at_the_bounds_in_two_passes_over_the_items(monkeypatch):
    # The bootstrap's cost is passes over the items (_evaluate's rows). At a fit on the bounds (α = 3, β = 1)
    # Newton's steps from the one-step starts settle each refit in the start's pass and one step (its next,
    # last step needs none); Levenberg–Marquardt from the same starts took 4.1. A count, not a timing.
    data = shrunk_score(600, 3, seed=1)
    assert data.fit is not None and data.fit.alpha == 3.0 and data.fit.beta == 1.0
    passes = rows_through(monkeypatch, "_evaluate")
    _, newton = refits(data, 40, newton_first=True)
    newton_passes, passes[:] = sum(passes) / 40, []
    _, marquardt = refits(data, 40)
    assert newton_passes <= 2.2 and 1.5 * newton_passes <= sum(passes) / 40
    assert np.abs(newton - marquardt).max() < 1e-9  # the same minimisers


def test_newton_first_hands_rows_it_does_not_settle_to_levenberg_marquardt(monkeypatch):
    # Near the corner with the active set changing (β on and off its bound) undamped Newton steps do not
    # settle every refit: Levenberg–Marquardt goes on from where they stopped, and ends where it would alone.
    data = clustered((0.1, 3.0, 1.0), 600, 4, seed=1)
    ran = rows_through(monkeypatch, "_levenberg_marquardt")
    weights, newton = refits(data, 40, newton_first=True)
    assert 0 < sum(ran) < 40
    _, marquardt = refits(data, 40)
    cost_newton, cost_marquardt = (
        np.sum(weights * (curves(data.mu, p) - data.choice) ** 2, axis=1) for p in (newton, marquardt)
    )
    assert np.all(cost_newton <= cost_marquardt * (1 + 1e-12))
    assert np.abs(peak_mass(newton) - peak_mass(marquardt)).max() < 1e-7


def whole_grid_lambdas(data: LatentData, fit: LatentFit) -> np.ndarray:
    """The paper's λ_j by brute force: every grid point's sum for every problem, np.argmin (ties: smallest λ)."""
    logs = log_terms(data.mu)
    g = np.exp(fit.alpha * logs[0] + fit.beta * logs[1])
    sums = data.clusters.sums((data.mu / (1.0 - uncertainty.LAMBDA_GRID[:, None] * g) - data.choice) ** 2)
    return uncertainty.LAMBDA_GRID[np.argmin(sums, axis=0)]


@pytest.mark.parametrize("truth", [(0.6, 1.5, 2.0), (0.0, 1.0, 1.0), (1.0, 0.05, 1.0), (0.1, 3.0, 1.0)])
def test_latent_lambdas_are_the_whole_grid_argmin(truth):
    data = clustered(truth, 400, 3, seed=21)
    assert data.fit is not None
    lambdas = uncertainty.latent_lambdas(data, data.fit)
    assert np.array_equal(lambdas, whole_grid_lambdas(data, data.fit))
    assert np.unique(lambdas).size > 20  # the problems' own minimisers, across the grid


def test_latent_lambdas_break_ties_at_the_smallest_lambda():
    # Problem a: μ ∈ {0, 1} only, so g = 0 and every λ ties (λ = 0 wins). Problem b: Choice = f(μ; λ = 0.5)
    # exactly at 0.5, and in a later coarse interval than the fit's. Problem c: Choice below μ, best at λ = 0.
    fit = LatentFit(0.5, 1.0, 1.0)
    mu = np.array([0.0, 1.0, 0.3, 0.6, 0.4, 0.7, 0.2, 0.5, 0.8])
    choice = np.concatenate([[0.2, 0.9], LatentFit(0.5, 1.0, 1.0).choice(mu[2:4]), mu[4:6] - 0.1, mu[6:] + 0.05])
    ids = np.array(["a", "a", "b", "b", "c", "c", "d", "d", "d"])
    data = LatentData.of(mu, choice, np.full(mu.size, 0.5), ids)
    lambdas = uncertainty.latent_lambdas(data, fit)
    assert np.array_equal(lambdas, whole_grid_lambdas(data, fit))
    assert lambdas[:3].tolist() == [0.0, 0.5, 0.0]
