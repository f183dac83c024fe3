"""Paper Table 2: the latent uncertainty fit, its bootstrap, the paper's λ_j statistic, a valid test of λ = 0.

λ = 0 ⇔ f(μ) = μ, i.e. Choice equals the Score expectation, and λ > 0 ⇒ Choice > μ_S. So the valid test
needs no fit at all: per latent problem d_j = mean over its renderings of (Choice − μ_S), tested one-sided
(docs/statistics.md §2.3: size 0.050, power 0.91 at λ = 0.3). The paper instead fits λ_j per problem
on a grid clipped to [0, 1] and t-tests their mean; clipping makes that mean positive even when λ = 0, so
that statistic is reported for comparison only.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import TypedDict

import numpy as np

from ..defaults import P_FLOOR
from ..document import LambdaTestBlock, PaperSummary, Uncertainty
from .latent import BLOCK, LatentData, LatentFit, fit_batch, log_terms, one_step_starts, peak_mass
from .stats import (
    SIGN_FLIPS,
    NotEnoughData,
    floor_p,
    percentile_interval,
    require_latents,
    sign_flip_p,
    t_interval,
    t_test,
    with_reasons,
)

# The paper's grid for per-latent λ_j: {0, 0.001, …, 1}, and the step between the points that latent_lambdas
# computes for every problem (the grid's ends among them: 1000 is a multiple).
LAMBDA_GRID = np.arange(1001) / 1000
COARSE_STEP = 25
# Coarse intervals whose curves (one point more than intervals) are held at once: ~1.3 MB at 18k renderings.
COARSE_BLOCK = 8

# From this many latent problems the bootstrap refits start one Gauss–Newton step from the point fit
# (latent.one_step_starts), whose error shrinks as 1/J, and go from there by Newton's steps (fit_batch's
# newton_first): at bench_scale.py's 2,750 problems 2.0 passes over the items per refit where
# Levenberg–Marquardt from the same start took 5.4. At the bundled 92, on the λ/α/β ridge, the step saves
# nothing and costs its own pass, so smaller runs start at the point fit, by Levenberg–Marquardt. Both reach
# the same minimisers but on the flat ridge (bootstrap_fits).
ONE_STEP_PROBLEMS = 500

# The bootstrap's blocks of refits run on up to this many threads (no more than the cores the process may use):
# numpy's element-wise loops and einsum, most of a refit, release the GIL, so on 2 cores the refits of 18k
# renderings take about 0.75 of the time. Blocks are independent (each its own scratch arrays and its own rows
# of the result), so the result is the same bits on any number of threads.
MAX_THREADS = 4
# Below this many item-refits (renderings × resamples) the refits run one block after another: they take a few
# hundredths of a second, and blocks on threads would hold their scratch arrays at once (+6 MB at 365 × 500).
THREADED_WORK = 2_000_000

NOTES = [
    "λ is weakly identified: it trades off against the width α+β of the uncertainty bump, so u_max "
    "(the peak uncertain mass) is the effect size to read; a percentile bootstrap interval for λ at its "
    "bound 1 is not a test.",
    "lambda_latent_*: the paper's statistic (per-latent λ_j on a grid clipped to [0, 1], mean ± 1.96·se, "
    "two-sided t), not a valid test of λ = 0; use `test`.",
]

# The parts of the uncertainty block, each computed by its own function below.
_Fit = TypedDict(
    "_Fit",
    {
        "alpha": float | None,
        "beta": float | None,
        "lambda": float | None,
        "r2": float | None,
        "r2_vs_identity": float | None,
        "u_max": float | None,
        "u_peak_at": float | None,
        "share_choice_below_mu": float | None,
    },
)


class _Bootstrap(TypedDict):
    bootstrap_resamples: int
    u_max_ci: list[float] | None
    lambda_ci: list[float] | None


class _Paper(TypedDict):
    lambda_latent_mean: float | None
    lambda_latent_ci: list[float] | None
    lambda_latent_t: float | None
    lambda_latent_p: float | None
    improvement: PaperSummary | None


def uncertainty_table(data: LatentData, *, seed: int, bootstrap: int) -> Uncertainty:
    reasons: list[str] = []
    out: Uncertainty = {
        "n": data.n,
        "latent_problems": data.clusters.count,
        **_fit_block(data, reasons),
        **_bootstrap_block(data, seed, bootstrap, reasons),
        **_paper_block(data, reasons),
        "test": lambda_zero_test(data, seed),
        "notes": NOTES,
    }
    return with_reasons(out, reasons)


def _fit_block(data: LatentData, reasons: list[str]) -> _Fit:
    below = float(np.mean(data.gap < 0)) if data.n else None
    fit = data.fit
    if fit is None:
        reasons.append(data.reason or "no fit")
        return {
            "alpha": None,
            "beta": None,
            "lambda": None,
            "r2": None,
            "r2_vs_identity": None,
            "u_max": None,
            "u_peak_at": None,
            "share_choice_below_mu": below,
        }
    sse = float(np.sum((fit.choice(data.mu) - data.choice) ** 2))
    sst = float(np.sum((data.choice - data.choice.mean()) ** 2))
    sse_identity = float(np.sum(data.gap**2))  # the λ = 0 model, Choice = μ_S
    if sst == 0:
        reasons.append("r2 undefined: Choice is the same on every item")
    if sse_identity == 0:
        reasons.append("r2_vs_identity undefined: Choice equals μ_S on every item")
    return {
        "alpha": fit.alpha,
        "beta": fit.beta,
        "lambda": fit.lam,
        "r2": 1 - sse / sst if sst > 0 else None,
        "r2_vs_identity": 1 - sse / sse_identity if sse_identity > 0 else None,
        "u_max": fit.u_max,
        "u_peak_at": fit.u_peak_at,
        "share_choice_below_mu": below,
    }


def _bootstrap_block(data: LatentData, seed: int, bootstrap: int, reasons: list[str]) -> _Bootstrap:
    """Percentile intervals from refits on latent problems resampled with replacement."""
    out: _Bootstrap = {"bootstrap_resamples": bootstrap, "u_max_ci": None, "lambda_ci": None}
    if data.fit is None:
        return out
    if bootstrap <= 0:
        reasons.append("bootstrap skipped (bootstrap=0)")
        return out
    try:
        require_latents(data.clusters.count)
    except NotEnoughData as exc:
        reasons.append(f"bootstrap: {exc}")
        return out
    params = bootstrap_fits(data, data.fit, seed, bootstrap, one_step=data.clusters.count >= ONE_STEP_PROBLEMS)
    out["u_max_ci"] = percentile_interval(peak_mass(params))
    out["lambda_ci"] = percentile_interval(params[:, 0])
    return out


def bootstrap_fits(data: LatentData, fit: LatentFit, seed: int, bootstrap: int, *, one_step: bool) -> np.ndarray:
    """(bootstrap, 3) refits of (λ, α, β) on latent problems resampled with replacement (seeded), each run
    to its minimiser; one_step: started one Gauss–Newton step from the point fit (at the point fit where
    that step is worse) and taken by Newton's steps first, else started at the point fit and taken by
    Levenberg–Marquardt. The two reach the same minimisers (u_max to ~1e-10)
    except on the flat λ/α/β ridge, where a refit may settle elsewhere along it (u_max within ~1e-6);
    scripts/bootstrap_coverage.py measures the intervals' shift against their Monte Carlo error
    (docs/statistics.md §2.2)."""
    counts = data.clusters.resample_counts(np.random.default_rng(seed), bootstrap)
    point = np.tile(fit.params, (bootstrap, 1))
    starts, costs = one_step_starts(data.mu, data.choice, data.clusters, counts, fit) if one_step else (point, None)
    params = np.empty((bootstrap, 3))
    rows = max(1, BLOCK // max(data.n, 1))

    def refit(first: int) -> None:
        # The item weights of a block of resamples at a time (fit_batch's own blocks), not (resamples × items).
        block = slice(first, first + rows)
        weights = counts[block][:, data.clusters.codes]
        fallback = None if costs is None else (point[block], costs[block])
        params[block] = fit_batch(
            data.mu, data.choice, weights, starts[block], fallback=fallback, newton_first=one_step
        )

    blocks = range(0, bootstrap, rows)
    workers = min(len(blocks), available_cores(), MAX_THREADS) if data.n * bootstrap >= THREADED_WORK else 1
    if workers <= 1:
        for first in blocks:
            refit(first)
    else:  # each block alone on a thread, into its own rows of params: the same bits as one after another
        pool = ThreadPoolExecutor(workers, thread_name_prefix="sys1cal-bootstrap")
        try:
            list(pool.map(refit, blocks))  # list(): a block's exception is raised here
        finally:  # on an exception or Ctrl-C, blocks not yet started are dropped, not waited for
            pool.shutdown(cancel_futures=True)
    return params


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def latent_lambdas(data: LatentData, fit: LatentFit) -> np.ndarray:
    """The paper's λ_j: per latent problem, the grid λ minimising the squared error of f(μ) vs Choice
    over its renderings, with α and β fixed at the global fit (ties: the smallest λ).

    Exactly the grid's argmin, without the whole grid: f = μ/(1 − λ·g) increases with λ (g = μ^α·(1−μ)^β ≥ 0),
    so between two grid points a rendering's error is at least its distance to the nearer of f's two ends
    (0 where Choice lies between them), and an interval whose bound exceeds a problem's best value so far
    holds no grid point that could be its argmin or tie with it. The sum of every 25th grid point is computed,
    then the points inside the intervals that a problem cannot rule out (usually one or two of 40), for that
    problem only. Every sum is the one the whole grid gives, the same expression over the problem's
    renderings in Clusters.sums' order, so the argmin is too (tests/analysis compares the two). 0.04 s at 18k
    renderings, where the whole grid took 0.13; the coarse curves are computed a few points at a time, so
    memory stays a few doubles per rendering."""
    clusters = data.clusters
    logs = log_terms(data.mu)
    g = np.exp(fit.alpha * logs[0] + fit.beta * logs[1])[clusters.order]
    mu, choice, codes = data.mu[clusters.order], data.choice[clusters.order], clusters.codes[clusters.order]
    coarse = np.arange(0, LAMBDA_GRID.size, COARSE_STEP)
    sums = np.empty((coarse.size, clusters.count))
    bound = np.empty((coarse.size - 1, clusters.count))  # per interval between coarse points, per problem
    for first in range(0, coarse.size - 1, COARSE_BLOCK):  # a few coarse points' curves at a time
        points = slice(first, first + COARSE_BLOCK + 1)
        curve = mu / (1.0 - LAMBDA_GRID[coarse[points], None] * g)
        sums[points] = np.add.reduceat((curve - choice) ** 2, clusters.starts, axis=-1)
        gap = np.maximum(np.maximum(curve[:-1] - choice, choice - curve[1:]), 0.0)
        bound[first : first + COARSE_BLOCK] = np.add.reduceat(gap**2, clusters.starts, axis=-1)
    chosen = coarse[np.argmin(sums, axis=0)]  # the first of tied coarse points: the smallest λ
    best = sums.min(axis=0)
    # The bound and the sums round differently: a margin far above their rounding, far below any real gap.
    possible = bound <= best * (1 + 1e-9) + 1e-300
    for interval in np.flatnonzero(possible.any(axis=1)):
        problems = possible[interval]
        items = problems[codes]
        inner = np.arange(coarse[interval] + 1, coarse[interval + 1])
        starts = np.concatenate([[0], np.cumsum(clusters.sizes[problems])[:-1]])
        error = mu[items] / (1.0 - LAMBDA_GRID[inner, None] * g[items]) - choice[items]
        inner_sums = np.add.reduceat(error**2, starts, axis=-1)
        lowest, at = inner_sums.min(axis=0), inner[np.argmin(inner_sums, axis=0)]
        index = np.flatnonzero(problems)
        # Lower, or as low at a smaller λ (the grid's tie rule), whatever order the intervals come in.
        better = (lowest < best[index]) | ((lowest == best[index]) & (at < chosen[index]))
        best[index[better]], chosen[index[better]] = lowest[better], at[better]
    return LAMBDA_GRID[chosen]


def _paper_block(data: LatentData, reasons: list[str]) -> _Paper:
    fit = data.fit
    if fit is None or data.clusters.count == 0:
        return {
            "lambda_latent_mean": None,
            "lambda_latent_ci": None,
            "lambda_latent_t": None,
            "lambda_latent_p": None,
            "improvement": None,
        }
    lambdas = _paper_summary(latent_lambdas(data, fit), "lambda_latent", reasons)
    # Per latent: how much closer f(μ) is to Choice than μ itself is (mean absolute error).
    gain = data.clusters.means(np.abs(data.mu - data.choice) - np.abs(fit.choice(data.mu) - data.choice))
    return {
        "lambda_latent_mean": lambdas["mean"],
        "lambda_latent_ci": lambdas["ci"],
        "lambda_latent_t": lambdas["t"],
        "lambda_latent_p": lambdas["p"],
        "improvement": _paper_summary(gain, "improvement", reasons),
    }


def _paper_summary(x: np.ndarray, label: str, reasons: list[str]) -> PaperSummary:
    """The paper's summary of per-latent values: mean, mean ± 1.96·se, t and a two-sided p, deliberately
    unfloored so that it reproduces the paper's numbers."""
    out: PaperSummary = {"mean": float(x.mean()), "ci": None, "t": None, "p": None}
    try:
        test = t_test(x, "two-sided")
    except NotEnoughData as exc:
        reasons.append(f"{label}: {exc}")
        return out
    out.update({"ci": test.interval(), "t": test.statistic, "p": test.p_value})
    return out


