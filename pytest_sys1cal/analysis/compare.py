"""The upgrade comparison: a run against a baseline report, mean OVL per primitive paired by rendering,
a latent-problem bootstrap, a three-way verdict per primitive and Holm across them (docs/statistics.md §6).
Knows nothing of pytest or of thresholds.yaml."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from ..errors import InputError
from ..vocabulary import LABELS, PRIMITIVES, Verdict
from .compare_design import design_check
from .compare_groups import group_differences
from .items import LEVEL_VALUES, score_expectation
from .primitives import ovl
from .stats import Clusters

# Per primitive: the report item column holding the repeat mean, and the sample key of one repeat.
COLUMNS = {"noul": ("p_noul", "noul"), "choice": ("p_choice", "choice"), "score": ("mu_score", "score")}
RESAMPLES = 2000
POWER = 0.8  # of the sample-size advice for inconclusive verdicts
_NORMAL = NormalDist()


class ComparisonError(InputError):
    """The two reports cannot be compared (different repeat counts, nothing matched, not a report)."""


@dataclass(frozen=True)
class Margin:
    """drop: δ, the largest drop in mean OVL still accepted (PASS needs lower bound > −δ).
    fail_drop: δ₀, the drop that must be shown to FAIL (upper bound < −δ₀); 0 fails on any significant drop."""

    drop: float = 0.02
    fail_drop: float = 0.01

    def __post_init__(self) -> None:
        if not (0 <= self.fail_drop <= self.drop <= 1):
            raise ValueError(f"need 0 ≤ fail_drop ≤ drop ≤ 1, got drop={self.drop}, fail_drop={self.fail_drop}")


# ---------------------------------------------------------------------------------------------- Holm


def holm(p_values: Sequence[float] | np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Holm's step-down procedure (family-wise error ≤ alpha under any dependence).

    Returns (reject, level, adjusted): whether each hypothesis is rejected, the level α/(m − k) it was
    tested at (k = its 0-based rank by p-value; ties keep input order), and the Holm-adjusted p-value
    max_{j ≤ k} min(1, (m − j)·p_(j)). reject[i] ⇔ adjusted[i] ≤ alpha.
    """
    p = np.asarray(p_values, dtype=float)
    m = p.size
    order = np.argsort(p, kind="stable")
    ranks = np.empty(m, dtype=int)
    ranks[order] = np.arange(m)
    level = alpha / (m - ranks)
    adjusted_sorted = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    # Step down: reject the smallest p-values while each is within its level; stop at the first that is not.
    within = p[order] <= level[order]
    stop = int(np.argmin(within)) if not within.all() else m
    reject = np.zeros(m, dtype=bool)
    reject[order[:stop]] = True
    return reject, level, adjusted


# ---------------------------------------------------------------------------------------------- pairing


@dataclass(frozen=True)
class Paired:
    """The renderings measured in both reports, sorted by instance_id."""

    instance_id: list[str]
    latent_ids: np.ndarray
    p_star: np.ndarray
    new: dict[str, np.ndarray]  # primitive → repeat-mean probability (NaN where not asked)
    base: dict[str, np.ndarray]
    new_repeats: dict[str, np.ndarray | None]  # primitive → (n, r) per-repeat probabilities, or None
    base_repeats: dict[str, np.ndarray | None]
    family: list[str | None]  # of each rendering, for the per-family Δ (None in a report without it)
    repeats: int
    only_in_new: int
    only_in_baseline: int


