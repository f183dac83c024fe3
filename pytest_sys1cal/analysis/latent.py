"""The latent uncertainty model behind Choice: curve, inverse map and least-squares fits.

Choice = f(μ) = μ / (1 − λ·μ^α·(1−μ)^β), with μ = μ_S the Score expectation. Reading: T = μ is the mass on
"true", U = λ·μ^α·(1−μ)^β the mass the model is uncertain about, F = 1 − T − U; Choice renormalises U
away, f = T/(T+F), and the T/U/F interval for P(True) is [T, T+U].
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .stats import Clusters, NotEnoughData

# Bounds of (λ, α, β). λ ≤ 1 and β ≥ 1 keep F ≥ 0 for every μ, hence μ ≤ f(μ) ≤ 1 with f increasing
# (docs/statistics.md §2.1); the model therefore cannot express Choice < μ_S.
LOWER = np.array([0.0, 0.05, 1.0])
UPPER = np.array([1.0, 3.0, 4.0])
# λ trades off against α+β, so the objective is flat along a ridge: several starts, keep the lowest cost.
STARTS = tuple(itertools.product((0.5, 0.95), (0.5, 1.5), (1.0, 2.5)))
# f is tabulated here for the inverse map (interpolation error ~1e-9 against 80-step bisection).
MU_GRID = np.linspace(0.0, 1.0, 20001)
# Below this slope of f the inverse map amplifies Choice noise enormously (degenerate corner α→0, λ=1).
MIN_INVERSE_SLOPE = 1e-3
# |Choice − μ_S| at or below this is float rounding between two ways of computing one probability (e.g. a
# baseline that derives Choice from its own Score), not a difference.
ROUNDING = 1e-12
# Rows × items per block of the batched fits (1 MiB per float array). A step makes about ten such arrays;
# at this size they stay in cache and the allocator recycles them, where multi-megabyte ones are mapped and
# zero-filled afresh every step (at 400_000 a fresh process spent as long in page faults as in arithmetic).
BLOCK = 131_072
TINY = np.finfo(float).tiny
# Gauss–Newton steps after Levenberg–Marquardt (_polish), and how far above its cost a polished point may
# be: the cost's rounding, summed over the items.
POLISH_STEPS = 8
COST_ROUNDING = 1e-12
# A Gauss–Newton step below this (in λ, α, β) is not taken: the fit is then that close to its minimiser,
# 1000 times inside the 1e-9 that tests/test_golden_reports.py allows between machines.
STEP_FLOOR = 1e-12
# A Newton step at most this long (in λ, α, β) is the last, taken without the pass over the items that would only
# confirm it: Newton's error after a step s is about |s|² × (how fast the Hessian changes ÷ its smallest
# eigenvalue), ~1e-14 here, as far inside the goldens' 1e-9 as STEP_FLOOR's own margin.
LAST_STEP = 1e-7
# A system whose determinant is below this share of its diagonal's product (1 for orthogonal rows, by
# Hadamard's inequality) is not solved: its step would be rounding.
SINGULAR = 1e-12


def uncertain_mass(
    mu: np.ndarray, lam: float | np.ndarray, alpha: float | np.ndarray, beta: float | np.ndarray
) -> np.ndarray:
    """U(μ) = λ·μ^α·(1−μ)^β, broadcasting over parameters and items."""
    return lam * np.power(mu, alpha) * np.power(1 - mu, beta)


def peak_mass(params: np.ndarray) -> np.ndarray:
    """U_max = U(α/(α+β)) = λ·α^α·β^β/(α+β)^(α+β) for parameter rows (..., 3) of (λ, α, β).

    Identified even where λ alone is not: λ trades off against the width α+β of the bump."""
    lam, alpha, beta = params[..., 0], params[..., 1], params[..., 2]
    return uncertain_mass(alpha / (alpha + beta), lam, alpha, beta)


@dataclass(frozen=True)
class LatentFit:
    lam: float
    alpha: float
    beta: float

    def mass(self, mu: np.ndarray) -> np.ndarray:
        """U(μ), the uncertain mass."""
        return uncertain_mass(mu, self.lam, self.alpha, self.beta)

    def choice(self, mu: np.ndarray) -> np.ndarray:
        """f(μ), the Choice probability the model predicts from the Score expectation."""
        return mu / (1 - self.mass(mu))

    @property
    def u_peak_at(self) -> float:
        """μ where U peaks: α/(α+β)."""
        return self.alpha / (self.alpha + self.beta)

    @property
    def params(self) -> np.ndarray:
        """(λ, α, β), the row layout of the batched fits."""
        return np.array([self.lam, self.alpha, self.beta])

    @property
    def u_max(self) -> float:
        return float(peak_mass(self.params))

    @cached_property
    def _choice_table(self) -> np.ndarray:
        # f is increasing for admissible parameters; the running maximum guards against rounding.
        return np.maximum.accumulate(self.choice(MU_GRID))

    def inverse(self, choice: np.ndarray) -> np.ndarray:
        """f⁻¹: Choice back on the μ scale (inverse calibration)."""
        return np.interp(choice, self._choice_table, MU_GRID)

    @property
    def inverse_ill_conditioned(self) -> bool:
        return bool(np.min(np.diff(self._choice_table)) / MU_GRID[1] < MIN_INVERSE_SLOPE)


@dataclass(frozen=True)
class LatentData:
    """The renderings with both a Choice and a Score answer, and the model fitted on their item means."""

    mu: np.ndarray
    choice: np.ndarray
    p_star: np.ndarray
    clusters: Clusters
    fit: LatentFit | None
    reason: str | None  # why `fit` is None

    @classmethod
    def of(cls, mu: np.ndarray, choice: np.ndarray, p_star: np.ndarray, latent_ids: np.ndarray) -> LatentData:
        both = ~np.isnan(mu) & ~np.isnan(choice)
        mu, choice = mu[both], choice[both]
        try:
            fit, reason = fit_latent_model(mu, choice), None
        except NotEnoughData as exc:
            fit, reason = None, str(exc)
        return cls(mu, choice, p_star[both], Clusters.of(latent_ids[both]), fit, reason)

    @property
    def n(self) -> int:
        return self.mu.size

    @property
    def gap(self) -> np.ndarray:
        """Choice − μ_S per item, rounding-level differences set to 0."""
        gap = self.choice - self.mu
        return np.where(np.abs(gap) <= ROUNDING, 0.0, gap)


def curves(mu: np.ndarray, params: np.ndarray) -> np.ndarray:
    """f(μ) for each row of parameters (..., 3) of (λ, α, β): shape (..., n)."""
    return _choice(mu, log_terms(mu), params)


def log_terms(mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Clipped so that 0·log 0 terms of the Jacobian are 0, not NaN; g itself still vanishes at μ ∈ {0, 1}.
    return np.log(np.clip(mu, TINY, 1.0)), np.log(np.clip(1.0 - mu, TINY, 1.0))


def _split(params: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(λ, α, β) columns of params (..., 3), shaped to broadcast against items (n,)."""
    return params[..., 0, None], params[..., 1, None], params[..., 2, None]


