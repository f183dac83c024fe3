"""The upgrade comparison: a run against a baseline report, mean OVL per primitive paired by rendering,
a latent-problem bootstrap, a three-way verdict per primitive and Holm across them (docs/statistics.md §6),
the same Δ per family and per representation with the cells that regressed marked (§6.5, analysis/cells.py),
whether the comparison can decide at its margin at all (§6.6), and, asked for, why each primitive moved (§8.5,
analysis/diagnosis.py). Knows nothing of pytest or of thresholds.yaml."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from ..defaults import RECALIBRATION_SPLITS, UPGRADE_DROP, UPGRADE_FAIL_DROP, UPGRADE_POWER, UPGRADE_RESAMPLES
from ..document import ReportDocument
from ..document_upgrade import Advice, Design, GroupDifference, UpgradeMetric, UpgradeResult
from ..vocabulary import CALL_READING, LABELS, MEAN_READING, PRIMITIVES, Verdict
from .cells import group_differences, mark_regressed
from .decisive import decisive_size
from .diagnosis import diagnose
from .paired import Paired, holm, pair_reports, per_repeat_ovl, within_variance
from .stats import Clusters

POWER = UPGRADE_POWER  # of the size advice for inconclusive verdicts and of the design check
_NORMAL = NormalDist()


@dataclass(frozen=True)
class Margin:
    """drop: δ, the largest drop in mean OVL still accepted (PASS needs lower bound > −δ).
    fail_drop: δ₀, the drop that must be shown to FAIL (upper bound < −δ₀); 0 fails on any significant drop."""

    drop: float = UPGRADE_DROP
    fail_drop: float = UPGRADE_FAIL_DROP

    def __post_init__(self) -> None:
        if not (0 <= self.fail_drop <= self.drop <= 1):
            raise ValueError(f"need 0 ≤ fail_drop ≤ drop ≤ 1, got drop={self.drop}, fail_drop={self.fail_drop}")


def compare_reports(
    new: ReportDocument,
    baseline: ReportDocument,
    *,
    margins: Mapping[str, Margin] | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    resamples: int = UPGRADE_RESAMPLES,
    primitives: Iterable[str] = PRIMITIVES,
    reading: str = MEAN_READING,
    splits: int = RECALIBRATION_SPLITS,
    explain: bool = False,
) -> UpgradeResult:
    """Compare mean OVL per primitive, new − baseline, paired by rendering. JSON-able (no NaN).

    margins: per primitive (default Margin() for each gated primitive). primitives: the gated metrics;
    a gated primitive not measured in both reports gets verdict NOT MEASURED and leaves the Holm family.
    reading: each rendering's OVL from its repeat mean ("mean") or its calls' ("call"; statistics.md §6.1).
    explain: add each compared primitive's ``why`` (analysis/diagnosis.py, over `splits` held-out splits); it
    refits both versions' curves, about as long again as the comparison. Cells are marked by analysis/cells.py."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    gated = [p for p in PRIMITIVES if p in set(primitives)]
    margins = {p: (margins or {}).get(p, Margin()) for p in gated}
    paired = pair_reports(new, baseline, reading)
    clusters = Clusters.of(paired.latent_ids)
    counts = clusters.resample_counts(np.random.default_rng(seed), resamples)  # (B, J), shared by all metrics
    metrics: dict[str, UpgradeMetric] = {}
    boots: dict[str, np.ndarray] = {}
    for prim in gated:
        metrics[prim], boot = _measure(paired, prim, clusters, counts, margins[prim])
        if boot is not None:
            boots[prim] = boot

    measured = list(boots)
    if measured:
        _decide_with_holm(metrics, boots, margins, paired, alpha)
    for prim in measured if explain else ():
        metrics[prim]["why"] = diagnose(
            paired, prim, clusters, counts, metrics[prim], alpha=alpha, seed=seed, splits=splits
        )
    cells = mark_regressed(metrics)
    return {
        "matched": len(paired.instance_id),
        "only_in_new": paired.only_in_new,
        "only_in_baseline": paired.only_in_baseline,
        "latent_problems": clusters.count,
        "repeats": paired.repeats,
        "reading": paired.reading,
        "alpha": alpha,
        "correction": f"Holm over {len(measured)} metric{'s' if len(measured) != 1 else ''}, "
        "separately for 'shown worse' and 'shown non-inferior'",
        "resamples": resamples,
        "seed": seed,
        "power": POWER,
        "cells": cells,
        "metrics": metrics,
    }