def pair_reports(new: Mapping[str, Any], baseline: Mapping[str, Any]) -> Paired:
    """Match the items of two reports on instance_id. Raises ComparisonError when they cannot be compared."""
    new_items = _items_by_id(new, "the new report")
    base_items = _items_by_id(baseline, "the baseline report")
    shared = sorted(new_items.keys() & base_items.keys())
    if not shared:
        raise ComparisonError(
            f"no rendering is in both reports ({len(new_items)} in the new one, {len(base_items)} in the "
            "baseline): compare runs of the same dataset"
        )
    wrong_latent = [
        i for i in shared if new_items[i].get("latent_instance_id") != base_items[i].get("latent_instance_id")
    ]
    if wrong_latent:
        raise ComparisonError(
            f"{len(wrong_latent)} matched renderings belong to different latent problems in the two reports "
            f"(first: {wrong_latent[0]}): they were not computed on the same dataset"
        )
    new_r = _repeat_count(new, [new_items[i] for i in shared], "this run")
    base_r = _repeat_count(baseline, [base_items[i] for i in shared], "the baseline")
    # What is compared is the mean over all the model repeats behind each value: samples × repeats per sample.
    new_avg, base_avg = new_r * _per_answer(new), base_r * _per_answer(baseline)
    if new_avg != base_avg:
        raise ComparisonError(
            f"the baseline averages {base_avg} repeat{'s' if base_avg != 1 else ''} per rendering and this run "
            f"{new_avg}: the OVL of a repeat mean depends on the number of repeats (averaging more repeats removes "
            "noise, so the same model scores higher), so only recordings averaging as many repeats compare"
        )
    new_rows = [new_items[i] for i in shared]
    base_rows = [base_items[i] for i in shared]
    return Paired(
        instance_id=shared,
        latent_ids=np.asarray([new_items[i]["latent_instance_id"] for i in shared], dtype=str),
        p_star=np.asarray([float(new_items[i]["p_star"]) for i in shared]),
        new={prim: _column(new_rows, column) for prim, (column, _) in COLUMNS.items()},
        base={prim: _column(base_rows, column) for prim, (column, _) in COLUMNS.items()},
        new_repeats=per_repeat(new_rows, new_r) if _per_answer(new) == 1 else dict.fromkeys(COLUMNS),
        base_repeats=per_repeat(base_rows, base_r) if _per_answer(baseline) == 1 else dict.fromkeys(COLUMNS),
        family=[new_items[i].get("family") for i in shared],
        repeats=new_avg,
        only_in_new=len(new_items.keys() - base_items.keys()),
        only_in_baseline=len(base_items.keys() - new_items.keys()),
    )


def _items_by_id(report: Mapping[str, Any], what: str) -> dict[str, Mapping[str, Any]]:
    items = report.get("items") if isinstance(report, Mapping) else None
    if not isinstance(items, list):
        raise ComparisonError(f"{what} has no items[] (not a sys1cal report, or one written without items)")
    out: dict[str, Mapping[str, Any]] = {}
    for item in items:
        if not isinstance(item, Mapping) or "instance_id" not in item or "p_star" not in item:
            raise ComparisonError(f"{what} has an item without instance_id or p_star")
        if item["instance_id"] in out:
            raise ComparisonError(f"{what} lists rendering {item['instance_id']} twice")
        out[item["instance_id"]] = item
    return out


def _repeat_count(report: Mapping[str, Any], items: list[Mapping[str, Any]], what: str) -> int:
    counts = {int(item["repeats"]) for item in items if item.get("repeats") is not None}
    if len(counts) > 1:
        raise ComparisonError(
            f"{what} has renderings with different repeat counts ({', '.join(map(str, sorted(counts)))}); "
            "the OVL of a repeat mean depends on the number of repeats, so it cannot be compared item by item"
        )
    if counts:
        return counts.pop()
    if isinstance(report.get("repeats"), int):
        return int(report["repeats"])
    raise ComparisonError(f"{what} does not say how many repeats each rendering has")


def _per_answer(report: Mapping[str, Any]) -> int:
    """Model repeats averaged into each of a report's samples (10 for cassettes rebuilt from published means)."""
    value = report.get("repeats_per_answer")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1


def _column(items: list[Mapping[str, Any]], key: str) -> np.ndarray:
    return np.asarray([np.nan if item.get(key) is None else float(item[key]) for item in items])


