"""Repeat noise apart from bias (docs/statistics.md §8.3).

A rendering's answer is the mean p̄ of its r repeats. If each repeat is p* + b + noise of variance σ², then
E(p̄ − p*)² = b² + σ²/r: the calibration error of the repeat mean mixes a bias, which recalibration or
retraining must fix, with noise, which more repeats average away. The sample variance s² of the repeats
estimates σ² without bias, so (p̄ − p*)² − s²/r estimates b² without bias, rendering by rendering. Only
renderings with two or more repeats of the primitive count: with one, noise and bias cannot be told apart.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from ..document import Item
from ..document_why import RepeatNoise
from .items import ItemTable
from .paired import per_repeat


def repeat_noise(table: ItemTable) -> dict[str, RepeatNoise]:
    """Per primitive: ``brier`` = mean (p̄ − p*)², ``noise`` = mean s²/r, ``bias`` = their difference (the mean
    squared bias, unbiased, so it may dip below 0 by sampling error when the bias is nil), over the ``n``
    renderings with at least 2 repeats, and the median ``repeats`` among them."""
    repeats = int(table.repeats.max()) if table.n else 0
    # per_repeat reads an item's samples and nothing else: the table's own, without building whole items.
    values = per_repeat(cast(list[Item], [{"samples": samples} for samples in table.samples]), repeats)
    answers = {"noul": table.p_noul, "choice": table.p_choice, "score": table.mu_score}
    return {prim: _split(values[prim], answers[prim], table.p_star) for prim in answers}


def _split(values: np.ndarray | None, answers: np.ndarray, p_star: np.ndarray) -> RepeatNoise:
    out: RepeatNoise = {"n": 0, "repeats": None, "brier": None, "noise": None, "bias": None}
    count = np.zeros(p_star.size, dtype=int) if values is None else np.sum(~np.isnan(values), axis=1)
    several = count >= 2
    if not several.any():
        asked = bool((~np.isnan(answers)).any())
        out["reason"] = (
            "one answer per rendering: repeat noise cannot be told apart from bias"
            if asked
            else "not enough data: no answers"
        )
        return out
    assert values is not None
    rows, r = values[several], count[several]
    mean = np.nanmean(rows, axis=1)
    brier = float(np.mean((mean - p_star[several]) ** 2))
    noise = float(np.mean(np.nanvar(rows, axis=1, ddof=1) / r))
    return {
        "n": int(several.sum()),
        "repeats": int(np.median(r)),
        "brier": brier,
        "noise": noise,
        "bias": brier - noise,
    }
