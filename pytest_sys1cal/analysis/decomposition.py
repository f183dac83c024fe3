"""The Brier score against the exact p*, split into miscalibration, discrimination and uncertainty (the CORP /
Murphy decomposition, Dimitriadis, Gneiting & Jordan 2021), and the bin-free reliability curve it rests on
(docs/statistics.md §7).

With the outcome of each rendering drawn from its p*, the expected Brier score of answers f is
S(f) = mean (f − p*)² + mean p*(1 − p*). With c the isotonic (PAV) fit of p* on the answers (ties pooled:
analysis/isotonic.py) and m = mean p*:

    MCB = S(p̂) − S(c)   miscalibration: what the best monotone relabelling of the answers would remove
    DSC = S(m) − S(c)   discrimination: what the answers' ranking is worth over answering m everywhere
    UNC = S(m) = m(1 − m)

so S(p̂) = MCB − DSC + UNC, and MCB, DSC ≥ 0 (p̂ itself and the constant m are monotone in p̂). A monotone
distortion of the answers leaves c, hence DSC, exactly as it was; answers that no longer rank the problems
lose DSC. The bin-free calibration error is the curve's own L1 distance, mean |p̂ − c(p̂)|; the 15-bin ECE stays
in ``calibration`` for continuity. Intervals: latent-problem bootstrap (the problems drawn with replacement,
every rendering of a drawn problem along, seeded), all resamples fitted at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .isotonic import IsotonicMap, Pooled, fit_rows
from .stats import Clusters, percentile_interval, with_reasons

LEVEL = 0.95  # of the percentile intervals
BAND_LEVEL = 0.90  # of the pointwise consistency band
BAND_POINTS = 41  # answers at which the band is given, evenly spread between the lowest and the highest answer
PARTS = ("score", "mcb", "dsc", "unc")


def decompositions(
    probs: dict[str, np.ndarray], p_star: np.ndarray, latent_ids: np.ndarray, *, seed: int, bootstrap: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the ``decomposition`` block, the ``reliability`` block), each per primitive, on the renderings where it
    was asked."""
    parts: dict[str, Any] = {}
    curves: dict[str, Any] = {}
    for name, p in probs.items():
        asked = ~np.isnan(p)
        parts[name], curves[name] = decompose(
            p[asked], p_star[asked], latent_ids[asked], seed=seed, bootstrap=bootstrap
        )
    return parts, curves


