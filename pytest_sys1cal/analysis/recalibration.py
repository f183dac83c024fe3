"""The readout with its threshold fitted on held-out latent problems (docs/statistics.md §5.3).

Is the ability there and only the threshold off? The latent problems are split, seeded and stratified by
gold class, into two halves; on each half the logit threshold that maximises balanced accuracy is fitted
and used to score the renderings of the *other* half only (cross-fitting). So no rendering is ever scored
by a threshold fitted on its own latent problem, and the recalibrated recall and balanced accuracy are
out-of-sample. The raw readout (threshold P(True) = 0.5, logit 0) is scored on the same renderings.

One split is a noisy estimate (over 200 seeds its balanced accuracy moves by an SD of 0.006–0.023 on the
bundled cassettes), so the split is repeated: split k is seeded with seed + k, k = 0 … splits − 1. Split 0
is the run's own seed and gives the block's per-split keys (threshold, recalibrated), as before; held_out
gives the mean, SD, min and max over all the splits.
"""

from __future__ import annotations

import numpy as np

from ..defaults import RECALIBRATION_SPLITS
from ..document_decisions import BinaryScores, HeldOut, Recalibrated, RecalibratedReadout, Spread
from .readout import logit, roc_auc
from .stats import with_reasons

METHOD = "logit threshold maximising balanced accuracy, cross-fitted on two halves of the latent problems"
# Balanced accuracies within this of the best count as tied when the fitted threshold is chosen.
TIE = 1e-12
SCORES = ("balanced_accuracy", "recall_true", "recall_false")


def split_seeds(seed: int, splits: int) -> list[int]:
    """The seed of each split: seed, seed + 1, …, seed + splits − 1. Split 0 is the run's own split, so its
    numbers are those a single-split run with this seed reported."""
    return [seed + k for k in range(splits)]


