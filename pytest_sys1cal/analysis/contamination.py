"""Is a model suspiciously better on the public Sys1Cal items than on fresh ones? Per primitive, the mean OVL
difference public − fresh (raw, and reweighted to the public set's stratum mix) with latent-problem bootstrap
intervals, Holm-adjusted p-values and a verdict in words. See docs/contamination.md."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..defaults import UPGRADE_RESAMPLES
from ..document import ReportDocument
from ..document_commands import ContaminationCheck, ContaminationMetric, Difference
from ..vocabulary import LABELS, PRIMITIVES
from .contamination_sides import (
    FILLS_EVERY_CELL,
    MIN_FRESH_PER_CELL,
    ContaminationError,
    Sides,
    build_sides,
    check_design,
    resolve_exclusions,
    strata_keys,
)
from .paired import holm
from .stats import percentile_interval

CHUNK = 250  # bootstrap resamples per block: bounds the (resamples × latent problems) count matrices
DEFAULT_STRATA = "family+band"

SUSPICIOUS = "suspicious"
NOT_SUSPICIOUS = "not suspicious"

# Per primitive and side: (J, C) sums of OVL and counts of measured renderings per latent problem and stratum.
StratumSums = Mapping[str, tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class _Rule:
    """How a difference becomes a verdict: interval level, margin, and which difference decides."""

    level: float
    margin: float
    verdict_key: str  # "raw" or "reweighted"


def check_contamination(
    public: ReportDocument,
    fresh: ReportDocument,
    *,
    seed: int = 0,
    resamples: int = UPGRADE_RESAMPLES,
    level: float = 0.95,
    stratify: str = DEFAULT_STRATA,
    exclude: Iterable[str] | None = None,
    margin: float = 0.0,
    primitives: Iterable[str] = PRIMITIVES,
    ignore_repeats: bool = False,
    bundled_sha256: str | None = None,
) -> ContaminationCheck:
    """Per primitive, mean OVL public − fresh (raw and reweighted to the public stratum mix) with bootstrap
    intervals and a verdict. JSON-able (no NaN).

    public, fresh: reports as `read_report` returns them. exclude: family / representation /
    family:representation names left out of both reports; None applies the default (the public file's leaking
    renderings, when `public` is a report of the bundled sys1cal-v1, whose sha256 is `bundled_sha256`), [] or
    ["none"] nothing. margin: a public advantage must exceed it (at the lower end of the interval) to be called
    suspicious. Raises ContaminationError when the reports cannot be compared or a setting is out of range.
    """
    keys = strata_keys(stratify)
    _check_settings(level, resamples)
    chosen = [p for p in PRIMITIVES if p in set(primitives)]
    caveats = check_design(public, fresh, ignore_repeats)
    exclusions = resolve_exclusions(exclude, public, fresh, bundled_sha256)
    sides = build_sides(public, fresh, exclusions, keys)
    verdict_key = "raw" if stratify == "none" else "reweighted"
    metrics = _compare(sides, chosen, _Rule(level, margin, verdict_key), seed, resamples)
    flagged = [prim for prim, metric in metrics.items() if metric["verdict"] == SUSPICIOUS]
    return {
        "model": public["model"].copy(),
        "repeats": {"public": public.get("repeats"), "fresh": fresh.get("repeats")},
        "public": sides.public.summary(public),
        "fresh": sides.fresh.summary(fresh),
        "excluded": exclusions.specs,
        "exclusion_note": exclusions.note,
        "stratify": stratify,
        "verdict_uses": verdict_key,
        "level": level,
        "margin": margin,
        "resamples": resamples,
        "seed": seed,
        "bootstrap": _bootstrap_in_words(keys),
        "caveats": caveats + sides.thin_caveat(),
        "metrics": metrics,
        "suspicious": flagged,
        "verdict": SUSPICIOUS if flagged else NOT_SUSPICIOUS,
    }


def _check_settings(level: float, resamples: int) -> None:
    if not 0 < level < 1:
        raise ContaminationError(f"level must lie in (0, 1), got {level}")
    if resamples < 100:
        raise ContaminationError(f"use at least 100 resamples, got {resamples}")


def _bootstrap_in_words(keys: Sequence[str]) -> str:
    return (
        "latent problems drawn with replacement, independently in each report: within each family of the public "
        "set, within each "
        + ("family × p* band (cells with few problems pooled per family)" if "band" in keys else "family")
        + " of the fresh set"
    )


def _compare(
    sides: Sides, chosen: Sequence[str], rule: _Rule, seed: int, resamples: int
) -> dict[str, ContaminationMetric]:
    """Each chosen primitive's metric, with Holm-adjusted p-values across the primitives compared."""
    tables = {prim: {w: side.sums(prim, sides.strata) for w, side in sides.by_name().items()} for prim in chosen}
    boots = _bootstrap(sides, tables, seed, resamples)
    metrics: dict[str, ContaminationMetric] = {}
    for prim in chosen:
        point_raw, point_reweighted = _statistics(tables[prim], None, sides.usable)
        point = {"raw": float(point_raw[0]), "reweighted": float(point_reweighted[0])}
        metrics[prim] = _metric(prim, tables[prim], sides, point, boots[prim], rule)
    measured = [prim for prim in chosen if metrics[prim]["verdict"] is not None]
    if measured:
        _, _, adjusted = holm([metrics[prim]["p_value"] for prim in measured], 1 - rule.level)
        for prim, p_holm in zip(measured, adjusted, strict=True):
            metrics[prim]["p_value_holm"] = float(p_holm)
    return metrics