def per_repeat(items: list[Mapping[str, Any]], repeats: int) -> dict[str, np.ndarray | None]:
    """Per primitive: (n, r) per-repeat probabilities (Score: μ of each repeat's distribution), NaN where
    missing; None when no item carries that primitive's samples or there is a single repeat (then the
    repeat noise cannot be estimated). One pass over the samples for all primitives."""
    if repeats < 2:
        return dict.fromkeys(COLUMNS)
    keys = [sample_key for _, sample_key in COLUMNS.values()]
    found: dict[str, tuple[list[int], list[int], list[Any]]] = {key: ([], [], []) for key in keys}
    for i, item in enumerate(items):
        for k, sample in enumerate((item.get("samples") or [])[:repeats]):
            if not isinstance(sample, dict):
                continue
            for key in keys:
                value = sample.get(key)
                if value is not None:
                    rows, cols, values = found[key]
                    rows.append(i)
                    cols.append(k)
                    values.append(value)
    out: dict[str, np.ndarray | None] = {}
    for prim, (_, key) in COLUMNS.items():
        rows, cols, values = found[key]
        out[prim] = _to_matrix(len(items), repeats, rows, cols, values, score=key == "score")
    return out


def _to_matrix(
    n: int, repeats: int, rows: list[int], cols: list[int], values: list[Any], *, score: bool
) -> np.ndarray | None:
    if not values:
        return None
    if score:
        try:
            q = np.asarray(values, dtype=float).reshape(len(values), -1)
        except ValueError:  # ragged distributions: not a 10-level Score
            return None
        if q.shape[1] != LEVEL_VALUES.size:
            return None
        with np.errstate(invalid="ignore", divide="ignore"):
            flat = score_expectation(q) / q.sum(axis=1)
    else:
        flat = np.asarray(values, dtype=float)
    out = np.full((n, repeats), np.nan)
    out[rows, cols] = flat
    return out


def within_variance(values: np.ndarray | None, rows: np.ndarray) -> float | None:
    """Mean over items of the sample variance across repeats (σ_w²), on the selected rows."""
    if values is None:
        return None
    sub = values[rows]
    complete = np.sum(~np.isnan(sub), axis=1) >= 2
    if not complete.any():
        return None
    return float(np.mean(np.nanvar(sub[complete], axis=1, ddof=1)))


# ---------------------------------------------------------------------------------------------- compare


