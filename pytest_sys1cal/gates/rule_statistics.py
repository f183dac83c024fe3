"""The statistics the thresholds rule writes limits for (gates/thresholds_rule.py), computed two ways:

- under bootstrap weights over latent problems (a resample is a vector of multiplicities per problem), all
  resamples at once with matrix products: how far a statistic moves on another draw of problems;
- under resampled repeats (each rendering's repeats drawn with replacement, the per-rendering means taken
  again): how far it moves on another recording of the same renderings, which only repeat noise changes.
  One recording shows that noise only where it asked a rendering more than once (repeats ≥ 2); with one
  repeat (or answers that never change) its spread is zero, and the rule's minimum slack stands in for it.

Every statistic is the analysis's own (mean and median OVL, ECE, Brier, the Brier decomposition's MCB and DSC,
Table 6's mean pairwise and max TV, the option-swap shift and first-position bias); the tests check the measured
values and the problem SEs against re-running the analysis. Read per call (thresholds.yaml's `reading: call`), OVL,
ECE and Brier are the per-call ones (analysis/calls.py) and a re-recording redraws the calls themselves; MCB, DSC
and the spread and swap statistics read the repeat means either way. Pure numpy; reads nothing and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..analysis.calibration import BINS, equal_width_bins
from ..analysis.calls import call_probabilities, per_rendering, sample_columns
from ..analysis.decomposition import resampled
from ..analysis.items import LEVEL_VALUES, ItemTable
from ..analysis.sensitivity import per_problem_spread
from ..analysis.swap import first_position_share
from .kinds import Bound, kinds_in

# (gate key, bound, highest valid limit) in thresholds.yaml's order, from the gate kinds themselves; the swap
# gates exist for Choice only.
PRIMITIVE_GATES = tuple((k.key, k.bound, k.high) for k in kinds_in("noul") if isinstance(k, Bound))
CHOICE_GATES = tuple(
    (k.key, k.bound, k.high) for k in kinds_in("choice") if isinstance(k, Bound) and k.sections == ("choice",)
)
REPEAT_RESAMPLES = 200  # resamples of the repeats: an SE known to within 5 % (1/√(2·199))

Draws = tuple[np.ndarray | None, str | None]  # (values per weight row, or None with the reason)


def statistics(
    probs: Mapping[str, np.ndarray],
    swapped: np.ndarray,
    table: ItemTable,
    codes: np.ndarray,
    weights: np.ndarray,
    calls: Mapping[str, np.ndarray] | None = None,
) -> dict[str, dict[str, Draws]]:
    """primitive → gate key → the statistic under every weight row. probs: each primitive's P(True) per
    rendering (NaN where not asked); swapped: Choice asked with the options swapped; calls: each primitive's
    (renderings, calls) answers, for the per-call reading (None: the repeat means')."""
    out = {
        prim: primitive_statistics(p, table, codes, weights, None if calls is None else calls[prim])
        for prim, p in probs.items()
    }
    out["choice"] |= swap_statistics(probs["choice"], swapped, codes, weights)
    return out


def primitive_statistics(
    p: np.ndarray, table: ItemTable, codes: np.ndarray, weights: np.ndarray, calls: np.ndarray | None = None
) -> dict:
    """Each primitive gate's statistic under every weight row (row 0 of the rule's weights: the measured value);
    OVL, ECE and Brier per call when `calls` holds each rendering's calls."""
    asked = ~np.isnan(p)
    if not asked.any():
        reason = "not measured: this primitive was not asked"
        return {key: (None, reason) for key, _bound, _high in PRIMITIVE_GATES}
    p, target, item_codes = p[asked], table.p_star[asked], codes[asked]
    w = weights[:, item_codes]  # (rows, renderings): each rendering weighs as often as its problem was drawn
    total = w.sum(axis=1)
    ovl, squared, gap = _distances(p, target) if calls is None else _call_distances(calls[asked], target)
    with np.errstate(invalid="ignore", divide="ignore"):
        out: dict[str, Draws] = {
            "min_mean_ovl": (w @ ovl / total, None),
            "min_median_ovl": (weighted_median(ovl, w), None),
            # ECE = Σ_b |Σ_{i∈b} w_i (p_i − p*_i)| / Σ w_i (calibration.binned_gap with weights)
            "max_ece": (np.abs(w @ gap).sum(axis=1) / total, None),
            "max_brier": (w @ squared / total, None),
        }
        # The isotonic fit under every weight row; row 0 of the rule's weights is the run itself (all ones).
        parts = resampled(p, target, weights[1:], item_codes)[0]
        out.update(max_mcb=(parts["mcb"], None), min_dsc=(parts["dsc"], None))
        _, pairwise, max_gap = per_problem_spread(p, table.latent_ids[asked])
        out.update(_problem_means(pairwise, max_gap, np.unique(item_codes), weights))
    return out


def _distances(p: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per rendering, from its repeat mean: OVL, squared error, and its signed gap in its ECE bin (a row of BINS)."""
    gap = np.zeros((p.size, BINS))
    gap[np.arange(p.size), equal_width_bins(p, BINS)] = p - target
    return 1 - np.abs(p - target), (p - target) ** 2, gap


def _call_distances(calls: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same per call (analysis/calls.py): the mean over each rendering's calls of OVL and of the squared
    error, and its calls' gaps, each weighing 1/r_i, in the bins of the calls' own answers."""
    tv, count = per_rendering(calls, target)
    squared, _ = per_rendering(calls, target, power=2)
    present = ~np.isnan(calls)
    rows = np.nonzero(present)[0]
    gap = np.zeros((calls.shape[0], BINS))
    np.add.at(
        gap, (rows, equal_width_bins(calls[present], BINS)), ((calls - target[:, None]) / count[:, None])[present]
    )
    return 1 - tv, squared, gap


def _problem_means(pairwise: np.ndarray, max_gap: np.ndarray, problems: np.ndarray, weights: np.ndarray) -> dict:
    """Table 6's means over problems with ≥ 2 renderings, each problem weighted by its multiplicity."""
    multi = ~np.isnan(pairwise)
    if not multi.any():
        reason = "not measured: no latent problem has 2 renderings with this primitive"
        return {"max_mean_pairwise_tv": (None, reason), "max_mean_max_tv": (None, reason)}
    w = weights[:, problems[multi]]
    total = w.sum(axis=1)
    return {
        "max_mean_pairwise_tv": (w @ pairwise[multi] / total, None),
        "max_mean_max_tv": (w @ max_gap[multi] / total, None),
    }


def weighted_median(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """np.median of each row's multiset (value i repeated w_i times, integer weights): the middle value, or
    the mean of the two middle ones when the total weight is even."""
    order = np.argsort(values, kind="stable")
    ordered, cumulative = values[order], np.cumsum(w[:, order], axis=1)
    total = cumulative[:, -1]
    lower = (cumulative <= np.floor((total - 1) / 2)[:, None]).sum(axis=1)
    upper = (cumulative <= np.floor(total / 2)[:, None]).sum(axis=1)
    top = values.size - 1
    median = (ordered[np.minimum(lower, top)] + ordered[np.minimum(upper, top)]) / 2
    return np.where(total > 0, median, np.nan)


def swap_statistics(plain: np.ndarray, swapped: np.ndarray, codes: np.ndarray, weights: np.ndarray) -> dict:
    """|mean shift| and |first-position rate − 0.5| over the renderings asked both option orders."""
    both = ~np.isnan(plain) & ~np.isnan(swapped)
    if not both.any():
        reason = "not measured: no rendering carries a swapped Choice (e.g. reconstructed cassettes)"
        return {key: (None, reason) for key, _bound, _high in CHOICE_GATES}
    c, s = plain[both], swapped[both]
    w = weights[:, codes[both]]
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "max_swap_shift": (np.abs(w @ (c - s) / total), None),
            "max_first_position_bias": (np.abs(w @ first_position_share(c, s) / total - 0.5), None),
        }


# ------------------------------------------------------------------------------------ repeat noise


def repeat_spread(
    table: ItemTable,
    codes: np.ndarray,
    rng: np.random.Generator,
    resamples: int = REPEAT_RESAMPLES,
    *,
    per_call: bool = False,
) -> tuple[dict[str, dict[str, float]], int]:
    """primitive → gate key → the statistic's standard deviation across re-recordings of the same renderings,
    estimated by drawing each rendering's repeats with replacement (scaled by √(r/(r−1)), the bootstrap's
    known shortfall for a mean of r draws); and r, the repeats per rendering (the median). Empty when no
    rendering has 2 repeats of any answer: one recording then shows no repeat noise. `per_call`: the gates read
    per call, so the drawn calls themselves are read (their means only for the spread and swap statistics)."""
    columns = sample_columns(table.samples)
    counts = {
        name: np.sum(~np.isnan(values[..., 0] if values.ndim == 3 else values), axis=1)
        for name, values in columns.items()
    }
    repeats = int(np.median(table.repeats)) if table.n else 0
    if resamples < 1 or repeats < 2 or not any((count >= 2).any() for count in counts.values()):
        return {}, repeats
    ones = np.ones((1, int(codes.max()) + 1))
    rows: list[dict[str, dict[str, Draws]]] = []
    if per_call:
        answers = {**call_probabilities(table.samples), "choice_swapped": columns["choice_swapped"]}
        counts = {name: np.sum(~np.isnan(values), axis=1) for name, values in answers.items()}
    for _ in range(resamples):
        if per_call:
            drawn = {name: _resampled_calls(values, counts[name], rng) for name, values in answers.items()}
            means = {name: _row_means(values) for name, values in drawn.items()}
            rows.append(statistics(means, means["choice_swapped"], table, codes, ones, calls=drawn))
            continue
        means = {name: _resampled_means(values, counts[name], rng) for name, values in columns.items()}
        mu_score = means["score"] @ LEVEL_VALUES
        probs = {"noul": means["noul"], "choice": means["choice"], "score": mu_score}
        rows.append(statistics(probs, means["choice_swapped"], table, codes, ones))
    scale = np.sqrt(repeats / (repeats - 1))
    spread: dict[str, dict[str, float]] = {}
    for prim, keys in rows[0].items():
        for key, (values, _reason) in keys.items():
            if values is None:
                continue
            drawn_values = np.array([_first(row[prim][key][0]) for row in rows], dtype=float)
            drawn_values = drawn_values[np.isfinite(drawn_values)]
            if drawn_values.size >= resamples / 2:
                spread.setdefault(prim, {})[key] = float(np.std(drawn_values, ddof=1) * scale)
    return spread, repeats


def _resampled_calls(values: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each rendering's calls drawn with replacement, as many as it has, NaN-padded like `values`."""
    rows, width = values.shape
    drawn = np.floor(rng.random((rows, width)) * np.maximum(counts, 1)[:, None]).astype(int)
    keep = np.arange(width)[None, :] < counts[:, None]
    return np.where(keep, np.take_along_axis(values, drawn, axis=1), np.nan)


def _row_means(values: np.ndarray) -> np.ndarray:
    count = np.sum(~np.isnan(values), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, np.nansum(values, axis=1) / np.maximum(count, 1), np.nan)


def _first(values: np.ndarray | None) -> float:
    """The statistic of a resample's one weight row (NaN when that resample could not measure it)."""
    return float("nan") if values is None else float(values[0])


def _resampled_means(values: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each rendering's mean over `count` of its answers drawn with replacement (NaN where it has none); a
    Score row is the drawn distributions' mean, renormalised as analysis/items.py renormalises it."""
    rows, width = values.shape[:2]
    positions = np.arange(width)
    drawn = np.floor(rng.random((rows, width)) * np.maximum(counts, 1)[:, None]).astype(int)
    keep = positions[None, :] < counts[:, None]
    if values.ndim == 3:
        picked = np.take_along_axis(values, drawn[:, :, None], axis=1) * keep[:, :, None]
        total = np.nansum(picked, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = total / total.sum(axis=1, keepdims=True)
        mean[counts == 0] = np.nan
        return mean
    picked = np.where(keep, np.take_along_axis(values, drawn, axis=1), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, picked.sum(axis=1) / np.maximum(counts, 1), np.nan)