def _choice(mu: np.ndarray, logs: tuple[np.ndarray, np.ndarray], params: np.ndarray) -> np.ndarray:
    lam, alpha, beta = _split(params)
    return mu / (1.0 - lam * np.exp(alpha * logs[0] + beta * logs[1]))


class _Work:
    """Scratch arrays of one batched fit, (rows, n) each, allocated once and reused by every evaluation.

    Fresh (rows × n) temporaries per step cost more than the arithmetic on them: a block of a few rows over
    18k items is about 1 MiB per array, which glibc maps and unmaps (and the kernel zero-fills) afresh at
    each step, about 4× the arithmetic in a fresh process. Written with out=, the same operations in the
    same order give the same bits as the expressions they replace (tests/analysis/test_analysis_latent.py).
    """

    def __init__(self, mu: np.ndarray, logs: tuple[np.ndarray, np.ndarray], rows: int) -> None:
        self.features = np.stack([np.ones_like(mu), logs[0], logs[1]])  # (3, n)
        # (6, n): the products f_i·f_j of PAIRS, each sum of JᵀWJ once (it is symmetric).
        self.products = np.stack([self.features[i] * self.features[j] for i, j in PAIRS])
        self.buffers = np.empty((7, rows, mu.size))

    def arrays(self, rows: int) -> tuple[np.ndarray, ...]:
        return tuple(buffer[:rows] for buffer in self.buffers[:6])

    def rows_of(self, weights: np.ndarray, todo: np.ndarray) -> np.ndarray:
        """weights[todo], in the last buffer unless it is every row (valid until the next call)."""
        if todo.size == weights.shape[0]:
            return weights
        return np.take(weights, todo, axis=0, out=self.buffers[6][: todo.size])