def _decide_with_holm(
    metrics: dict[str, UpgradeMetric],
    boots: dict[str, np.ndarray],
    margins: Mapping[str, Margin],
    paired: Paired,
    alpha: float,
) -> None:
    """Verdicts of the measured primitives, with Holm's levels in each family (shown worse, shown non-inferior)."""
    measured = list(boots)
    pass_reject, pass_level, pass_adj = holm([_measured(metrics[p])[0] for p in measured], alpha)
    fail_reject, fail_level, fail_adj = holm([_measured(metrics[p])[1] for p in measured], alpha)
    for k, prim in enumerate(measured):
        _decide(
            metrics[prim],
            boots[prim],
            margins[prim],
            paired,
            prim,
            shown_noninferior=bool(pass_reject[k]),
            shown_worse=bool(fail_reject[k]),
            pass_level=float(pass_level[k]),
            fail_level=float(fail_level[k]),
            p_pass_holm=float(pass_adj[k]),
            p_fail_holm=float(fail_adj[k]),
        )


def _measure(
    paired: Paired, prim: str, clusters: Clusters, counts: np.ndarray, margin: Margin
) -> tuple[UpgradeMetric, np.ndarray | None]:
    ovl_new, ovl_base = paired.ovl("new", prim), paired.ovl("base", prim)
    both = ~np.isnan(ovl_new) & ~np.isnan(ovl_base)
    per_call = paired.reading == CALL_READING
    out: UpgradeMetric = {
        "metric": f"{prim}.per_call.mean_ovl" if per_call else f"{prim}.mean_ovl",
        "label": f"{LABELS[prim]} mean OVL" + (" per call" if per_call else ""),
        "n": int(both.sum()),
        "latent_problems": int(np.unique(clusters.codes[both]).size),
        "baseline": None,
        "new": None,
        "difference": None,
        "margin": margin.drop,
        "fail_margin": margin.fail_drop,
        "verdict": Verdict.NOT_MEASURED,
    }
    if out["latent_problems"] < 2:
        missing = [w for w, v in (("this run", ovl_new), ("the baseline", ovl_base)) if np.isnan(v).all()]
        out["reason"] = (
            f"{LABELS[prim]} was not asked in {' or '.join(missing)}"
            if missing
            else f"{LABELS[prim]} was measured on fewer than 2 latent problems in both reports"
        )
        return out, None
    d = np.where(both, ovl_new - ovl_base, 0.0)
    sums = clusters.sums(d)
    sizes = clusters.sums(both.astype(float))
    numerator, denominator = counts @ sums, counts @ sizes
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = np.where(denominator > 0, numerator / denominator, np.nan)
    boot = boot[~np.isnan(boot)]
    out.update(
        {
            "baseline": float(ovl_base[both].mean()),
            "new": float(ovl_new[both].mean()),
            "difference": float(d[both].mean()),
            "se": float(boot.std(ddof=1)),
            "sd_d": float(d[both].std(ddof=1)) if both.sum() > 1 else 0.0,
            # Bootstrap p-values of the two one-sided tests: H0 Δ ≤ −δ (for PASS) and H0 Δ ≥ −δ₀ (for FAIL).
            "p_noninferior": float((1 + np.sum(boot <= -margin.drop)) / (boot.size + 1)),
            "p_worse": float((1 + np.sum(boot >= -margin.fail_drop)) / (boot.size + 1)),
        }
    )
    out["by_family"], out["by_representation"] = _cells(paired, clusters, counts, d, both, (ovl_new, ovl_base), margin)
    return out, boot