def decompose(
    p: np.ndarray, p_star: np.ndarray, latent_ids: np.ndarray, *, seed: int, bootstrap: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One primitive's decomposition and reliability curve, point values and bootstrap intervals."""
    clusters = Clusters.of(latent_ids)
    parts: dict[str, Any] = {"n": int(p.size), "latent_problems": clusters.count, **dict.fromkeys(PARTS)}
    curve: dict[str, Any] = {"n": int(p.size), "ece": None, "ece_ci": None, "curve": None, "band": None}
    if p.size == 0:
        return with_reasons(parts, ["not enough data: no answers"]), with_reasons(
            curve, ["not enough data: no answers"]
        )
    pooled = Pooled.of(p)
    counts = np.ones((1, clusters.count))
    if bootstrap > 0 and clusters.count >= 2:
        counts = np.vstack([counts, clusters.resample_counts(np.random.default_rng(seed), bootstrap)])
    weights = counts[:, clusters.codes]  # (1 + resamples, n): row 0 is the run itself
    stats, fitted = statistics(pooled, p, p_star, weights)
    parts.update({key: float(stats[key][0]) for key in PARTS}, distinct_answers=int(pooled.x.size))
    fit = IsotonicMap.from_fit(pooled.x, fitted[0])
    curve.update(ece=float(stats["ece"][0]), curve={"x": fit.x.tolist(), "y": fit.y.tolist()})
    if counts.shape[0] == 1:
        why = "bootstrap skipped (bootstrap=0)" if bootstrap <= 0 else "no interval: fewer than 2 latent problems"
        return with_reasons(parts, [why]), with_reasons(curve, [why])
    parts.update({f"{key}_ci": percentile_interval(stats[key][1:], LEVEL) for key in PARTS})
    parts.update(resamples=int(counts.shape[0] - 1), level=LEVEL)
    curve["ece_ci"] = percentile_interval(stats["ece"][1:], LEVEL)
    band_rng = np.random.default_rng([seed, 1])  # a stream of its own: the intervals' resamples stay as they are
    curve["band"] = consistency_band(pooled, p, p_star, clusters, band_rng, bootstrap)
    return parts, curve


def statistics(
    pooled: Pooled, p: np.ndarray, p_star: np.ndarray, weights: np.ndarray
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every part of the decomposition and the bin-free ECE under each row of `weights` (rows, n), and the
    isotonic fit of each row at the distinct answers (rows, D). Weighted means: a rendering counts as often as
    its latent problem was drawn."""
    total = weights.sum(axis=1)
    w = pooled.sums(weights)
    wy = pooled.sums(weights, p_star[None, :])
    wy2 = pooled.sums(weights, (p_star**2)[None, :])
    fitted = fit_rows(w, wy)
    c = np.where(w > 0, fitted, 0.0)
    fit_error = (w * c**2 - 2 * c * wy + wy2).sum(axis=1) / total  # mean (c − p*)²
    mean = weights @ p_star / total
    spread = weights @ p_star**2 / total - mean**2  # mean (p* − m)²
    brier = weights @ (p - p_star) ** 2 / total  # mean (p̂ − p*)², the model part of S(p̂)
    unc = mean * (1 - mean)  # S(m) = mean (m − p*)² + mean p*(1 − p*)
    return {
        "score": brier + (mean - spread - mean**2),  # + mean p*(1 − p*) = m − (spread + m²)
        "mcb": brier - fit_error,
        "dsc": spread - fit_error,
        "unc": unc,
        "ece": (w * np.abs(pooled.x[None, :] - c)).sum(axis=1) / total,
    }, fitted


def consistency_band(
    pooled: Pooled, p: np.ndarray, p_star: np.ndarray, clusters: Clusters, rng: np.random.Generator, resamples: int
) -> dict[str, Any]:
    """Where the isotonic curve of a *calibrated* model with these answers falls, pointwise, in BAND_LEVEL of
    `resamples` simulations (the CORP consistency band, for exact targets). A simulation keeps the answers and
    draws targets whose curve is the diagonal: t = p̂ + s_j·(p* − p̂), each rendering's own error with one random
    sign s_j = ±1 per latent problem (a wild bootstrap: under calibration an error has mean 0 whatever the
    answer, so flipping it leaves that null as it is, and the errors of a problem keep their correlation). The
    band is the quantiles of the isotonic fits of those targets. A curve outside it is miscalibration that
    errors of this size do not explain; docs/statistics.md §7.2 gives its coverage in simulation."""
    signs = 1.0 - 2.0 * rng.integers(0, 2, size=(resamples, clusters.count))
    targets = p[None, :] + signs[:, clusters.codes] * (p_star - p)[None, :]
    ones = np.ones((resamples, p.size))
    fitted = fit_rows(pooled.sums(ones), pooled.sums(ones, targets))
    grid = np.linspace(pooled.x[0], pooled.x[-1], BAND_POINTS)
    curves = np.array([np.interp(grid, pooled.x, fit) for fit in fitted])
    tail = (1 - BAND_LEVEL) / 2
    low, high = np.quantile(curves, [tail, 1 - tail], axis=0)
    return {
        "x": grid.tolist(),
        "lower": np.clip(low, 0.0, 1.0).tolist(),
        "upper": np.clip(high, 0.0, 1.0).tolist(),
        "level": BAND_LEVEL,
    }