def compare_reports(
    new: Mapping[str, Any],
    baseline: Mapping[str, Any],
    *,
    margins: Mapping[str, Margin] | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    resamples: int = RESAMPLES,
    primitives: Iterable[str] = PRIMITIVES,
) -> dict[str, Any]:
    """Compare mean OVL per primitive, new − baseline, paired by rendering. JSON-able (no NaN).

    margins: per primitive (default Margin() for each gated primitive). primitives: the gated metrics;
    a gated primitive not measured in both reports gets verdict NOT MEASURED and leaves the Holm family.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    gated = [p for p in PRIMITIVES if p in set(primitives)]
    margins = {p: (margins or {}).get(p, Margin()) for p in gated}
    paired = pair_reports(new, baseline)
    clusters = Clusters.of(paired.latent_ids)
    counts = clusters.resample_counts(np.random.default_rng(seed), resamples)  # (B, J), shared by all metrics

    metrics: dict[str, dict[str, Any]] = {}
    boots: dict[str, np.ndarray] = {}
    for prim in gated:
        metrics[prim], boot = _measure(paired, prim, clusters, counts, margins[prim])
        if boot is not None:
            boots[prim] = boot

    measured = list(boots)
    if measured:
        _decide_with_holm(metrics, boots, margins, paired, alpha)
    return {
        "matched": len(paired.instance_id),
        "only_in_new": paired.only_in_new,
        "only_in_baseline": paired.only_in_baseline,
        "latent_problems": clusters.count,
        "repeats": paired.repeats,
        "alpha": alpha,
        "correction": f"Holm over {len(measured)} metric{'s' if len(measured) != 1 else ''}, "
        "separately for 'shown worse' and 'shown non-inferior'",
        "resamples": resamples,
        "seed": seed,
        "power": POWER,
        "metrics": metrics,
    }


def _decide_with_holm(
    metrics: dict[str, dict[str, Any]],
    boots: dict[str, np.ndarray],
    margins: Mapping[str, Margin],
    paired: Paired,
    alpha: float,
) -> None:
    """Verdicts of the measured primitives, with Holm's levels in each family (shown worse, shown non-inferior)."""
    measured = list(boots)
    pass_reject, pass_level, pass_adj = holm([metrics[p]["p_noninferior"] for p in measured], alpha)
    fail_reject, fail_level, fail_adj = holm([metrics[p]["p_worse"] for p in measured], alpha)
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
) -> tuple[dict[str, Any], np.ndarray | None]:
    new, base = paired.new[prim], paired.base[prim]
    both = ~np.isnan(new) & ~np.isnan(base)
    out: dict[str, Any] = {
        "metric": f"{prim}.mean_ovl",
        "label": f"{LABELS[prim]} mean OVL",
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
        missing = [w for w, v in (("this run", new), ("the baseline", base)) if np.isnan(v).all()]
        out["reason"] = (
            f"{LABELS[prim]} was not asked in {' or '.join(missing)}"
            if missing
            else f"{LABELS[prim]} was measured on fewer than 2 latent problems in both reports"
        )
        return out, None
    ovl_new = ovl(new, paired.p_star)
    ovl_base = ovl(base, paired.p_star)
    d = np.where(both, ovl_new - ovl_base, 0.0)
    sums = clusters.sums(d)
    sizes = clusters.sums(both.astype(float))
    numerator, denominator = counts @ sums, counts @ sizes
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = np.where(denominator > 0, numerator / denominator, np.nan)
    boot = boot[~np.isnan(boot)]
    diff = float(d[both].mean())
    out.update(
        baseline=float(ovl_base[both].mean()),
        new=float(ovl_new[both].mean()),
        difference=diff,
        se=float(boot.std(ddof=1)),
        sd_d=float(d[both].std(ddof=1)) if both.sum() > 1 else 0.0,
        # Bootstrap p-values of the two one-sided tests: H0 Δ ≤ −δ (for PASS) and H0 Δ ≥ −δ₀ (for FAIL).
        p_noninferior=float((1 + np.sum(boot <= -margin.drop)) / (boot.size + 1)),
        p_worse=float((1 + np.sum(boot >= -margin.fail_drop)) / (boot.size + 1)),
        by_family=group_differences(paired.family, clusters, counts, d, both, ovl_new, ovl_base),
    )
    return out, boot


def _decide(
    out: dict[str, Any],
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
        lower=lower,
        lower_level=1 - pass_level,
        upper=upper,
        upper_level=1 - fail_level,
        p_noninferior_holm=p_pass_holm,
        p_worse_holm=p_fail_holm,
        verdict=verdict,
    )
    noise, within_sum = _noise(out, paired, prim)
    out.update(noise)
    out["design"] = design_check(out, margin.drop, pass_level, paired.repeats, within_sum, power=POWER)
    if verdict == Verdict.INCONCLUSIVE:
        out["advice"] = _advice(out, margin, paired.repeats, pass_level, fail_level, within_sum)


def per_repeat_ovl(per_repeat_p: np.ndarray | None, p_star: np.ndarray) -> np.ndarray | None:
    """(n, r) per-repeat OVL = 1 − |p − p*| from per-repeat probabilities."""
    return None if per_repeat_p is None else ovl(per_repeat_p, p_star[:, None])


def _noise(out: dict[str, Any], paired: Paired, prim: str) -> tuple[dict[str, Any], float | None]:
    """σ_w (per-repeat SD of per-item OVL, the statistics doc's definition, pooled over both recordings),
    the part of Var(D) it explains, σ_Δ (SD of the true per-item change) and the design effect of
    clustering by latent problem. (The SD of the answers themselves would overstate the noise in OVL,
    which folds the answer at p*: up to 2.8× in variance for a model centred on p*.)"""
    rows = ~np.isnan(paired.new[prim]) & ~np.isnan(paired.base[prim])
    w_new = within_variance(per_repeat_ovl(paired.new_repeats[prim], paired.p_star), rows)
    w_base = within_variance(per_repeat_ovl(paired.base_repeats[prim], paired.p_star), rows)
    var_d = out["sd_d"] ** 2
    n = out["n"]
    deff = n * out["se"] ** 2 / var_d if var_d > 0 else None
    result: dict[str, Any] = {"design_effect": deff, "sigma_w": None, "sigma_delta": None}
    if w_new is None or w_base is None:
        return result, None
    noise = (w_new + w_base) / paired.repeats  # ≈ 2σ_w²/r: what repeat noise adds to Var(D)
    result.update(sigma_w=math.sqrt((w_new + w_base) / 2), sigma_delta=math.sqrt(max(var_d - noise, 0.0)))
    return result, w_new + w_base


def _advice(
    out: dict[str, Any], margin: Margin, repeats: int, pass_level: float, fail_level: float, within_sum: float | None
) -> dict[str, Any]:
    """How much more data would make this metric decisive, from the paired sample-size formula (docs/statistics.md §6.2)
    evaluated at the observed difference: n = (z_{1−α} + z_{power})² · V / gap², V = n·se² (per-item
    variance of D including the design effect), gap = distance from Δ̂ to the margin it is heading for."""
    diff, n, se = out["difference"], out["n"], out["se"]
    gaps = {Verdict.PASSED: diff + margin.drop, Verdict.FAILED: -margin.fail_drop - diff}
    heading, gap = max(gaps.items(), key=lambda kv: kv[1])
    advice: dict[str, Any] = {"towards": heading, "renderings": None, "repeats": None, "text": ""}
    if gap <= 0 or se == 0:
        advice["text"] = (
            "the observed difference sits on the margin, so no number of renderings or repeats would decide it"
        )
        return advice
    level = pass_level if heading == Verdict.PASSED else fail_level
    z = _NORMAL.inv_cdf(1 - level) + _NORMAL.inv_cdf(POWER)
    need_n = math.ceil(z**2 * n * se**2 / gap**2)
    advice["renderings"] = need_n
    verdict = "a pass" if heading == Verdict.PASSED else "a fail"
    if need_n <= n:
        advice["text"] = (
            f"a difference of {diff:+.4f} is within reach of the current {n} paired renderings ({POWER:.0%} power "
            f"needs about {need_n} for {verdict}); this recording fell just short, and re-running until it passes "
            "would void the error rate"
        )
        return advice
    ways = [f"about {need_n} paired renderings (now {n})"]
    note = ""
    deff = out.get("design_effect")
    sigma_delta = out.get("sigma_delta")
    if within_sum is not None and deff and sigma_delta is not None:
        room = n * gap**2 / (z**2 * deff) - sigma_delta**2  # what Var(D) may be, minus the item-to-item part
        if room > 0:
            need_r = max(math.ceil(within_sum / room), repeats + 1)
            advice["repeats"] = need_r
            ways.append(f"about {need_r} repeats per rendering in both recordings (now {repeats})")
        else:
            note = (
                f"; more repeats alone would not do it (the change itself varies from rendering to rendering, "
                f"σ_Δ = {sigma_delta:.3f})"
            )
    elif repeats < 2:
        note = "; with 1 repeat per rendering the repeat noise is unknown, so what more repeats would do cannot be said"
    advice["text"] = (
        f"if the difference stays at {diff:+.4f}, {' or '.join(ways)} would make it {verdict} with "
        f"{POWER:.0%} power{note}"
    )
    return advice
