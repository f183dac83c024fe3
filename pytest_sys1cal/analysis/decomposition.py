"""The Brier score against the exact p*, split into miscalibration, discrimination and uncertainty (the CORP /
Murphy decomposition, Dimitriadis, Gneiting & Jordan 2021), and the bin-free reliability curve it rests on
(docs/statistics.md §8).

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

import numpy as np

from ..document_why import Band, Decomposition, Reliability
from .isotonic import IsotonicMap, Pooled, fit_rows
from .stats import Clusters, percentile_interval, with_reasons

LEVEL = 0.95  # of the percentile intervals
BAND_LEVEL = 0.90  # of the pointwise consistency band
BAND_POINTS = 41  # answers at which the band is given, evenly spread between the lowest and the highest answer
# Simulations of the band (at most; --sys1cal-bootstrap 0 draws none): its 5 % and 95 % quantiles at 200 are drawn
# to within the width of a plotted line, and its refits cost more than the intervals' (noisy targets: long merges).
BAND_SIMULATIONS = 200
# From this many distinct answers on, the resampled fits (the intervals, the band) pool neighbouring answers into
# this many groups, each of about as many renderings (docs/statistics.md §8.1); the run's own values stay exact.
RESAMPLED_POINTS = 400


def decompositions(
    probs: dict[str, np.ndarray], p_star: np.ndarray, latent_ids: np.ndarray, *, seed: int, bootstrap: int
) -> tuple[dict[str, Decomposition], dict[str, Reliability]]:
    """(the ``decomposition`` block, the ``reliability`` block), each per primitive, on the renderings where it
    was asked."""
    parts: dict[str, Decomposition] = {}
    curves: dict[str, Reliability] = {}
    for name, p in probs.items():
        asked = ~np.isnan(p)
        parts[name], curves[name] = decompose(
            p[asked], p_star[asked], latent_ids[asked], seed=seed, bootstrap=bootstrap
        )
    return parts, curves


def decompose(
    p: np.ndarray, p_star: np.ndarray, latent_ids: np.ndarray, *, seed: int, bootstrap: int
) -> tuple[Decomposition, Reliability]:
    """One primitive's decomposition and reliability curve, point values and bootstrap intervals."""
    clusters = Clusters.of(latent_ids)
    parts: Decomposition = {"n": int(p.size), "latent_problems": clusters.count}
    parts.update({"score": None, "mcb": None, "dsc": None, "unc": None})
    curve: Reliability = {"n": int(p.size), "ece": None, "ece_ci": None, "curve": None, "band": None}
    if p.size == 0:
        return with_reasons(parts, ["not enough data: no answers"]), with_reasons(
            curve, ["not enough data: no answers"]
        )
    counts = np.empty((0, clusters.count))
    if bootstrap > 0 and clusters.count >= 2:
        counts = clusters.resample_counts(np.random.default_rng(seed), bootstrap)
    stats, fitted, pooled = resampled(p, p_star, counts, clusters.codes)
    parts.update(
        {
            "score": float(stats["score"][0]),
            "mcb": float(stats["mcb"][0]),
            "dsc": float(stats["dsc"][0]),
            "unc": float(stats["unc"][0]),
            "distinct_answers": int(pooled.x.size),
        }
    )
    fit = IsotonicMap.from_fit(pooled.x, fitted)
    curve.update({"ece": float(stats["ece"][0]), "curve": {"x": fit.x.tolist(), "y": fit.y.tolist()}})
    if not counts.shape[0]:
        why = "bootstrap skipped (bootstrap=0)" if bootstrap <= 0 else "no interval: fewer than 2 latent problems"
        return with_reasons(parts, [why]), with_reasons(curve, [why])
    parts.update(
        {
            "score_ci": percentile_interval(stats["score"][1:], LEVEL),
            "mcb_ci": percentile_interval(stats["mcb"][1:], LEVEL),
            "dsc_ci": percentile_interval(stats["dsc"][1:], LEVEL),
            "unc_ci": percentile_interval(stats["unc"][1:], LEVEL),
            "resamples": int(counts.shape[0]),
            "level": LEVEL,
        }
    )
    curve["ece_ci"] = percentile_interval(stats["ece"][1:], LEVEL)
    band_rng = np.random.default_rng([seed, 1])  # a stream of its own: the intervals' resamples stay as they are
    curve["band"] = consistency_band(pooled, p, p_star, clusters, band_rng, min(bootstrap, BAND_SIMULATIONS))
    return parts, curve


