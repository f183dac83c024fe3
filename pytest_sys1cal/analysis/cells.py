"""Where an upgrade regressed: Δ per family and per representation, each cell tested, and "regressed" only as a
Benjamini–Hochberg discovery over every cell and primitive (docs/statistics.md §6.5).

A cell's Δ̂ is the mean of D_i = OVL_new,i − OVL_base,i over its paired renderings, with a percentile interval
from the upgrade comparison's own latent-problem resamples (a resample's cell Δ is the ratio of its resampled
sums, as for the whole dataset): descriptive, one per cell. A cell is *marked* only where it is shown worse by
more than the fail margin δ₀ (the upgrade gate's FAILED, cell by cell): a one-sided Student t-test on the latent
problems of the cell (regressed_p), and Benjamini–Hochberg at q over all tested cells of all compared primitives.
scripts/cell_fdr_simulation.py measures the false discovery rate under a uniform degradation at the margin and
the power for one confined to a family.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..document_upgrade import GroupDifference, UpgradeMetric
from ..document_why import CellTests
from .stats import Clusters
from .student_t import t_sf

GROUP_LEVEL = 0.95  # per-cell two-sided percentile intervals, one per cell, not corrected for the number of cells
FDR = 0.10  # the Benjamini–Hochberg level of the "regressed" marks
WORST = 3  # renderings named per cell, the lowest D first
MIN_PROBLEMS = 3  # latent problems a cell's tests need (fewer: the cell is not tested, never marked)


def group_differences(
    groups: Sequence[str | None],
    clusters: Clusters,
    counts: np.ndarray,
    d: np.ndarray,
    both: np.ndarray,
    ovl_new: np.ndarray,
    ovl_base: np.ndarray,
    instance_ids: Sequence[str] = (),
    fail_margin: float | None = None,
) -> dict[str, GroupDifference] | None:
    """Per group with paired renderings (keys sorted): n, latent problems, mean OVL in the baseline and the new
    run, their difference Δ, its bootstrap SE and 95% interval; ``rest``, the Δ of the other paired renderings;
    with `fail_margin` (δ₀) ``p_value`` of "this cell is worse by more than δ₀" (regressed_p); with
    `instance_ids`, ``worst``, its lowest-D renderings.

    d: per rendering OVL_new − OVL_base (0 where not paired); both: paired; counts: (B, J) latent-problem
    multiplicities of the upgrade comparison's bootstrap. Resamples that drew none of a group's latent problems
    are left out (``resamples`` says how many remain). None when an item has no group."""
    if any(group is None for group in groups):
        return None
    labels = np.asarray(groups, dtype=str)
    out: dict[str, GroupDifference] = {}
    for name in sorted(set(labels[both].tolist())):
        rows = both & (labels == name)
        out[name] = _cell(rows, both, clusters, counts, d, ovl_new, ovl_base, instance_ids, fail_margin)
    return out


def _cell(
    rows: np.ndarray,
    both: np.ndarray,
    clusters: Clusters,
    counts: np.ndarray,
    d: np.ndarray,
    ovl_new: np.ndarray,
    ovl_base: np.ndarray,
    instance_ids: Sequence[str],
    fail_margin: float | None,
) -> GroupDifference:
    numerator = counts @ clusters.sums(np.where(rows, d, 0.0))
    denominator = counts @ clusters.sums(rows.astype(float))
    drawn = denominator > 0
    boot = numerator[drawn] / denominator[drawn]
    enough = boot.size >= 2
    cell: GroupDifference = {
        "n": int(rows.sum()),
        "latent_problems": int(np.unique(clusters.codes[rows]).size),
        "baseline": float(ovl_base[rows].mean()),
        "new": float(ovl_new[rows].mean()),
        "difference": float(d[rows].mean()),
        "se": float(boot.std(ddof=1)) if enough else None,
        "ci": [float(q) for q in np.quantile(boot, [(1 - GROUP_LEVEL) / 2, (1 + GROUP_LEVEL) / 2])] if enough else None,
        "level": GROUP_LEVEL,
        "resamples": int(boot.size),
    }
    rest = both & ~rows
    cell["rest"] = float(d[rest].mean()) if rest.any() else None
    cell["p_value"] = None if fail_margin is None else regressed_p(rows, clusters, d, fail_margin)
    if instance_ids:
        order = np.flatnonzero(rows)[np.argsort(d[rows], kind="stable")[:WORST]]
        cell["worst"] = [{"instance_id": instance_ids[i], "d": float(d[i])} for i in order]
    return cell


def regressed_p(rows: np.ndarray, clusters: Clusters, d: np.ndarray, fail_margin: float) -> float | None:
    """The p-value of "this cell is worse by more than δ₀": a one-sided Student t-test on latent problems (the
    unit: a problem's renderings are correlated) of the means m_j of each problem's D over its renderings in the
    cell, H0: mean ≥ −δ₀ against H1: mean < −δ₀. None (not tested) with fewer than MIN_PROBLEMS problems or no
    spread."""
    inside = np.bincount(clusters.codes[rows], minlength=clusters.count)
    sums = np.bincount(clusters.codes[rows], weights=d[rows], minlength=clusters.count)
    means = sums[inside > 0] / inside[inside > 0]
    if means.size < MIN_PROBLEMS or (sd := float(means.std(ddof=1))) == 0.0:
        return None
    # P(T ≤ t) of t = (mean + δ₀)/se, the lower tail: small when the cell's mean is well below −δ₀.
    return t_sf(means.size - 1, -(float(means.mean()) + fail_margin) / (sd / np.sqrt(means.size)))


def benjamini_hochberg(p_values: Sequence[float], q: float) -> tuple[np.ndarray, np.ndarray]:
    """(rejected, adjusted): the step-up procedure at level q; adjusted p-values min_{k ≥ i} min(1, m·p_(k)/k)."""
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if not m:
        return np.zeros(0, dtype=bool), np.zeros(0)
    order = np.argsort(p, kind="stable")
    ranked = p[order] * m / np.arange(1, m + 1)
    adjusted_sorted = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    below = np.flatnonzero(p[order] <= q * np.arange(1, m + 1) / m)
    rejected = np.zeros(m, dtype=bool)
    if below.size:
        rejected[order[: below[-1] + 1]] = True
    return rejected, adjusted


def mark_regressed(metrics: Mapping[str, UpgradeMetric], q: float = FDR) -> CellTests:
    """Benjamini–Hochberg over every tested cell of every compared primitive: each cell gets ``q_value`` (its
    adjusted p-value) and ``regressed``; returns what was done, for the report."""
    every = [cell for metric in metrics.values() for cell in _cells_of(metric)]
    tested = [(cell, p) for cell in every if (p := cell.get("p_value")) is not None]
    rejected, adjusted = benjamini_hochberg([p for _, p in tested], q)
    for cell in every:  # untested (too few latent problems): never marked
        cell["q_value"], cell["regressed"] = None, False
    for (cell, _), reject, value in zip(tested, rejected, adjusted, strict=True):
        cell["q_value"], cell["regressed"] = float(value), bool(reject)
    return {"q": q, "tested": len(tested), "regressed": int(rejected.sum())}


def _cells_of(metric: UpgradeMetric) -> list[GroupDifference]:
    """A compared primitive's cells, by family and by representation."""
    by_family, by_representation = metric.get("by_family"), metric.get("by_representation")
    return [*(by_family or {}).values(), *(by_representation or {}).values()]
