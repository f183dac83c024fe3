"""The rule behind thresholds.yaml's limits, computed from one run's per-rendering results.

A limit sits a margin away from the measured value, in the tolerant direction, rounded outwards to the next
0.005: a floor for mean and median OVL, a ceiling for representation TV, ECE, Brier, the option-swap shift and
the first-position bias (docs/setup.md, "The rule"). The margin is the largest of three distances, each
covering something one recording shows, or cannot show:

- 2 bootstrap SEs over latent problems (the problems drawn with replacement, every rendering of a drawn
  problem along): how far the statistic moves on another draw of problems;
- 3·√2 repeat-noise SEs, where the recording asked renderings more than once: a second recording of the same
  renderings differs from this one by repeat noise alone, whose difference has √2 times the SE of one
  recording, so a re-recording of the same model fails such a limit with probability ≤ P(Z > 3) ≈ 0.13 %;
- a stated minimum slack (0.01 by default), for what one recording cannot see: a statistic whose measured
  spread is zero (a server that answers every repeat alike, one repeat per rendering, an order-blind model's
  swap shift of exactly 0) would otherwise get a limit on the measured value itself, which the first
  recording with a little noise fails.

Statistics under problem resamples are weighted versions of the analysis's own, all resamples at once
(gates/rule_statistics.py); row 0 of every weight matrix is all ones, which gives the measured value by the
same code. The tests check it equals the analysis's value and that the SEs equal those of re-running the
analysis on resampled items; bench/aa_thresholds.py checks the limits on independent re-recordings.

The uncertainty gate (λ) follows the same idea on the valid test's t statistic (docs/statistics.md §2.3):
`require_lambda_positive` when t − 2·SE(t) is beyond the one-sided critical value at α, `require_lambda_zero`
when t + 2·SE(t) is short of it, and no λ gate when the test sits within 2 SEs of its critical value (there
either gate could flip on a re-recording).

Pure numpy; reads nothing and writes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.calls import call_probabilities
from ..analysis.items import ItemTable, aggregate_items, remeasured
from ..analysis.latent import ROUNDING
from ..analysis.primitives import primitive_probabilities
from ..analysis.stats import Clusters
from ..analysis.student_t import t_ppf
from ..defaults import RULE_MIN_RESAMPLES, RULE_RESAMPLES
from ..document import Item
from ..vocabulary import CALL_READING, MEAN_READING, PRIMITIVES
from .rule_statistics import CHOICE_GATES, PRIMITIVE_GATES, REPEAT_RESAMPLES, repeat_spread, statistics
from .rule_statistics import weighted_median as _weighted_median  # noqa: F401  (the tests check it here)

STEP = 0.005  # limits are rounded outwards to a multiple of this
SES = 2.0  # how many problem-bootstrap standard errors a limit sits from the measured value, at least
REPEAT_Z = 3.0  # how many SEs of the difference of two recordings (√2 × one recording's repeat SE), at least
MIN_SLACK = 0.01  # the least distance of a limit from the measured value
LAMBDA_ALPHA = 0.01  # the level of the λ gate the rule writes (the shipped file's)
__all__ = ["CHOICE_GATES", "PRIMITIVE_GATES", "Limit", "LambdaRule", "RuleResult", "threshold_rule"]


@dataclass(frozen=True)
class Limit:
    """One gate of the rule: measured value, SEs, the margin and what set it, and the limit; or the reason
    it is left out."""

    primitive: str
    key: str
    bound: str  # "min" (a floor) or "max" (a ceiling)
    value: float | None = None
    se: float | None = None  # bootstrap SE over latent problems
    limit: float | None = None
    reason: str | None = None  # why no limit: not measured, or a limit that could never fail
    repeat_se: float | None = None  # SE across re-recordings from the repeats; None: not measured (1 repeat)
    margin: float | None = None  # |unrounded limit − value|
    set_by: str | None = None  # which distance is the margin: "problems", "repeats" or "minimum"


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
    repeats: int = 1  # repeats per rendering (the median): noise is measured from 2 on
    repeat_resamples: int = 0  # 0: the repeat noise was not measured
    min_slack: float = MIN_SLACK
    reading: str = MEAN_READING  # which reading the limits were written for (thresholds.yaml's `reading`)


def threshold_rule(
    items: Sequence[Item],
    *,
    resamples: int = RULE_RESAMPLES,
    seed: int = 0,
    min_slack: float = MIN_SLACK,
    repeat_resamples: int = REPEAT_RESAMPLES,
    reading: str = MEAN_READING,
) -> RuleResult:
    """The limits the rule gives for a run's items (a report's ``items``), read as thresholds.yaml's `reading`
    will read them (per call: OVL, ECE and Brier over single calls). Raises ValueError when there is nothing to
    resample (fewer than 2 latent problems), resamples < RULE_MIN_RESAMPLES or a negative slack."""
    if resamples < RULE_MIN_RESAMPLES:
        raise ValueError(f"resamples must be at least {RULE_MIN_RESAMPLES}, got {resamples}")
    if not 0 <= min_slack < 1:
        raise ValueError(f"the minimum slack must be in [0, 1), got {min_slack}")
    table = aggregate_items(remeasured(items))
    clusters = Clusters.of(table.latent_ids)
    if clusters.count < 2:
        raise ValueError(f"{clusters.count} latent problem(s) measured: a bootstrap over problems needs at least 2")
    rng = np.random.default_rng(seed)
    draws = clusters.resample_counts(rng, resamples)
    weights = np.vstack([np.ones(clusters.count), draws])  # row 0: the run itself
    per_call = reading == CALL_READING
    calls = call_probabilities(table.samples) if per_call else None
    probs = primitive_probabilities(table)
    stats = statistics(probs, table.p_choice_swapped, table, clusters.codes, weights, calls)
    # The repeats are drawn after the problems, from the same seeded stream: the problem SEs stay as they were.
    spread, repeats = repeat_spread(table, clusters.codes, rng, repeat_resamples, per_call=per_call)
    limits: list[Limit] = []
    for prim in PRIMITIVES:
        for key, bound, high in PRIMITIVE_GATES + (CHOICE_GATES if prim == "choice" else ()):
            repeat_se = spread[prim].get(key) if prim in spread else None
            limits.append(_limit(prim, key, bound, high, *stats[prim][key], repeat_se, min_slack))
    return RuleResult(
        limits=tuple(limits),
        uncertainty=lambda_rule(table, clusters.codes, weights),
        renderings=table.n,
        latent_problems=clusters.count,
        resamples=resamples,
        seed=seed,
        repeats=repeats,
        repeat_resamples=repeat_resamples if spread else 0,
        min_slack=min_slack,
        reading=reading,
    )


def outward_limit(value: float, se: float, bound: str, high: float = 1.0) -> float:
    """value ∓ SES·SE rounded outwards to a multiple of STEP, within [0, high]. The rounding never lands on
    the wrong side of the measured value (a limit the run itself would fail), even at SE = 0."""
    return rounded_limit(value, SES * se, bound, high)


def rounded_limit(value: float, margin: float, bound: str, high: float = 1.0) -> float:
    """value ∓ margin rounded outwards to a multiple of STEP, within [0, high], never on the wrong side of value."""
    per_unit = round(1 / STEP)
    if bound == "min":
        # round(…, 9): 0.9 − ε from float arithmetic counts as 0.9, not as the step below.
        steps = math.floor(round((value - margin) / STEP, 9))
        while steps / per_unit > value:
            steps -= 1
        return max(steps, 0) / per_unit
    steps = math.ceil(round((value + margin) / STEP, 9))
    while steps / per_unit < value:
        steps += 1
    return min(steps / per_unit, high)


def margin_of(key: str, value: float, se: float, repeat_se: float | None, min_slack: float) -> tuple[float, str]:
    """The distance of a limit from its measured value, and which of the rule's three distances it is."""
    candidates = [
        (SES * se, "problems"),
        (REPEAT_Z * math.sqrt(2) * (repeat_se or 0.0), "repeats"),
        (slack_for(key, value, min_slack), "minimum"),
    ]
    return max(candidates, key=lambda pair: pair[0])


