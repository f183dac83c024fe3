"""Recoverable or not: each primitive's mean OVL after a monotone recalibration fitted on held-out latent problems
(docs/statistics.md §8.4).

A recalibration fitted and scored on the same problems flatters (on answers that rank nothing, the isotonic fit
of p* still bends to follow the problems it was fitted on). So, as for the readout's threshold (§5.3), the latent
problems are split in halves (the same seeded, gold-stratified splits), the map is fitted on one half and applied
to the renderings of the other only, both ways (cross-fitting), and the split is redrawn `splits` times: every
rendering gets one held-out recalibrated answer per split. The map is the isotonic fit of p* on the answers
(analysis/isotonic.py), linear between its knots and constant beyond them; for Choice also the paper's inverse
map through μ_S, f⁻¹(Choice) with (λ, α, β) refitted on the half (analysis/latent.py, warm-started at the fit
on all problems).
"""

from __future__ import annotations

import numpy as np

from ..document_why import HeldOutMap, Spread
from .isotonic import IsotonicMap, Pooled, fit_map, fit_rows
from .latent import LatentData, LatentFit, fit_batch
from .primitives import ovl
from .recalibration import split_halves, split_seeds
from .stats import with_reasons

METHOD = "isotonic map of p* on the answers, fitted on one half of the latent problems, applied to the other"
INVERSE = "Choice through f⁻¹ of the latent model refitted on one half of the latent problems, applied to the other"
MIN_FIT = 4  # renderings with μ_S strictly inside (0, 1) a half needs for the latent model (as the point fit)
# Beyond this many distinct answers a held-out map is fitted on them pooled into this many groups of about equal size
# (Pooled.coarsened): a coarser isotonic map, which the held-out half scores as honestly as any other; at 18k
# renderings fitting 2 × 20 maps on every distinct answer cost about a second per primitive.
MAP_POINTS = 2000


def held_out_answers(p: np.ndarray, p_star: np.ndarray, firsts: list[np.ndarray]) -> np.ndarray:
    """(splits, n): each rendering's answer through the isotonic map fitted on the other half of each split (NaN
    where that half has no rendering; the answers pooled beyond MAP_POINTS). All 2 × splits fits at once."""
    halves = np.array([half for first in firsts for half in (first, ~first)], dtype=float)
    pooled = Pooled.of(p).coarsened(MAP_POINTS)
    w = pooled.sums(halves)
    fitted = fit_rows(w, pooled.sums(halves, p_star[None, :]))
    out = np.full((len(firsts), p.size), np.nan)
    for k, first in enumerate(firsts):
        for row, scored in ((2 * k, ~first), (2 * k + 1, first)):  # fitted on one half, applied to the other
            if w[row].any() and scored.any():
                out[k, scored] = IsotonicMap.from_fit(pooled.x, np.where(w[row] > 0, fitted[row], np.nan))(p[scored])
    return out


def held_out_inverse(data: LatentData, firsts: list[np.ndarray]) -> np.ndarray:
    """(splits, n) over `data`'s renderings (Choice and Score both answered): f⁻¹(Choice) with the latent model
    refitted on the other half of each split (NaN where that half has too few renderings to fit)."""
    out = np.full((len(firsts), data.n), np.nan)
    if data.fit is None:
        return out
    halves = np.array([half for first in firsts for half in (first, ~first)], dtype=float)
    inside = ((data.mu > 0) & (data.mu < 1)).astype(float)
    fits = halves @ inside >= MIN_FIT
    params = np.full((halves.shape[0], 3), np.nan)
    if fits.any():
        starts = np.tile(data.fit.params, (int(fits.sum()), 1))
        params[fits] = fit_batch(data.mu, data.choice, halves[fits], starts)
    for k, first in enumerate(firsts):
        for row, scored in ((2 * k, ~first), (2 * k + 1, first)):
            if fits[row] and scored.any():
                out[k, scored] = LatentFit(*(float(v) for v in params[row])).inverse(data.choice[scored])
    return out


def spread(values: np.ndarray) -> Spread:
    """Mean, SD (n − 1), min and max of the per-split values."""
    return {
        "mean": float(values.mean()),
        "sd": float(values.std(ddof=1)) if values.size > 1 else None,
        "min": float(values.min()),
        "max": float(values.max()),
    }


def summary(recalibrated: np.ndarray, p_star: np.ndarray) -> tuple[Spread | None, int]:
    """The held-out mean OVL of every split whose every rendering was scored, summarised; and how many were."""
    complete = ~np.isnan(recalibrated).any(axis=1)
    if not complete.any():
        return None, 0
    means = ovl(recalibrated[complete], p_star[None, :]).mean(axis=1)
    return spread(means), int(complete.sum())


def recalibrated_table(
    probs: dict[str, np.ndarray],
    p_star: np.ndarray,
    latent_ids: np.ndarray,
    data: LatentData,
    *,
    seed: int,
    splits: int,
) -> dict[str, HeldOutMap]:
    """The ``recalibrated`` block: per primitive the raw mean OVL, that of the map fitted on all problems scored on
    them (``in_sample``, optimistic), and the held-out one over the splits (``held_out``); Choice adds the
    inverse map's (``inverse``), on the renderings with both Choice and Score."""
    seeds = split_seeds(seed, splits)
    firsts = split_halves(latent_ids, p_star, seeds)
    out: dict[str, HeldOutMap] = {}
    for name, p in probs.items():
        asked = ~np.isnan(p)
        out[name] = held_out_block(p[asked], p_star[asked], [first[asked] for first in firsts], seeds)
    both = ~np.isnan(probs["choice"]) & ~np.isnan(probs["score"])
    out["choice"]["inverse"] = _inverse_block(data, [first[both] for first in firsts])
    return out


def held_out_block(p: np.ndarray, p_star: np.ndarray, firsts: list[np.ndarray], seeds: list[int]) -> HeldOutMap:
    """One primitive's raw, in-sample and held-out mean OVL through the isotonic map (`firsts`: the first half of
    each split seeded `seeds`, over these renderings)."""
    out: HeldOutMap = {"n": int(p.size), "method": METHOD, "splits": len(seeds), "seeds": [seeds[0], seeds[-1]]}
    out.update({"scored": 0, "raw": None, "in_sample": None, "held_out": None, "gain": None})
    if p.size == 0:
        return with_reasons(out, ["not enough data: no answers"])
    held, scored = summary(held_out_answers(p, p_star, firsts), p_star)
    raw = float(ovl(p, p_star).mean())
    out.update(
        {"scored": scored, "raw": raw, "in_sample": float(ovl(fit_map(p, p_star)(p), p_star).mean()), "held_out": held}
    )
    if held is None:
        return with_reasons(out, ["not enough data: every split left a half without renderings to fit on"])
    out["gain"] = held["mean"] - raw
    return out


def _inverse_block(data: LatentData, firsts: list[np.ndarray]) -> HeldOutMap:
    out: HeldOutMap = {"n": data.n, "method": INVERSE, "scored": 0, "raw": None, "held_out": None, "gain": None}
    if data.fit is None:
        return with_reasons(out, [data.reason or "the latent model could not be fitted"])
    held, scored = summary(held_out_inverse(data, firsts), data.p_star)
    raw = float(ovl(data.choice, data.p_star).mean())
    out.update({"scored": scored, "raw": raw, "held_out": held})
    if held is None:
        return with_reasons(out, ["not enough data: every split left a half too small to fit the latent model on"])
    out["gain"] = held["mean"] - raw
    return out