def _latent_gold(latent_ids: np.ndarray, positive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(latent code of each rendering, in sorted-id order; gold class of each latent problem)."""
    _, codes = np.unique(np.asarray(latent_ids, dtype=str), return_inverse=True)
    codes = codes.reshape(-1)
    share_true = np.bincount(codes, weights=np.asarray(positive, dtype=float)) / np.bincount(codes)
    return codes, share_true >= 0.5


def _deal(codes: np.ndarray, gold: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dealt = np.concatenate([rng.permutation(np.flatnonzero(gold == side)) for side in (False, True)])
    first = np.zeros(gold.size, dtype=bool)
    first[dealt[0::2]] = True
    return first[codes]


def split_by_latent(latent_ids: np.ndarray, positive: np.ndarray, seed: int) -> np.ndarray:
    """(n,) bool, True for the renderings in the first half. Whole latent problems go to one half.

    Latent problems are numbered in sorted-id order (so the split never depends on the order of the
    items), grouped by their gold class (that of most of their renderings, ties True), each group shuffled
    with numpy.random.default_rng(seed), and dealt alternately to the halves: the halves differ by at most
    one latent problem overall and in each gold class."""
    if np.asarray(latent_ids).size == 0:
        return np.zeros(0, dtype=bool)
    return _deal(*_latent_gold(latent_ids, positive), seed)


def split_halves(latent_ids: np.ndarray, p_star: np.ndarray, seeds: list[int]) -> list[np.ndarray]:
    """The first half of every split (split_by_latent with each of `seeds`), over all the renderings: one split
    serves every primitive, and every held-out check of a run (the readout's threshold, the recalibrated OVL of
    analysis/held_out_maps.py) uses the same splits."""
    if not np.asarray(latent_ids).size:
        return [np.zeros(0, dtype=bool) for _ in seeds]
    codes, gold = _latent_gold(latent_ids, p_star >= 0.5)  # once: only the shuffle depends on the seed
    return [_deal(codes, gold, s) for s in seeds]


def fit_threshold(margin: np.ndarray, positive: np.ndarray) -> float:
    """The logit threshold t (predict True when margin ≥ t) with the largest balanced accuracy on these items.

    Candidates: midpoints between consecutive distinct margins, and 1 nat beyond either end (everything
    True, everything False). Tied values are never split. Among tied best candidates the middle one is
    taken (the centre of a plateau). Needs items of both gold classes."""
    order = np.argsort(margin, kind="stable")
    return _fit_sorted(margin[order], positive[order])


def _fit_sorted(margin: np.ndarray, positive: np.ndarray) -> float:
    """fit_threshold of items already sorted by margin: the halves of a split are subsequences of one sort
    (a boolean selection of a sorted array is sorted), so the 2 × splits × primitives fits of a run sort
    once per primitive (at 18k renderings the sorts were most of the readout's time)."""
    distinct = np.concatenate([[True], margin[1:] != margin[:-1]])
    values = margin[distinct]  # np.unique(margin): sorted already
    candidates = np.concatenate([[values[0] - 1.0], (values[:-1] + values[1:]) / 2, [values[-1] + 1.0]])
    pos, neg = margin[positive], margin[~positive]
    recall_true = 1 - np.searchsorted(pos, candidates, side="left") / pos.size
    recall_false = np.searchsorted(neg, candidates, side="left") / neg.size
    accuracy = (recall_true + recall_false) / 2
    best = np.flatnonzero(accuracy >= accuracy.max() - TIE)
    return float(candidates[best[(best.size - 1) // 2]])


def binary_scores(predicted: np.ndarray, positive: np.ndarray) -> BinaryScores:
    recall_true = float(predicted[positive].mean())
    recall_false = float((~predicted[~positive]).mean())
    return {
        "recall_true": recall_true,
        "recall_false": recall_false,
        "balanced_accuracy": (recall_true + recall_false) / 2,
    }


def _skeleton(
    p: np.ndarray, positive: np.ndarray, first: np.ndarray, latent_ids: np.ndarray, seed: int
) -> Recalibrated:
    halves = (first, ~first)
    return {
        "method": METHOD,
        "seed": seed,
        "latent_problems": [len(set(latent_ids[half].tolist())) for half in halves],
        "renderings": [int(half.sum()) for half in halves],
        "n": int(p.size),
        "n_true": int(positive.sum()),
        "n_false": int((~positive).sum()),
        "threshold_logit": None,
        "threshold": None,
        "raw": None,
        "recalibrated": None,
        "auc": None,
    }


def _missing_class(positive: np.ndarray) -> str | None:
    if positive.all():
        return "False"
    if not positive.any():
        return "True"
    return None


def _unfit_halves(positive: np.ndarray, first: np.ndarray) -> list[str]:
    """Why a threshold cannot be fitted on each half of this split (empty: both halves can be fitted)."""
    reasons = []
    for label, half in (("first", first), ("second", ~first)):
        if not half.any():
            reasons.append(f"not enough data: no rendering in the {label} half (too few latent problems to split)")
        elif (missing := _missing_class(positive[half])) is not None:
            reasons.append(f"not enough data: the {label} half has no gold-{missing} item to fit a threshold on")
    return reasons


def _cross_fit(
    margin: np.ndarray, positive: np.ndarray, first: np.ndarray, order: np.ndarray | None = None
) -> tuple[list[float], np.ndarray]:
    """([threshold fitted on the first half, on the second], the held-out prediction of every rendering).
    order: np.argsort(margin, kind="stable") when the caller has it (one sort for many splits)."""
    if order is None:
        order = np.argsort(margin, kind="stable")
    sorted_margin, sorted_positive, sorted_first = margin[order], positive[order], first[order]
    thresholds = [_fit_sorted(sorted_margin[half], sorted_positive[half]) for half in (sorted_first, ~sorted_first)]
    # Each rendering is scored by the threshold fitted on the half it is not in.
    scored_by = np.where(first, thresholds[1], thresholds[0])
    return thresholds, margin >= scored_by


def recalibrate(
    p: np.ndarray, p_star: np.ndarray, latent_ids: np.ndarray, first: np.ndarray, *, seed: int
) -> Recalibrated:
    """Raw and cross-fitted readout of one primitive's P(True) on the renderings where it was asked.

    first: the half of each rendering (split_by_latent over every measured rendering, so all primitives
    share one split). threshold_logit / threshold: [fitted on the first half, fitted on the second]; each
    scores the other half. None plus a reason when a half has no item of a gold class to fit on."""
    positive = p_star >= 0.5
    latent_ids = np.asarray(latent_ids, dtype=str)
    out = _skeleton(p, positive, first, latent_ids, seed)
    if p.size == 0:
        return with_reasons(out, ["not enough data: no answers"])
    if (missing := _missing_class(positive)) is not None:
        return with_reasons(out, [f"not enough data: no item whose gold answer is {missing}"])
    if reasons := _unfit_halves(positive, first):
        return with_reasons(out, reasons)
    thresholds, predicted = _cross_fit(logit(p), positive, first)
    out.update(
        {
            "threshold_logit": thresholds,
            "threshold": [float(1 / (1 + np.exp(-t))) for t in thresholds],
            "raw": binary_scores(p >= 0.5, positive),
            "recalibrated": binary_scores(predicted, positive),
            "auc": roc_auc(p, positive),
        }
    )
    return out


def _spread(values: list[float]) -> Spread:
    """Mean, SD (n − 1 in the denominator: the splits are a sample of all possible splits), min and max."""
    array = np.asarray(values, dtype=float)
    return {
        "mean": float(array.mean()),
        "sd": float(array.std(ddof=1)) if array.size > 1 else None,
        "min": float(array.min()),
        "max": float(array.max()),
    }


def held_out(p: np.ndarray, p_star: np.ndarray, firsts: list[np.ndarray], seeds: list[int]) -> HeldOut:
    """The cross-fitted scores of every split (firsts[k]: its first half, seeded seeds[k]), summarised;
    seeds: [first, last].

    A split with a half that cannot be fitted (a gold class missing from it: only when few latent problems
    of a class are among these renderings) is left out of the summary; `scored` counts the others, and
    each score is None when none was."""
    positive = p_star >= 0.5
    margin = logit(p)
    order = np.argsort(margin, kind="stable")
    scores = [
        binary_scores(_cross_fit(margin, positive, first, order)[1], positive)
        for first in firsts
        if not _unfit_halves(positive, first)
    ]
    return {
        "seeds": [seeds[0], seeds[-1]],
        "scored": len(scores),
        "balanced_accuracy": _spread([s["balanced_accuracy"] for s in scores]) if scores else None,
        "recall_true": _spread([s["recall_true"] for s in scores]) if scores else None,
        "recall_false": _spread([s["recall_false"] for s in scores]) if scores else None,
    }


def recalibrated_readouts(
    probs: dict[str, np.ndarray],
    p_star: np.ndarray,
    latent_ids: np.ndarray,
    *,
    seed: int,
    splits: int = RECALIBRATION_SPLITS,
) -> dict[str, RecalibratedReadout]:
    """recalibrate() per primitive on the run's split (seed), and held_out() over `splits` splits (seeds
    split_seeds(seed, splits)). Each split covers all measured latent problems, shared by every primitive."""
    if splits < 1:
        raise ValueError(f"splits must be at least 1, not {splits}")
    seeds = split_seeds(seed, splits)
    firsts = split_halves(latent_ids, p_star, seeds)
    out: dict[str, RecalibratedReadout] = {}
    for name, p in probs.items():
        asked = ~np.isnan(p)
        block = recalibrate(p[asked], p_star[asked], latent_ids[asked], firsts[0][asked], seed=seed)
        # Summarised whenever both gold classes were answered, even if the run's own split could not be
        # fitted: other splits may deal the problems so that both halves can be.
        both_classes = block["n_true"] > 0 and block["n_false"] > 0
        out[name] = {
            **block,
            "splits": splits,
            "held_out": held_out(p[asked], p_star[asked], [first[asked] for first in firsts], seeds)
            if both_classes
            else None,
        }
    return out