# The upper triangle of JᵀWJ, row by row, and where each of the 9 entries is found in it.
PAIRS = ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))
FULL = np.array([0, 1, 2, 1, 3, 4, 2, 4, 5])
# The (α, β) block of a 3 × 3 matrix over (λ, α, β): where the curvature's sums are scaled by λ.
ALPHA_BETA = np.array([[False, False, False], [False, True, True], [False, True, True]])


def _evaluate(
    mu: np.ndarray,
    logs: tuple[np.ndarray, np.ndarray],
    choice: np.ndarray,
    weights: np.ndarray,
    params: np.ndarray,
    work: _Work,
    curvature: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """At parameter rows (b, 3): the cost Σ w·(f − Choice)² (b,), JᵀWJ (b, 3, 3), JᵀW(f − Choice) (b, 3),
    J the Jacobian of f, and (curvature) the rest of the cost's Hessian, Σ w·(f − Choice)·∇²f (b, 3, 3).

    ∂f/∂(λ, α, β) = m·(1, λ·log μ, λ·log(1−μ)) with m = μ·g/(1 − λ·g)², g = μ^α·(1−μ)^β: per item a
    scalar times a vector that does not depend on the parameters. Both sums are therefore matrix products
    with per-item constants, and the (b, 3, n) Jacobian is never formed. Every (b, n) array is one of
    work's (no allocation per step)."""
    lam, alpha, beta = _split(params)
    g, d, residual, m, weighted, scratch = work.arrays(params.shape[0])
    np.multiply(alpha, logs[0], out=g)
    np.multiply(beta, logs[1], out=scratch)
    np.exp(np.add(g, scratch, out=g), out=g)  # g = μ^α·(1−μ)^β
    np.subtract(1.0, np.multiply(lam, g, out=d), out=d)  # d = 1 − λ·g
    np.subtract(np.divide(mu, d, out=residual), choice, out=residual)  # f − Choice
    cost = np.sum(np.multiply(weights, np.square(residual, out=scratch), out=scratch), axis=1)
    np.divide(np.multiply(mu, g, out=m), np.multiply(d, d, out=scratch), out=m)  # m = μ·g/d²
    np.multiply(weights, m, out=weighted)
    scale = np.concatenate([np.ones_like(lam), lam, lam], axis=1)  # (b, 3): 1, λ, λ
    # einsum, not @: a (b, n) × (n, 6) matmul is big enough for OpenBLAS to thread, and threads that wait
    # for a busy core cost more than the whole product (2–4× slower fits on a loaded 2-core machine).
    sums = np.einsum("bn,kn->bk", np.multiply(weighted, m, out=scratch), work.products)[:, FULL].reshape(-1, 3, 3)
    hess = sums * scale[:, :, None] * scale[:, None, :]
    grad = np.einsum("bn,kn->bk", np.multiply(weighted, residual, out=scratch), work.features) * scale
    return cost, hess, grad, _curvature(g, d, scratch, lam, work) if curvature else None


def _curvature(g: np.ndarray, d: np.ndarray, wmr: np.ndarray, lam: np.ndarray, work: _Work) -> np.ndarray:
    """Σ w·r·∇²f (b, 3, 3) from _evaluate's g, d and w·m·r (r = f − Choice), overwriting g and d.

    ∂²f/∂λ² = m·2g/d; the other second derivatives are m·q times those of (λ, α, β) ↦ (1, λ·log μ, λ·log(1−μ))
    products: ∂²f/∂λ∂α = m·q·log μ, ∂²f/∂α² = m·q·λ·log²μ, …, with q = (1 + λ·g)/d. Gauss–Newton drops this
    term; where the residuals are large (a misspecified curve) it is what keeps Newton's convergence quadratic."""
    weighted = work.arrays(g.shape[0])[4]  # _evaluate is done with it
    lam_lam = 2.0 * np.einsum("bn,bn->b", wmr, np.divide(g, d, out=g))
    np.divide(np.subtract(2.0, d, out=g), d, out=d)  # q = (1 + λ·g)/d = (2 − d)/d
    sums = np.einsum("bn,kn->bk", np.multiply(wmr, d, out=weighted), work.products)
    sums[:, 0] = lam_lam
    return sums[:, FULL].reshape(-1, 3, 3) * np.where(ALPHA_BETA, lam[:, :, None], 1.0)


def fit_latent_model(mu: np.ndarray, choice: np.ndarray) -> LatentFit:
    """Bounded ordinary least squares of f(μ) − Choice over items.

    Levenberg–Marquardt from every start at once (fit_batch), each run until no step lowers its cost
    (tol=0: on the flat ridge a looser stop leaves λ start-dependent, and Newton's finish does not always
    recover it: with tol=1e-12 a 40-item fit stopped 3e-13 above scipy's cost); the lowest cost wins."""
    inside = int(np.sum((mu > 0) & (mu < 1)))
    if inside < 4:
        raise NotEnoughData(
            f"not enough data: {inside} item(s) with a Score expectation strictly between 0 and 1 "
            "(the uncertainty term vanishes at 0 and 1)"
        )
    starts = np.array(STARTS)
    fits = fit_batch(mu, choice, np.ones((len(starts), mu.size)), starts, tol=0.0)
    costs = np.sum((curves(mu, fits) - choice) ** 2, axis=1)
    return LatentFit(*(float(v) for v in fits[np.argmin(costs)]))


def fit_batch(
    mu: np.ndarray,
    choice: np.ndarray,
    weights: np.ndarray,
    starts: np.ndarray,
    max_iter: int = 100,
    tol: float = 1e-12,
    fallback: tuple[np.ndarray, np.ndarray] | None = None,
    newton_first: bool = False,
) -> np.ndarray:
    """Weighted least-squares (λ, α, β) for many (weights, start) rows at once: (B, n), (B, 3) → (B, 3).

    One projected Levenberg–Marquardt run in numpy over all rows together: the point fit from its starts,
    and the latent bootstrap warm-started at the point fit. A parameter at a bound whose gradient points
    outward is held fixed for that step (active set), and steps are projected back into the box. A row
    stops when an accepted step lowers its cost by at most tol × cost, when no step lowers it any more
    (damping above 1e8), or after max_iter steps; then Newton steps put it on the minimiser (_polish).
    fallback: (B, 3) other starts and their (B,) costs; a row whose start costs more than its fallback's
    starts at the fallback instead (one_step_starts: where the one step went the wrong way on the ridge).
    newton_first: starts close to their minimisers (one_step_starts) go to the Newton steps directly, and only
    a row that they do not settle runs Levenberg–Marquardt, from where they stopped.
    """
    logs = log_terms(mu)
    out = np.empty((weights.shape[0], 3))
    rows = max(1, BLOCK // max(mu.size, 1))
    work = _Work(mu, logs, min(rows, weights.shape[0]))
    for first in range(0, weights.shape[0], rows):
        block = slice(first, first + rows)
        other = None if fallback is None else (fallback[0][block], fallback[1][block])
        w = weights[block]
        x, cost, hess, grad, curv = _start(mu, logs, choice, w, starts[block], work, other, curvature=newton_first)
        settled = np.zeros(x.shape[0], dtype=bool)
        if newton_first:  # Levenberg–Marquardt goes on from where Newton's steps stopped
            x, settled, (cost, hess, grad) = _polish(mu, logs, choice, w, x, cost, hess, grad, curv, work)
            out[block] = x
        rest = np.flatnonzero(~settled)
        if rest.size:
            w = w if rest.size == x.shape[0] else w[rest]
            fitted = _levenberg_marquardt(
                mu, logs, choice, w, x[rest], cost[rest], hess[rest], grad[rest], max_iter, tol, work
            )
            out[first + rest] = _polish(mu, logs, choice, w, *fitted, None, work)[0]
    return out


def _start(
    mu: np.ndarray,
    logs: tuple[np.ndarray, np.ndarray],
    choice: np.ndarray,
    weights: np.ndarray,
    starts: np.ndarray,
    work: _Work,
    fallback: tuple[np.ndarray, np.ndarray] | None,
    curvature: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """The starts (a row's fallback where that costs less) with _evaluate's cost, JᵀWJ, gradient, curvature."""
    x = starts.astype(float)  # a copy: updated in place
    cost, hess, grad, curv = _evaluate(mu, logs, choice, weights, x, work, curvature)
    if fallback is not None:
        worse = np.flatnonzero(cost > fallback[1])
        if worse.size:
            x[worse] = fallback[0][worse]
            local = _evaluate(mu, logs, choice, work.rows_of(weights, worse), x[worse], work, curvature)
            cost[worse], hess[worse], grad[worse] = local[:3]
            if curv is not None:
                curv[worse] = local[3]
    return x, cost, hess, grad, curv


def one_step_starts(
    mu: np.ndarray, choice: np.ndarray, clusters: Clusters, counts: np.ndarray, fit: LatentFit
) -> tuple[np.ndarray, np.ndarray]:
    """Warm starts of the bootstrap refits, one projected Gauss–Newton step from the point fit per resample,
    and each resample's cost at the point fit (fit_batch's fallback).

    A resample weights latent problem j by its multiplicity c_j, so its cost, gradient and JᵀWJ at the point
    fit are Σ_j c_j·(C_j, G_j, H_j), sums over the problem's items: one pass over the items for all resamples,
    then a (resamples × problems) matrix product, where the same step taken inside the refit costs a pass
    over the items per resample. The step lands within O(1/J) of a resample's minimiser (J problems): one
    evaluation fewer for Levenberg–Marquardt at 18k renderings; the refit then runs to its minimiser as from
    the point fit (docs/statistics.md §2.2)."""
    logs = log_terms(mu)
    lam, alpha, beta = fit.lam, fit.alpha, fit.beta
    g = np.exp(alpha * logs[0] + beta * logs[1])
    d = 1.0 - lam * g
    residual = mu / d - choice
    jac = (mu * g / (d * d)) * np.stack([np.ones_like(mu), lam * logs[0], lam * logs[1]])  # (3, n)
    per_item = np.concatenate([residual[None] ** 2, jac * residual, (jac[:, None] * jac[None, :]).reshape(9, -1)])
    sums = counts @ clusters.sums(per_item).T  # (B, 13): cost, gradient, JᵀJ
    cost, grad, hess = sums[:, 0], sums[:, 1:4], sums[:, 4:].reshape(-1, 3, 3)
    x = np.broadcast_to(fit.params, grad.shape)
    step = _step(hess, np.zeros_like(hess), grad, _free(x, grad))[0]  # Gauss–Newton's
    return np.clip(x + step, LOWER, UPPER), cost


def _levenberg_marquardt(
    mu: np.ndarray,
    logs: tuple[np.ndarray, np.ndarray],
    choice: np.ndarray,
    weights: np.ndarray,
    x: np.ndarray,
    current: np.ndarray,
    hess_at: np.ndarray,
    grad_at: np.ndarray,
    max_iter: int,
    tol: float,
    work: _Work,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The fitted rows, with the cost and normal equations at them (_evaluate's), from the starts x and the cost
    and normal equations there (_start's), all of which it updates in place.

    Cost and normal equations at x are kept per row: a trial point's evaluation serves the next step when the
    trial is accepted, so each step costs one pass over the items."""
    damping = np.full(weights.shape[0], 1e-3)
    todo = np.arange(weights.shape[0])
    for _ in range(max_iter):
        if todo.size == 0:
            break
        xs, w, grad = x[todo], work.rows_of(weights, todo), grad_at[todo]
        free = _free(xs, grad)
        hess = hess_at[todo] * (free[:, :, None] & free[:, None, :])
        diag = np.diagonal(hess, axis1=1, axis2=2)
        # Marquardt scaling on free parameters; held parameters get a unit diagonal and a zero gradient.
        lift = np.where(free, damping[todo, None] * np.maximum(diag, 1e-12), 1.0)
        system = hess + lift[:, :, None] * np.eye(3)
        step = np.linalg.solve(system, -(grad * free)[..., None])[..., 0]
        trial = np.clip(xs + step, LOWER, UPPER)
        trial_cost, trial_hess, trial_grad, _ = _evaluate(mu, logs, choice, w, trial, work)
        better = trial_cost < current[todo]
        gain = current[todo] - trial_cost
        # Damping follows how well the quadratic model predicted the gain of the (projected) step s:
        # -(2·g·s + s·H·s) for the cost Σ w·r². Where Gauss–Newton overshoots (large residuals along the
        # λ/α/β ridge) it zigzags for hundreds of steps unless the damping rises.
        moved = trial - xs
        predicted = -2 * np.sum(grad * moved, axis=1) - np.einsum("bi,bij,bj->b", moved, hess, moved)
        factor = np.where(gain > 0.75 * predicted, 0.1, np.where(gain < 0.25 * predicted, 10.0, 1.0))
        damping[todo] = np.where(better, np.maximum(damping[todo] * factor, 1e-12), damping[todo] * 10)
        done = (better & (gain <= tol * current[todo])) | (damping[todo] > 1e8)
        accepted = todo[better]
        x[accepted], current[accepted] = trial[better], trial_cost[better]
        hess_at[accepted], grad_at[accepted] = trial_hess[better], trial_grad[better]
        todo = todo[~done]
    return x, current, hess_at, grad_at


def _free(x: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """The parameters not held: at a bound, a gradient pointing outward holds a parameter there."""
    return ~(((x <= LOWER) & (grad > 0)) | ((x >= UPPER) & (grad < 0)))


def _polish(
    mu: np.ndarray,
    logs: tuple[np.ndarray, np.ndarray],
    choice: np.ndarray,
    weights: np.ndarray,
    x: np.ndarray,
    cost: np.ndarray,
    hess: np.ndarray,
    grad: np.ndarray,
    curv: np.ndarray | None,
    work: _Work,
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Undamped Newton steps on the free parameters from x (with _evaluate's cost, normal equations and
    curvature there; None: a Gauss–Newton first step), each kept if it lowers the cost or, within the cost's
    rounding, shrinks the gradient, until a step is below STEP_FLOOR (or at most LAST_STEP: taken unchecked).
    Returns the rows, which of them settled so (the others stopped on a step not kept, a singular system or
    POLISH_STEPS), and the cost and normal equations at every row (where Levenberg–Marquardt may go on).

    Near the minimum a step of δ changes the cost by ~δ², below the cost's own rounding (~1e-16 relative)
    for δ ~1e-8: a stop on "no step lowers the cost" lands anywhere within that of the minimiser, wherever
    an ulp of exp and log (which numpy releases compute differently) let it (λ moved 3e-10 and a bootstrap
    interval 1.3e-9 between numpy 1.26 and 2.4). The gradient resolves the minimiser to ~ε·cond instead.
    Gauss–Newton reaches it at a linear rate that large residuals slow (~0.02 on the bundled set, ~0.05 on a
    misspecified 18k set); Newton's full Hessian converges quadratically, and is used wherever it is positive
    definite on the free parameters (else the Gauss–Newton matrix, positive semi-definite, is)."""
    x, cost, hess, grad = x.copy(), cost.copy(), hess.copy(), grad.copy()
    known = np.full(x.shape[0], curv is not None)  # rows whose step is Newton's, not Gauss–Newton's
    curv = np.zeros_like(hess) if curv is None else curv.copy()
    settled = np.zeros(x.shape[0], dtype=bool)
    todo = np.arange(x.shape[0])
    for _ in range(POLISH_STEPS):
        free = _free(x[todo], grad[todo])
        step, definite, solvable = _step(hess[todo], curv[todo], grad[todo], free)
        size = np.max(np.abs(step), axis=1)
        # A Newton step this small lands within ~its square of the minimiser: taken without a pass to check it.
        inside = np.all((x[todo] + step >= LOWER) & (x[todo] + step <= UPPER), axis=1)  # not cut by a bound
        last = known[todo] & definite & solvable & inside & (size > STEP_FLOOR) & (size <= LAST_STEP)
        x[todo[last]] += step[last]
        settled[todo[(solvable & (size <= STEP_FLOOR)) | last]] = True
        moving = (size > STEP_FLOOR) & ~last
        todo, step, free = todo[moving], step[moving], free[moving]
        if todo.size == 0:
            break
        trial = np.clip(x[todo] + step, LOWER, UPPER)
        trial_cost, trial_hess, trial_grad, trial_curv = _evaluate(
            mu, logs, choice, work.rows_of(weights, todo), trial, work, curvature=True
        )
        norm = np.sum((grad[todo] * free) ** 2, axis=1)
        trial_norm = np.sum((trial_grad * _free(trial, trial_grad)) ** 2, axis=1)
        # A step that lowers the cost is progress; within the cost's rounding, one that shrinks the gradient is.
        kept = (trial_cost < cost[todo]) | ((trial_norm < norm) & (trial_cost <= cost[todo] * (1 + COST_ROUNDING)))
        todo = todo[kept]
        x[todo], cost[todo], hess[todo], grad[todo] = trial[kept], trial_cost[kept], trial_hess[kept], trial_grad[kept]
        curv[todo], known[todo] = trial_curv[kept], True  # type: ignore[index]  # curvature=True: an array
    return x, settled, (cost, hess, grad)


def _step(
    hess: np.ndarray, curv: np.ndarray, grad: np.ndarray, free: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(step, Newton's?, solvable) per row: the Newton step on the free parameters where JᵀWJ + curvature is
    positive definite on them, else Gauss–Newton's (JᵀWJ); zero where that system is (nearly) singular, e.g.
    α and β at λ = 0 (such a row keeps its fit). Held parameters get unit rows and a zero gradient: no step."""
    held = free[:, :, None] & free[:, None, :]
    newton = (hess + curv) * held + np.eye(3) * ~held
    definite = _positive_definite(newton)
    system = np.where(definite[:, None, None], newton, hess * held + np.eye(3) * ~held)
    solvable = np.abs(np.linalg.det(system)) > SINGULAR * np.prod(np.diagonal(system, axis1=1, axis2=2), axis=1)
    step = np.zeros_like(grad)
    step[solvable] = np.linalg.solve(system[solvable], -(grad * free)[solvable][..., None])[..., 0]
    return step, definite, solvable


def _positive_definite(system: np.ndarray) -> np.ndarray:
    """Which symmetric (b, 3, 3) systems are positive definite: all leading principal minors positive."""
    first = system[:, 0, 0]
    second = first * system[:, 1, 1] - system[:, 0, 1] * system[:, 1, 0]
    return (first > 0) & (second > 0) & (np.linalg.det(system) > 0)