def _bootstrap(
    sides: Sides, tables: Mapping[str, StratumSums], seed: int, resamples: int
) -> dict[str, dict[str, np.ndarray]]:
    """Per primitive, the raw and reweighted differences of every resample. One generator draws the public
    resamples, then the fresh ones, chunk by chunk; the draws are shared by every primitive."""
    rng = np.random.default_rng(seed)
    boots: dict[str, dict[str, list[np.ndarray]]] = {prim: {"raw": [], "reweighted": []} for prim in tables}
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        counts = {w: side.resample(rng, size) for w, side in sides.by_name().items()}
        for prim, table in tables.items():
            raw, reweighted = _statistics(table, counts, sides.usable)
            boots[prim]["raw"].append(raw)
            boots[prim]["reweighted"].append(reweighted)
    return {prim: {key: np.concatenate(parts) for key, parts in boot.items()} for prim, boot in boots.items()}


def _statistics(
    table: StratumSums, counts: Mapping[str, np.ndarray] | None, usable: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Raw and reweighted differences, public − fresh: one value per resample (or the point estimate when
    counts is None).

    Reweighted: strata measured in both reports (in the original data) only; the public side is its mean
    over them, the fresh side the mean of its stratum means weighted by the public shares of renderings,
    both recomputed from each resample (the public mix is itself estimated from the public sample)."""
    totals: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for which, (sums, n) in table.items():
        if counts is None:
            totals[which] = (sums.sum(axis=0, keepdims=True), n.sum(axis=0, keepdims=True))
        else:
            totals[which] = (counts[which] @ sums, counts[which] @ n)
    (s_pub, n_pub), (s_fresh, n_fresh) = totals["public"], totals["fresh"]
    shared = _shared(table, usable)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = s_pub.sum(1) / n_pub.sum(1) - s_fresh.sum(1) / n_fresh.sum(1)
        public = s_pub[:, shared].sum(1) / n_pub[:, shared].sum(1)
        weights = n_pub[:, shared] / n_pub[:, shared].sum(1, keepdims=True)
        fresh_means = s_fresh[:, shared] / n_fresh[:, shared]
        fresh = np.where(weights > 0, weights * fresh_means, 0.0).sum(1)
        fresh[np.any((weights > 0) & np.isnan(fresh_means), axis=1)] = np.nan
    return raw, public - fresh


def _shared(table: StratumSums, usable: np.ndarray) -> np.ndarray:
    """Usable strata with measured renderings in both reports."""
    return usable & (table["public"][1].sum(axis=0) > 0) & (table["fresh"][1].sum(axis=0) > 0)


def _weights(table: StratumSums, usable: np.ndarray) -> np.ndarray:
    """The public set's shares of renderings over the shared strata (0 elsewhere)."""
    weights = np.where(_shared(table, usable), table["public"][1].sum(axis=0), 0.0)
    total = weights.sum()
    return weights / total if total > 0 else weights


def _metric(
    prim: str,
    table: StratumSums,
    sides: Sides,
    point: Mapping[str, float],
    boot: Mapping[str, np.ndarray],
    rule: _Rule,
) -> ContaminationMetric:
    """One primitive's comparison: means, both differences with their intervals, the bootstrap p-value of
    "public advantage ≤ margin", the verdict and the per-stratum means; or the reason it was not compared."""
    pub_sums, pub_n = (a.sum(axis=0) for a in table["public"])
    fresh_sums, fresh_n = (a.sum(axis=0) for a in table["fresh"])
    weights = _weights(table, sides.usable)
    shared = weights > 0
    out: ContaminationMetric = {
        "label": LABELS[prim],
        "n": {"public": int(pub_n.sum()), "fresh": int(fresh_n.sum())},
        "verdict": None,
    }
    reason = _unmeasured_reason(prim, pub_n, fresh_n, sides.usable) if not shared.any() else _empty_strata(boot)
    if reason is not None:
        return {**out, "reason": reason}
    with np.errstate(invalid="ignore", divide="ignore"):
        pub_means, fresh_means = pub_sums / pub_n, fresh_sums / fresh_n
    raw, reweighted = (_interval(point[key], boot[key], rule.level) for key in ("raw", "reweighted"))
    chosen = boot[rule.verdict_key][~np.isnan(boot[rule.verdict_key])]
    low, high = (raw if rule.verdict_key == "raw" else reweighted)["ci"]
    return {
        **out,
        "public": float(pub_sums.sum() / pub_n.sum()),
        "fresh": float(fresh_sums.sum() / fresh_n.sum()),
        "public_shared_strata": float(pub_means[shared] @ weights[shared]),
        "fresh_reweighted": float(fresh_means[shared] @ weights[shared]),
        "raw": raw,
        "reweighted": reweighted,
        # One-sided bootstrap p-value of H0: public advantage ≤ margin.
        "p_value": float((1 + np.sum(chosen <= rule.margin)) / (chosen.size + 1)),
        "verdict": SUSPICIOUS if low > rule.margin else NOT_SUSPICIOUS,
        "finding": _finding(low, high, rule.margin),
        "strata": [
            {
                "stratum": name,
                "weight": float(weights[c]),
                "public": {"n": int(pub_n[c]), "mean_ovl": _finite(pub_means[c])},
                "fresh": {"n": int(fresh_n[c]), "mean_ovl": _finite(fresh_means[c])},
            }
            for c, name in enumerate(sides.strata)
            if pub_n[c] > 0 or fresh_n[c] > 0
        ],
        "public_renderings_without_fresh_counterpart": int(pub_n[~shared].sum()),
    }


def _unmeasured_reason(prim: str, pub_n: np.ndarray, fresh_n: np.ndarray, usable: np.ndarray) -> str:
    """Why no stratum is shared: the primitive was not asked, or no shared stratum is usable."""
    missing = [which for which, n in (("public", pub_n), ("fresh", fresh_n)) if n.sum() == 0]
    if missing:
        return f"{LABELS[prim]} was not asked in the {' or '.join(missing)} report"
    if usable.all():
        return "no stratum is measured in both reports"
    return (
        f"no stratum shared with the public set has {MIN_FRESH_PER_CELL} or more fresh latent problems: "
        f"generate at least {FILLS_EVERY_CELL} problems, or use --stratify family"
    )


def _empty_strata(boot: Mapping[str, np.ndarray]) -> str | None:
    """Why the intervals cannot be trusted: too many resamples left a stratum empty (NaN). None when fine."""
    for key in ("raw", "reweighted"):
        empty = int(np.isnan(boot[key]).sum())
        if boot[key].size - empty < 0.99 * boot[key].size:
            return (
                f"{empty} of {boot[key].size} bootstrap resamples left a stratum empty: too few "
                "latent problems per stratum; use coarser --stratify"
            )
    return None


def _interval(point: float, values: np.ndarray, level: float) -> Difference:
    values = values[~np.isnan(values)]
    low, high = percentile_interval(values, level)
    return {"difference": point, "ci": [low, high], "se": float(values.std(ddof=1))}


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _finding(low: float, high: float, margin: float) -> str:
    if low > margin:
        return "suspiciously better on the public set — the public items may have been seen in training"
    if high < 0:
        return "better on the fresh set: no sign that the public items were seen in training"
    if low > 0:
        return (
            f"slightly better on the public set, but not shown to be by more than the margin {margin:+.3f}: "
            "no clear sign of contamination"
        )
    return (
        f"no significant difference: no sign that the public items were seen in training (an advantage up to "
        f"{high:+.3f} cannot be ruled out)"
    )