# The statistics in squared-error units (the Brier score and its decomposition's parts), whose slack is scaled.
SQUARED = ("max_brier", "max_mcb", "min_dsc")


def slack_for(key: str, value: float, min_slack: float) -> float:
    """The minimum slack in the statistic's own units. It is stated on the probability scale, where every
    statistic but the squared-error ones lives; Brier, a mean of squared errors, takes what moving every answer
    by the slack s does to it at most, 2·√Brier·s + s², and so do the parts of its decomposition, MCB and DSC."""
    if key in SQUARED:
        return 2 * math.sqrt(max(value, 0.0)) * min_slack + min_slack**2
    return min_slack


def _limit(
    prim: str,
    key: str,
    bound: str,
    high: float,
    draws: np.ndarray | None,
    reason: str | None,
    repeat_se: float | None,
    min_slack: float,
) -> Limit:
    if draws is None or not np.isfinite(draws[0]):
        return Limit(prim, key, bound, reason=reason or "not measured")
    value, resampled = float(draws[0]), draws[1:][np.isfinite(draws[1:])]
    if resampled.size < (draws.size - 1) / 2:
        return Limit(prim, key, bound, value, reason="too few resamples measure it for a standard error")
    se = float(np.std(resampled, ddof=1))
    margin, set_by = margin_of(key, value, se, repeat_se, min_slack)
    limit = rounded_limit(value, margin, bound, high)
    if (bound == "max" and limit >= high) or (bound == "min" and limit <= 0.0):
        edge = f"{high:g}" if bound == "max" else "0"
        reason = f"its limit would be {edge}, which no run can fail"
        return Limit(prim, key, bound, value, se, None, reason, repeat_se, margin, set_by)
    return Limit(prim, key, bound, value, se, limit, None, repeat_se, margin, set_by)


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
