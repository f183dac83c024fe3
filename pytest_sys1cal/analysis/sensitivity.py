"""Paper Table 6: representation sensitivity, how far equivalent renderings of one problem disagree."""

from __future__ import annotations

import numpy as np

from ..document import SensitivityRow
from .stats import Clusters


def spread(values: np.ndarray, latent_ids: np.ndarray) -> SensitivityRow:
    """Mean pairwise and max |Δ| between the renderings of each latent problem with ≥ 2 of them,
    averaged over those problems."""
    clusters, mean_pairwise, max_gap = per_problem_spread(values, latent_ids)
    multi = clusters.sizes >= 2
    if not multi.any():
        return {
            "mean_pairwise_tv": None,
            "mean_max_tv": None,
            "latent_problems": 0,
            "reason": "not enough data: no latent problem has 2 measured renderings",
        }
    return {
        "mean_pairwise_tv": float(mean_pairwise[multi].mean()),
        "mean_max_tv": float(max_gap[multi].mean()),
        "latent_problems": int(multi.sum()),
    }


def per_problem_spread(values: np.ndarray, latent_ids: np.ndarray) -> tuple[Clusters, np.ndarray, np.ndarray]:
    """(clusters, mean pairwise |Δ|, max |Δ|) of each latent problem, NaN where it has fewer than 2 renderings.
    The threshold rule's bootstrap reweights these per-problem values (gates/thresholds_rule.py).

    The mean over the K(K−1)/2 unordered pairs is the Gini mean difference: with the cluster's values
    sorted, Σ_{i<j} (x_(j) − x_(i)) = Σ_i (2i − K − 1)·x_(i) (i = 1..K), so no pair is ever formed.
    """
    clusters = Clusters.of(latent_ids)
    if clusters.count == 0:
        return clusters, np.zeros(0), np.zeros(0)
    order = np.lexsort((values, clusters.codes))  # by cluster, then by value
    ordered = values[order]
    codes = clusters.codes[order]
    sizes = clusters.sizes[codes]
    rank = np.arange(values.size) - clusters.starts[codes]  # 0-based position within the cluster
    pair_sums = np.add.reduceat((2 * rank - sizes + 1) * ordered, clusters.starts)
    multi = clusters.sizes >= 2
    k = clusters.sizes.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_pairwise = np.where(multi, pair_sums / (k * (k - 1) / 2), np.nan)
    last = clusters.starts + clusters.sizes - 1
    max_gap = np.where(multi, ordered[last] - ordered[clusters.starts], np.nan)
    return clusters, mean_pairwise, max_gap