def lambda_zero_test(data: LatentData, seed: int) -> LambdaTestBlock:
    """The valid test of H0: λ = 0 against λ > 0, with the latent problem as the unit."""
    out: LambdaTestBlock = {
        "name": "one-sided t-test on per-latent d_j = mean(Choice − μ_S)",
        "statistic": None,
        "df": None,
        "p_value": None,
        "alternative": "greater",
        "effect": None,
        "effect_ci": None,
        "permutation_p_value": None,
        "latent_problems": data.clusters.count,
        "note": f"p-values below {P_FLOOR:g} are reported as {P_FLOOR:g}; the permutation p-value is a "
        f"sign-flip test on d_j with {SIGN_FLIPS} seeded flips (all 2^J when fewer); "
        "effect = mean d_j with a 95% t interval.",
    }
    d = data.clusters.means(data.gap)
    out["effect"] = float(d.mean()) if d.size else None
    try:
        require_latents(d.size)
        out["permutation_p_value"] = sign_flip_p(d, seed)
        test = t_test(d, "greater")
    except NotEnoughData as exc:
        return with_reasons(out, [str(exc)])
    out.update(
        {
            "statistic": test.statistic,
            "df": test.df,
            "p_value": floor_p(test.p_value),
            "effect_ci": t_interval(test),
        }
    )
    return out