def resampled(
    p: np.ndarray, p_star: np.ndarray, counts: np.ndarray, codes: np.ndarray
) -> tuple[dict[str, np.ndarray], np.ndarray, Pooled]:
    """Every part and the bin-free ECE of the run itself (row 0, exact) and under each row of `counts` (latent-
    problem multiplicities; `codes`: each rendering's problem), all rows fitted at once; the run's isotonic fit at
    its distinct answers; the distinct answers. With more than RESAMPLED_POINTS distinct answers the resampled fits
    pool them (Pooled.coarsened) and each resample's value is moved by the run's exact − pooled difference: a
    percentile interval around the exact value with the pooled fit's spread."""
    pooled = Pooled.of(p)
    ones = np.ones((1, int(codes.max()) + 1 if codes.size else 0))
    exact, fitted = statistics(pooled, p, p_star, ones, codes)
    if not counts.shape[0]:
        return exact, fitted[0], pooled
    coarse = pooled.coarsened(RESAMPLED_POINTS)
    rows = counts if coarse is pooled else np.vstack([ones, counts])
    drawn = statistics(coarse, p, p_star, rows, codes)[0]
    if coarse is not pooled:
        drawn = {key: values[1:] + (exact[key][0] - values[0]) for key, values in drawn.items()}
    return {key: np.concatenate([exact[key], drawn[key]]) for key in exact}, fitted[0], pooled


def statistics(
    pooled: Pooled, p: np.ndarray, p_star: np.ndarray, counts: np.ndarray, codes: np.ndarray
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every part of the decomposition and the bin-free ECE under each row of `counts` (rows, J): a rendering
    counts as often as its latent problem (`codes`) was drawn; and the isotonic fit of each row at the distinct
    answers (rows, D). The sums over renderings are sums over problems of their renderings' sums."""

    def over(values: np.ndarray) -> np.ndarray:  # Σ_i counts[row, problem of i]·values_i, per row
        return counts @ np.bincount(codes, weights=values, minlength=counts.shape[1])

    total = over(np.ones(p.size))
    w, wy = pooled.problem_sums(counts, codes, [None, p_star])
    fitted = fit_rows(w, wy)
    c = np.where(w > 0, fitted, 0.0)
    squares = over(p_star**2) / total  # mean p*²
    fit_error = (w * c**2 - 2 * c * wy).sum(axis=1) / total + squares  # mean (c − p*)²
    mean = over(p_star) / total
    spread = squares - mean**2  # mean (p* − m)²
    brier = over((p - p_star) ** 2) / total  # mean (p̂ − p*)², the model part of S(p̂)
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
) -> Band:
    """Where the isotonic curve of a *calibrated* model with these answers falls, pointwise, in BAND_LEVEL of
    `resamples` simulations (the CORP consistency band, for exact targets). A simulation keeps the answers and
    draws targets whose curve is the diagonal: t = p̂ + s_j·(p* − p̂), each rendering's own error with one random
    sign s_j = ±1 per latent problem (a wild bootstrap: under calibration an error has mean 0 whatever the
    answer, so flipping it leaves that null as it is, and the errors of a problem keep their correlation). The
    band is the quantiles of the isotonic fits of those targets (on the pooled answers beyond RESAMPLED_POINTS).
    A curve outside it is miscalibration that errors of this size do not explain; docs/statistics.md §8.2 gives
    its coverage in simulation."""
    signs = 1.0 - 2.0 * rng.integers(0, 2, size=(resamples, clusters.count))
    coarse = pooled.coarsened(RESAMPLED_POINTS)
    ones = np.ones((1, clusters.count))
    sizes, answers = coarse.problem_sums(ones, clusters.codes, [None, p])
    flipped = coarse.problem_sums(signs, clusters.codes, [p_star - p])[0]  # Σ s_j·(p* − p̂) per answer
    fitted = fit_rows(np.broadcast_to(sizes, flipped.shape), answers + flipped)
    grid = np.linspace(pooled.x[0], pooled.x[-1], BAND_POINTS)
    curves = np.array([np.interp(grid, coarse.x, fit) for fit in fitted])
    tail = (1 - BAND_LEVEL) / 2
    low, high = np.quantile(curves, [tail, 1 - tail], axis=0)
    return {
        "x": grid.tolist(),
        "lower": np.clip(low, 0.0, 1.0).tolist(),
        "upper": np.clip(high, 0.0, 1.0).tolist(),
        "level": BAND_LEVEL,
    }