def _cells(
    paired: Paired,
    clusters: Clusters,
    counts: np.ndarray,
    d: np.ndarray,
    both: np.ndarray,
    ovls: tuple[np.ndarray, np.ndarray],
    margin: Margin,
) -> tuple[dict[str, GroupDifference] | None, dict[str, GroupDifference] | None]:
    """The Δ cells by family and by representation (analysis/cells.py), tested against the fail margin δ₀."""
    family, representation = (
        group_differences(groups, clusters, counts, d, both, *ovls, paired.instance_id, margin.fail_drop)
        for groups in (paired.family, paired.representation)
    )
    return family, representation


def _measured(metric: UpgradeMetric) -> tuple[float, float]:
    """A measured metric's two bootstrap p-values (for PASS, for FAIL); only measured metrics are decided."""
    return metric["p_noninferior"], metric["p_worse"]


def _decide(
    out: UpgradeMetric,
    boot: np.ndarray,
    margin: Margin,
    paired: Paired,
    prim: str,
    *,
    shown_noninferior: bool,
    shown_worse: bool,
    pass_level: float,
    fail_level: float,
    p_pass_holm: float,
    p_fail_holm: float,
) -> None:
    lower = float(np.quantile(boot, pass_level))
    upper = float(np.quantile(boot, 1 - fail_level))
    verdict = Verdict.FAILED if shown_worse else Verdict.PASSED if shown_noninferior else Verdict.INCONCLUSIVE
    out.update(
        {
            "lower": lower,
            "lower_level": 1 - pass_level,
            "upper": upper,
            "upper_level": 1 - fail_level,
            "p_noninferior_holm": p_pass_holm,
            "p_worse_holm": p_fail_holm,
            "verdict": verdict,
        }
    )
    within_sum = _noise(out, paired, prim)
    out["design"] = design_check(out, margin.drop, pass_level, paired.repeats, within_sum, power=POWER)
    if verdict == Verdict.INCONCLUSIVE:
        out["advice"] = _advice(out, margin, paired.repeats, pass_level, fail_level, within_sum)


def _noise(out: UpgradeMetric, paired: Paired, prim: str) -> float | None:
    """Set σ_w (per-repeat SD of per-item OVL, the statistics doc's definition, pooled over both recordings),
    σ_Δ (SD of the true per-item change) and the design effect of clustering by latent problem; return the sum
    of both recordings' within-rendering variances (None when unknown), the repeat noise's part of Var(D) times
    the repeats. (The SD of the answers themselves would overstate the noise in OVL, which folds the answer at
    p*: up to 2.8× in variance for a model centred on p*.)"""
    rows = ~np.isnan(paired.ovl("new", prim)) & ~np.isnan(paired.ovl("base", prim))
    w_new = within_variance(per_repeat_ovl(paired.new_repeats[prim], paired.p_star), rows)
    w_base = within_variance(per_repeat_ovl(paired.base_repeats[prim], paired.p_star), rows)
    var_d = out["sd_d"] ** 2
    n = out["n"]
    out.update(
        {"design_effect": n * out["se"] ** 2 / var_d if var_d > 0 else None, "sigma_w": None, "sigma_delta": None}
    )
    if w_new is None or w_base is None:
        return None
    # ≈ 2σ_w²/r: what repeat noise adds to Var(D) (read per call, each side's own calls per rendering)
    same = paired.new_r == paired.base_r
    noise = (w_new + w_base) / paired.repeats if same else w_new / paired.new_r + w_base / paired.base_r
    out.update({"sigma_w": math.sqrt((w_new + w_base) / 2), "sigma_delta": math.sqrt(max(var_d - noise, 0.0))})
    return w_new + w_base


