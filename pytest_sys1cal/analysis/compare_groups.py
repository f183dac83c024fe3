"""The upgrade comparison per family: Δ mean OVL where a regression sits (docs/statistics.md §6.5).

Descriptive: the verdicts stay those of compare.py, over the whole dataset. The intervals come from the
same latent-problem bootstrap (the same resample counts), restricted to each family's renderings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .stats import Clusters

LEVEL = 0.95  # two-sided percentile intervals, one per cell, not corrected for the number of cells


def group_differences(
    groups: Sequence[str | None],
    clusters: Clusters,
    counts: np.ndarray,
    d: np.ndarray,
    both: np.ndarray,
    ovl_new: np.ndarray,
    ovl_base: np.ndarray,
) -> dict[str, Any] | None:
    """Per group with paired renderings (keys sorted): n, latent problems, mean OVL in the baseline and the
    new run, their difference Δ, and its bootstrap SE and 95% interval.

    d: per rendering OVL_new − OVL_base (0 where not paired); both: paired; counts: (B, J) latent-problem
    multiplicities of compare.py's bootstrap. A group's Δ in one resample is the ratio of its resampled
    sums, as for the whole dataset; resamples that drew none of its latent problems are left out
    (``resamples`` says how many remain). None when an item has no group (a report without ``family``)."""
    if any(group is None for group in groups):
        return None
    labels = np.asarray(groups, dtype=str)
    out: dict[str, Any] = {}
    for name in sorted(set(labels[both].tolist())):
        rows = both & (labels == name)
        numerator = counts @ clusters.sums(np.where(rows, d, 0.0))
        denominator = counts @ clusters.sums(rows.astype(float))
        drawn = denominator > 0
        boot = numerator[drawn] / denominator[drawn]
        enough = boot.size >= 2
        out[name] = {
            "n": int(rows.sum()),
            "latent_problems": int(np.unique(clusters.codes[rows]).size),
            "baseline": float(ovl_base[rows].mean()),
            "new": float(ovl_new[rows].mean()),
            "difference": float(d[rows].mean()),
            "se": float(boot.std(ddof=1)) if enough else None,
            "ci": [float(q) for q in np.quantile(boot, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])] if enough else None,
            "level": LEVEL,
            "resamples": int(boot.size),
        }
    return out
