"""The rule behind thresholds.yaml's limits, computed from one run's per-rendering results.

Each gated statistic is measured on the run, and its standard error is the bootstrap SE over latent
problems: the problems are drawn with replacement (every rendering of a drawn problem comes along; a problem
drawn twice counts twice) and the statistic recomputed on each resample. The limit is the measured value
moved 2 SEs in the tolerant direction and rounded outwards to the next 0.005: a floor for mean and median
OVL, a ceiling for representation TV, ECE, Brier, the option-swap shift and the first-position bias
(docs/setup.md, "The rule"). A different draw of problems moves a statistic by about one SE; a re-recording
of the same renderings moves it far less, so repeat noise cannot flip the gate.

Every statistic here is a weighted version of the analysis's own (a resample is a vector of multiplicities
per latent problem), so all resamples are computed at once with matrix products rather than by re-running
the analysis per resample: on 365 renderings 500 resamples take well under a second. Row 0 of every weight
matrix is all ones, which gives the measured value by the same code; the tests check it equals the
analysis's value and that the SEs equal those of re-running the analysis on resampled items.

The uncertainty gate (λ) follows the same idea on the valid test's t statistic (docs/statistics.md §2.3):
`require_lambda_positive` when t − 2·SE(t) is beyond the one-sided critical value at α, `require_lambda_zero`
when t + 2·SE(t) is short of it, and no λ gate when the test sits within 2 SEs of its critical value (there
either gate could flip on a re-recording).

Pure numpy; reads nothing and writes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.calibration import BINS, equal_width_bins
from ..analysis.items import ItemTable, aggregate_items
from ..analysis.latent import ROUNDING
from ..analysis.primitives import primitive_probabilities
from ..analysis.sensitivity import per_problem_spread
from ..analysis.stats import Clusters
from ..analysis.student_t import t_ppf
from ..analysis.swap import first_position_share
from ..vocabulary import PRIMITIVES
from .kinds import Bound, kinds_in

STEP = 0.005  # limits are rounded outwards to a multiple of this
SES = 2.0  # how many standard errors a limit sits from the measured value
LAMBDA_ALPHA = 0.01  # the level of the λ gate the rule writes (the shipped file's)
DEFAULT_RESAMPLES = 500
MIN_RESAMPLES = 20
# (gate key, bound, highest valid limit) in thresholds.yaml's order, from the gate kinds themselves; the swap
# gates exist for Choice only.
PRIMITIVE_GATES = tuple((k.key, k.bound, k.high) for k in kinds_in("noul") if isinstance(k, Bound))
CHOICE_GATES = tuple(
    (k.key, k.bound, k.high) for k in kinds_in("choice") if isinstance(k, Bound) and k.sections == ("choice",)
)


@dataclass(frozen=True)
class Limit:
    """One gate of the rule: measured value, bootstrap SE and limit, or the reason it is left out."""

    primitive: str
    key: str
    bound: str  # "min" (a floor) or "max" (a ceiling)
    value: float | None = None
    se: float | None = None
    limit: float | None = None
    reason: str | None = None  # why no limit: not measured, or a limit that could never fail


@dataclass(frozen=True)
class LambdaRule:
    """The rule's verdict on the λ gate: which flag to require at `alpha`, or None with the reason."""

    flag: str | None  # "require_lambda_positive", "require_lambda_zero" or None
    alpha: float
    statistic: float | None = None
    se: float | None = None
    df: int | None = None
    critical: float | None = None
    reason: str | None = None


@dataclass(frozen=True)
class RuleResult:
    limits: tuple[Limit, ...]
    uncertainty: LambdaRule
    renderings: int
    latent_problems: int
    resamples: int
    seed: int