def _advice(
    out: UpgradeMetric, margin: Margin, repeats: int, pass_level: float, fail_level: float, within_sum: float | None
) -> Advice:
    """How large a new recording would decide this inconclusive comparison, passed or FAILED, with POWER
    probability whatever the true Δ, at the observed spread (analysis/decisive.py; docs/statistics.md §7.5),
    each test at the stricter of its two Holm levels. (Sizing for POWER at the observed Δ̂ towards one margin,
    the rule before it, decided the way it named only about half the time: an inconclusive Δ̂ cannot say on
    which side of the middle the true Δ lies.)"""
    n, se, problems = out["n"], out["se"], out["latent_problems"]
    size = decisive_size(
        n=n,
        se=se,
        latent_problems=problems,
        margin=margin,
        level=min(pass_level, fail_level),
        repeats=repeats,
        within_sum=within_sum,
        power=POWER,
    )
    advice: Advice = {
        "renderings": size["renderings"],
        "latent_problems": size["latent_problems"],
        "repeats": size["repeats"],
        "power": POWER,
        "text": "",
    }
    if size["renderings"] is None:
        advice["text"] = (
            "with fail_drop_mean_ovl equal to max_drop_mean_ovl a difference on the margin is never decided, so no "
            "number of renderings or repeats would decide it; set fail_drop_mean_ovl below max_drop_mean_ovl"
            if margin.fail_drop >= margin.drop
            else "the comparison shows no spread, so no size for it can be estimated"
        )
        return advice
    chance = f"with {POWER:.0%} probability whatever the true Δ"
    afresh = "in a recording made afresh (adding to this one and testing again would void the error rate)"
    if size["renderings"] <= n:
        advice["text"] = (
            f"at its spread, its own {n} paired renderings decide it, passed or FAILED, {chance}, and this "
            f"recording is one of the other {1 - POWER:.0%}; re-running until it passes would void the error rate"
        )
        return advice
    ways = [
        f"about {size['renderings']} paired renderings, {size['latent_problems']} latent problems (now {n}, {problems})"
    ]
    note = ""
    if size["repeats"] is not None:
        ways.append(f"about {size['repeats']} repeats per rendering in both recordings (now {repeats})")
    elif within_sum is not None and out.get("sigma_delta") is not None:
        note = (
            f"; more repeats alone would not do it (the change itself varies from rendering to rendering, "
            f"σ_Δ = {out['sigma_delta']:.3f})"
        )
    elif repeats < 2:
        note = "; with 1 repeat per rendering the repeat noise is unknown, so what more repeats would do cannot be said"
    advice["text"] = (
        f"at its spread, {' or '.join(ways)} would decide it, passed or FAILED (which, this recording cannot "
        f"say), {chance}, {afresh}{note}"
    )
    return advice


# ---------------------------------------------------------------------------------------------- can it decide


def design_check(
    metric: UpgradeMetric, margin: float, level: float, repeats: int, within_sum: float | None, *, power: float
) -> Design:
    """The comparison's minimum detectable effect: mde = (z_{1−level} + z_{power})·se, the smallest margin that an
    unchanged model (true Δ = 0) is shown within with probability `power` when its non-inferiority test runs at
    `level` (its Holm level). `enough` is mde ≤ margin; when it is not, an unchanged model is often
    inconclusive, and `renderings` / `repeats` say how many paired renderings, or repeats per rendering in
    both recordings, would bring mde within the margin (`repeats` None when the repeat noise is unknown or
    when repeats alone cannot: the change itself varies too much, `repeats_alone` False)."""
    se, n = float(metric["se"]), int(metric["n"])
    z = _NORMAL.inv_cdf(1 - level) + _NORMAL.inv_cdf(power)
    mde = z * se
    out: Design = {
        "mde": mde,
        "margin": margin,
        "level": level,
        "power": power,
        "enough": bool(mde <= margin),
        "renderings": None,
        "repeats": None,
        "repeats_alone": None,
    }
    if out["enough"] or margin <= 0:
        return out
    out["renderings"] = math.ceil(z**2 * n * se**2 / margin**2)
    deff, sigma_delta = metric.get("design_effect"), metric.get("sigma_delta")
    if within_sum is not None and deff and sigma_delta is not None:
        room = n * margin**2 / (z**2 * deff) - sigma_delta**2  # what the repeat-noise part of Var(D) may be
        out["repeats_alone"] = bool(room > 0)
        if room > 0:
            out["repeats"] = max(math.ceil(within_sum / room), repeats + 1)
    return out
