"""The per-call reading: each primitive's distance to p* over single calls, beside the paper's repeat means
(docs/statistics.md §1.6). A service answers a request with one call; the paper (and Table 1) scores the mean
over a rendering's repeats, which hedges a noisy model toward 0.5. Per rendering i with calls j = 1 … r_i:
TV_i = mean_j |p_ij − p*_i| (its OVL 1 − TV_i, the expected OVL of one call) and mean_j (p_ij − p*_i)²; every
rendering then weighs alike, as in Table 1. With one call per rendering both readings are the same numbers.

Only cassettes that hold every call have a per-call reading: where each sample is itself a mean (the Jev
reference, rebuilt from published 10-call means: repeats_per_answer > 1) none was recorded, and every per-call
value is None with that reason, never the means read as calls."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..document import CallCalibration, CallCell, CallReading, CallSummary, Sample
from .calibration import BINS, equal_width_bins
from .items import LEVEL_VALUES, ItemTable, score_expectation

# The sample key of each primitive's answer in one call (Score: its 10 levels, read through μ_S).
SAMPLE_KEYS = ("noul", "choice", "choice_swapped", "score")


def sample_columns(samples: Sequence[Sequence[Sample]]) -> dict[str, np.ndarray]:
    """Each answer's calls as a (renderings, most calls) array, NaN-padded, the calls of a rendering packed to
    the left; Score as (renderings, calls, 10) distributions."""
    width = max((len(s) for s in samples), default=0)
    out: dict[str, np.ndarray] = {}
    for name in ("noul", "choice", "choice_swapped"):
        column = np.full((len(samples), width), np.nan)
        for i, calls in enumerate(samples):
            values = [s[name] for s in calls if s.get(name) is not None]
            column[i, : len(values)] = values
        out[name] = column
    score = np.full((len(samples), width, LEVEL_VALUES.size), np.nan)
    for i, calls in enumerate(samples):
        values = [s["score"] for s in calls if s.get("score") is not None]
        if values:
            score[i, : len(values)] = values
    out["score"] = score
    return out


def call_probabilities(samples: Sequence[Sequence[Sample]]) -> dict[str, np.ndarray]:
    """Per primitive: (renderings, calls) P(True) of every call, NaN-padded; Score's is μ_S of each call's own
    distribution (renormalised as the repeat mean's is, so one call gives the repeat mean's bits)."""
    columns = sample_columns(samples)
    score = columns["score"]
    mu = np.full(score.shape[:2], np.nan)
    asked = ~np.isnan(score).any(axis=2)
    if asked.any():
        q = score[asked]
        mu[asked] = score_expectation(q / q.sum(axis=1, keepdims=True))
    return {"noul": columns["noul"], "choice": columns["choice"], "score": mu}


def per_rendering(calls: np.ndarray, p_star: np.ndarray, power: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(mean over each rendering's calls of |p − p*|^power, the calls counted); NaN where it has none. A sum
    over NaN-padded columns then a division: one call gives its own value, bit for bit."""
    count = np.sum(~np.isnan(calls), axis=1)
    gaps = np.abs(calls - p_star[:, None]) ** power
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, np.nansum(gaps, axis=1) / count, np.nan), count


def calls_block(table: ItemTable, repeats_per_answer: int) -> CallReading:
    """The report's ``calls``: whether this run holds every call, how many, and why not when it does not."""
    total = int(sum(len(samples) for samples in table.samples))
    if repeats_per_answer > 1:
        return {"measured": False, "calls": 0, "reason": not_recorded(repeats_per_answer)}
    block: CallReading = {"measured": total > 0, "calls": total}
    if not total:
        block["reason"] = "no rendering was measured"
    return block


def not_recorded(repeats_per_answer: int) -> str:
    return (
        f"each answer in these cassettes is the mean of {repeats_per_answer} calls (rebuilt from published means), "
        "so no single call was recorded: the per-call reading is not measured"
    )


def call_summary(calls: np.ndarray, p_star: np.ndarray, reason: str | None) -> CallSummary:
    """Table 1 per call on the renderings asked the primitive: calls, mean TV, mean OVL, median OVL."""
    tv, count = per_rendering(calls, p_star)
    asked = count > 0
    if reason is not None or not asked.any():
        why = reason or "not enough data: no answers"
        return {"calls": 0, "mean_tv": None, "mean_ovl": None, "median_ovl": None, "reason": why}
    tv = tv[asked]
    return {
        "calls": int(count.sum()),
        "mean_tv": float(tv.mean()),
        "mean_ovl": float(1 - tv.mean()),
        "median_ovl": float(np.median(1 - tv)),
    }


def call_cell(calls: np.ndarray, p_star: np.ndarray, measured: bool) -> CallCell:
    """A by-family or by-representation cell per call: mean TV and mean OVL over its renderings' calls."""
    tv, count = per_rendering(calls, p_star)
    if not measured or not (count > 0).any():
        return {"mean_tv": None, "mean_ovl": None}
    mean = float(tv[count > 0].mean())
    return {"mean_tv": mean, "mean_ovl": float(1 - mean)}


def call_calibration(calls: np.ndarray, p_star: np.ndarray, reason: str | None) -> CallCalibration:
    """ECE over 15 equal-width bins with every call a point weighing 1/r_i (so each rendering weighs alike, as
    in the repeat-mean ECE), and Brier, the mean over renderings of mean_j (p_ij − p*_i)²."""
    squared, count = per_rendering(calls, p_star, power=2)
    asked = count > 0
    if reason is not None or not asked.any():
        return {"ece": None, "brier": None, "reason": reason or "not enough data: no answers"}
    sub, target, weight = calls[asked], p_star[asked], 1.0 / count[asked]
    present = ~np.isnan(sub)
    values = sub[present]
    gaps = ((sub - target[:, None]) * weight[:, None])[present]
    gap = np.bincount(equal_width_bins(values, BINS), weights=gaps)  # as calibration.binned_gap: the same sums
    return {"ece": float(np.abs(gap).sum() / int(asked.sum())), "brier": float(squared[asked].mean())}
