"""Soft-target calibration per primitive: binned ECE and the model part of the Brier score, against p*.

Every item's exact p* is known, so it is the target. Binary labels drawn from p* would add pure Bernoulli
noise: on 365 items label-ECE reads 0.05–0.065 for a perfectly calibrated model, soft ECE exactly 0
(docs/statistics.md §1.4). Computed on item means (one point per rendering).
"""

from __future__ import annotations

import numpy as np

from ..document import CalibrationRow

BINS = 15


def calibration(p: np.ndarray, target: np.ndarray) -> CalibrationRow:
    """ece: 15 equal-width bins; ece_equal_mass: 15 equal-mass bins; brier: mean (p − p*)², the part of the
    expected Brier score that depends on the model (the rest, p*(1−p*), is the same for every model)."""
    if p.size == 0:
        return {
            "n": 0,
            "ece": None,
            "ece_bins": None,
            "ece_equal_mass": None,
            "ece_equal_mass_bins": None,
            "brier": None,
            "reason": "not enough data: no answers",
        }
    ece, bins = binned_gap(equal_width_bins(p, BINS), p, target)
    ece_mass, bins_mass = binned_gap(equal_mass_bins(p, BINS), p, target)
    return {
        "n": int(p.size),
        "ece": ece,
        "ece_bins": bins,
        "ece_equal_mass": ece_mass,
        "ece_equal_mass_bins": bins_mass,
        "brier": float(np.mean((p - target) ** 2)),
    }


def equal_width_bins(p: np.ndarray, bins: int) -> np.ndarray:
    """Bins [k/B, (k+1)/B), the last closed. Edges are exact k/B: linspace's 0.30000000000000004 would move
    outputs that sit on an edge."""
    edges = np.arange(bins + 1) / bins
    return np.clip(np.searchsorted(edges, p, side="right") - 1, 0, bins - 1)


def equal_mass_bins(p: np.ndarray, bins: int) -> np.ndarray:
    """Bins at the quantiles of p. Identical outputs always share a bin (duplicate edges merge), so there
    may be fewer bins than asked, and the result never depends on the order of tied items."""
    edges = np.unique(np.quantile(p, np.arange(1, bins) / bins))
    return np.searchsorted(edges, p, side="right")


def binned_gap(bin_of: np.ndarray, p: np.ndarray, target: np.ndarray) -> tuple[float, int]:
    """Σ_b (n_b/n)·|mean p − mean target in b| = Σ_b |Σ_b p − Σ_b target| / n, and the non-empty bin count."""
    gap = np.bincount(bin_of, weights=p - target)
    return float(np.abs(gap).sum() / p.size), int(np.unique(bin_of).size)
