"""Where an upgrade moved: Δ per family and per representation, each cell tested, and "regressed" only as a
Benjamini–Hochberg discovery over every cell and primitive (docs/statistics.md §6.5).

A cell's Δ̂ is the mean of D_i = OVL_new,i − OVL_base,i over its paired renderings, with a percentile interval
from the upgrade comparison's own latent-problem resamples (a resample's cell Δ is the ratio of its resampled
sums, as for the whole dataset). A cell is tested for having regressed *where* the model regressed: its Δ below
0 **and** below the Δ of the other paired renderings (so a drop shared by every cell is the verdict's news, not a
cell's). Each one-sided hypothesis has a bootstrap p-value, (1 + #{resamples on the null's side}) / (B + 1), from
the same resamples, which keep every rendering of a latent problem together (families nest problems,
representations cross them; both are handled alike); the cell's p-value is the larger of the two, the
intersection–union test of both. Benjamini–Hochberg at q over all cells of all compared primitives marks the
discoveries; scripts/cell_fdr_simulation.py measures the false discovery rate and the power.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .stats import Clusters

GROUP_LEVEL = 0.95  # per-cell two-sided percentile intervals, one per cell, not corrected for the number of cells
FDR = 0.10  # the Benjamini–Hochberg level of the "regressed" marks
WORST = 3  # renderings named per cell, the lowest D first
GROUPINGS = ("by_family", "by_representation")


def group_differences(
    groups: Sequence[str | None],
    clusters: Clusters,
    counts: np.ndarray,
    d: np.ndarray,
    both: np.ndarray,
    ovl_new: np.ndarray,
    ovl_base: np.ndarray,
    instance_ids: Sequence[str] = (),
) -> dict[str, Any] | None:
    """Per group with paired renderings (keys sorted): n, latent problems, mean OVL in the baseline and the new
    run, their difference Δ, its bootstrap SE and 95% interval; ``rest``, the Δ of the other paired renderings;
    ``p_value`` of "this cell regressed, and more than the rest"; ``worst``, its lowest-D renderings.

    d: per rendering OVL_new − OVL_base (0 where not paired); both: paired; counts: (B, J) latent-problem
    multiplicities of the upgrade comparison's bootstrap. Resamples that drew none of a group's latent problems
    are left out (``resamples`` says how many remain). None when an item has no group."""
    if any(group is None for group in groups):
        return None
    labels = np.asarray(groups, dtype=str)
    totals = (counts @ clusters.sums(np.where(both, d, 0.0)), counts @ clusters.sums(both.astype(float)))
    out: dict[str, Any] = {}
    for name in sorted(set(labels[both].tolist())):
        rows = both & (labels == name)
        out[name] = _cell(rows, both, clusters, counts, d, totals, ovl_new, ovl_base, instance_ids)
    return out


def _cell(
    rows: np.ndarray,
    both: np.ndarray,
    clusters: Clusters,
    counts: np.ndarray,
    d: np.ndarray,
    totals: tuple[np.ndarray, np.ndarray],
    ovl_new: np.ndarray,
    ovl_base: np.ndarray,
    instance_ids: Sequence[str],
) -> dict[str, Any]:
    numerator = counts @ clusters.sums(np.where(rows, d, 0.0))
    denominator = counts @ clusters.sums(rows.astype(float))
    rest_numerator, rest_denominator = totals[0] - numerator, totals[1] - denominator
    drawn = denominator > 0
    boot = numerator[drawn] / denominator[drawn]
    enough = boot.size >= 2
    cell: dict[str, Any] = {
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
    compared = drawn & (rest_denominator > 0)
    if enough and compared.sum() >= 2:
        contrast = numerator[compared] / denominator[compared] - rest_numerator[compared] / rest_denominator[compared]
        p_below_zero = (1 + np.sum(boot >= 0)) / (boot.size + 1)
        p_below_rest = (1 + np.sum(contrast >= 0)) / (contrast.size + 1)
        cell["p_value"] = float(max(p_below_zero, p_below_rest))
    else:
        cell["p_value"] = None
    if instance_ids:
        order = np.flatnonzero(rows)[np.argsort(d[rows], kind="stable")[:WORST]]
        cell["worst"] = [{"instance_id": instance_ids[i], "d": float(d[i])} for i in order]
    return cell


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


def mark_regressed(metrics: Mapping[str, dict[str, Any]], q: float = FDR) -> dict[str, Any]:
    """Benjamini–Hochberg over every tested cell of every compared primitive: each cell gets ``q_value`` (its
    adjusted p-value) and ``regressed``; returns what was done, for the report."""
    cells = [
        cell
        for metric in metrics.values()
        for grouping in GROUPINGS
        for cell in (metric.get(grouping) or {}).values()
        if cell.get("p_value") is not None
    ]
    rejected, adjusted = benjamini_hochberg([cell["p_value"] for cell in cells], q)
    for metric in metrics.values():
        for grouping in GROUPINGS:
            for cell in (metric.get(grouping) or {}).values():
                cell.update(q_value=None, regressed=False)  # untested (too few resamples drew it): never marked
    for cell, reject, value in zip(cells, rejected, adjusted, strict=True):
        cell.update(q_value=float(value), regressed=bool(reject))
    return {"q": q, "tested": len(cells), "regressed": int(rejected.sum())}