def threshold_rule(
    items: Sequence[Mapping[str, Any]], *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> RuleResult:
    """The limits the rule gives for a run's items (a report's ``items``). Raises ValueError when there is
    nothing to resample (fewer than 2 latent problems) or resamples < MIN_RESAMPLES."""
    if resamples < MIN_RESAMPLES:
        raise ValueError(f"resamples must be at least {MIN_RESAMPLES}, got {resamples}")
    table = aggregate_items(items)
    clusters = Clusters.of(table.latent_ids)
    if clusters.count < 2:
        raise ValueError(f"{clusters.count} latent problem(s) measured: a bootstrap over problems needs at least 2")
    draws = clusters.resample_counts(np.random.default_rng(seed), resamples)
    weights = np.vstack([np.ones(clusters.count), draws])  # row 0: the run itself
    probs = primitive_probabilities(table)
    limits: list[Limit] = []
    for prim in PRIMITIVES:
        stats = _primitive_statistics(probs[prim], table, clusters.codes, weights)
        if prim == "choice":
            stats |= _swap_statistics(table, clusters.codes, weights)
        for key, bound, high in PRIMITIVE_GATES + (CHOICE_GATES if prim == "choice" else ()):
            limits.append(_limit(prim, key, bound, high, *stats[key]))
    return RuleResult(
        limits=tuple(limits),
        uncertainty=lambda_rule(table, clusters.codes, weights),
        renderings=table.n,
        latent_problems=clusters.count,
        resamples=resamples,
        seed=seed,
    )


def outward_limit(value: float, se: float, bound: str, high: float = 1.0) -> float:
    """value ∓ SES·SE rounded outwards to a multiple of STEP, within [0, high]. The rounding never lands on
    the wrong side of the measured value (a limit the run itself would fail), even at SE = 0."""
    per_unit = round(1 / STEP)
    if bound == "min":
        # round(…, 9): 0.9 − ε from float arithmetic counts as 0.9, not as the step below.
        steps = math.floor(round((value - SES * se) / STEP, 9))
        while steps / per_unit > value:
            steps -= 1
        return max(steps, 0) / per_unit
    steps = math.ceil(round((value + SES * se) / STEP, 9))
    while steps / per_unit < value:
        steps += 1
    return min(steps / per_unit, high)


# ----------------------------------------------------------------------------------------- the statistics

_Draws = tuple[np.ndarray | None, str | None]  # (values per weight row, or None with the reason)


def _primitive_statistics(p: np.ndarray, table: ItemTable, codes: np.ndarray, weights: np.ndarray) -> dict:
    """Each primitive gate's statistic under every weight row (row 0: the measured value)."""
    asked = ~np.isnan(p)
    if not asked.any():
        reason = "not measured: this primitive was not asked"
        return {key: (None, reason) for key, _bound, _high in PRIMITIVE_GATES}
    p, target, item_codes = p[asked], table.p_star[asked], codes[asked]
    w = weights[:, item_codes]  # (rows, renderings): each rendering weighs as often as its problem was drawn
    total = w.sum(axis=1)
    ovl = 1 - np.abs(p - target)
    gap = np.zeros((p.size, BINS))
    gap[np.arange(p.size), equal_width_bins(p, BINS)] = p - target
    with np.errstate(invalid="ignore", divide="ignore"):
        out: dict[str, _Draws] = {
            "min_mean_ovl": (w @ ovl / total, None),
            "min_median_ovl": (_weighted_median(ovl, w), None),
            # ECE = Σ_b |Σ_{i∈b} w_i (p_i − p*_i)| / Σ w_i (calibration.binned_gap with weights)
            "max_ece": (np.abs(w @ gap).sum(axis=1) / total, None),
            "max_brier": (w @ (p - target) ** 2 / total, None),
        }
        _, pairwise, max_gap = per_problem_spread(p, table.latent_ids[asked])
        out.update(_problem_means(pairwise, max_gap, np.unique(item_codes), weights))
    return out


def _problem_means(pairwise: np.ndarray, max_gap: np.ndarray, problems: np.ndarray, weights: np.ndarray) -> dict:
    """Table 6's means over problems with ≥ 2 renderings, each problem weighted by its multiplicity."""
    multi = ~np.isnan(pairwise)
    if not multi.any():
        reason = "not measured: no latent problem has 2 renderings with this primitive"
        return {"max_mean_pairwise_tv": (None, reason), "max_mean_max_tv": (None, reason)}
    w = weights[:, problems[multi]]
    total = w.sum(axis=1)
    return {
        "max_mean_pairwise_tv": (w @ pairwise[multi] / total, None),
        "max_mean_max_tv": (w @ max_gap[multi] / total, None),
    }


def _weighted_median(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """np.median of each row's multiset (value i repeated w_i times, integer weights): the middle value, or
    the mean of the two middle ones when the total weight is even."""
    order = np.argsort(values, kind="stable")
    ordered, cumulative = values[order], np.cumsum(w[:, order], axis=1)
    total = cumulative[:, -1]
    lower = (cumulative <= np.floor((total - 1) / 2)[:, None]).sum(axis=1)
    upper = (cumulative <= np.floor(total / 2)[:, None]).sum(axis=1)
    top = values.size - 1
    median = (ordered[np.minimum(lower, top)] + ordered[np.minimum(upper, top)]) / 2
    return np.where(total > 0, median, np.nan)


def _swap_statistics(table: ItemTable, codes: np.ndarray, weights: np.ndarray) -> dict:
    """|mean shift| and |first-position rate − 0.5| over the renderings asked both option orders."""
    plain, swapped = table.p_choice, table.p_choice_swapped
    both = ~np.isnan(plain) & ~np.isnan(swapped)
    if not both.any():
        reason = "not measured: no rendering carries a swapped Choice (e.g. reconstructed cassettes)"
        return {key: (None, reason) for key, _bound, _high in CHOICE_GATES}
    c, s = plain[both], swapped[both]
    w = weights[:, codes[both]]
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "max_swap_shift": (np.abs(w @ (c - s) / total), None),
            "max_first_position_bias": (np.abs(w @ first_position_share(c, s) / total - 0.5), None),
        }


def _limit(prim: str, key: str, bound: str, high: float, draws: np.ndarray | None, reason: str | None) -> Limit:
    if draws is None or not np.isfinite(draws[0]):
        return Limit(prim, key, bound, reason=reason or "not measured")
    value, resampled = float(draws[0]), draws[1:][np.isfinite(draws[1:])]
    if resampled.size < (draws.size - 1) / 2:
        return Limit(prim, key, bound, value, reason="too few resamples measure it for a standard error")
    se = float(np.std(resampled, ddof=1))
    limit = outward_limit(value, se, bound, high)
    if (bound == "max" and limit >= high) or (bound == "min" and limit <= 0.0):
        edge = f"{high:g}" if bound == "max" else "0"
        return Limit(prim, key, bound, value, se, reason=f"its limit would be {edge}, which no run can fail")
    return Limit(prim, key, bound, value, se, limit)


# ------------------------------------------------------------------------------------------------ λ gate


def lambda_rule(table: ItemTable, codes: np.ndarray, weights: np.ndarray, alpha: float = LAMBDA_ALPHA) -> LambdaRule:
    """The λ gate from the valid test's t on per-problem d_j = mean(Choice − μ_S) (uncertainty.lambda_zero_test),
    its bootstrap SE from the same resamples, and the one-sided critical value at `alpha`."""
    both = ~np.isnan(table.mu_score) & ~np.isnan(table.p_choice)
    gap = table.p_choice[both] - table.mu_score[both]
    gap = np.where(np.abs(gap) <= ROUNDING, 0.0, gap)  # as LatentData.gap: float rounding is no difference
    count = np.bincount(codes[both], minlength=weights.shape[1])
    present = count > 0
    if present.sum() < 2:
        return LambdaRule(None, alpha, reason="not measured: fewer than 2 latent problems with Choice and Score")
    d = np.bincount(codes[both], weights=gap, minlength=weights.shape[1])[present] / count[present]
    w = weights[:, present]
    n = w.sum(axis=1)
    mean = w @ d / n
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt((w * (d[None, :] - mean[:, None]) ** 2).sum(axis=1) / (n - 1))
        t = np.where(sd > 0, mean / (sd / np.sqrt(n)), np.nan)
    if not np.isfinite(t[0]):
        return LambdaRule(None, alpha, reason="not measured: every latent problem has the same d_j, so t is undefined")
    df = int(present.sum()) - 1
    resampled = t[1:][np.isfinite(t[1:])]
    if resampled.size < (t.size - 1) / 2:
        return LambdaRule(None, alpha, statistic=float(t[0]), df=df, reason="too few resamples give t a standard error")
    se = float(np.std(resampled, ddof=1))
    statistic, critical = float(t[0]), t_ppf(df, 1 - alpha)
    common: dict[str, Any] = {"alpha": alpha, "statistic": statistic, "se": se, "df": df, "critical": critical}
    if statistic - SES * se > critical:
        return LambdaRule("require_lambda_positive", **common)
    if statistic + SES * se < critical:
        return LambdaRule("require_lambda_zero", **common)
    return LambdaRule(
        None,
        **common,
        reason=f"t is within {SES:g} SEs of the critical value, so either λ gate could flip on a re-recording",
    )
