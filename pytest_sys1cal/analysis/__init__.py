"""The paper's analysis, computed from what a run measured. Pure numpy; knows nothing of pytest.

Input: one mapping per rendering (document.Measured), as results.analysis_rows builds it (``samples``: per
repeat ``noul``, ``choice``, ``choice_swapped`` (P(True)) and ``score`` (10 levels), each absent when not
asked; ``error`` for a rendering that failed, which is counted and never silently dropped). Output: the
report's blocks (document.Analysis, docs/report.md), JSON-able, ``None`` plus a ``reason`` where a statistic
cannot be computed. Same input and seed give the same output, whatever the order of the items. What each
number means: docs/statistics.md.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ..defaults import BOOTSTRAP_RESAMPLES, RECALIBRATION_SPLITS
from ..document import Analysis, Measured
from .breakdown import breakdown
from .calibration import calibration
from .calls import call_calibration, call_probabilities, call_summary, calls_block
from .choice_calibration import choice_calibration_table
from .decisions import decisions_table
from .decomposition import decompositions
from .held_out_maps import recalibrated_table
from .items import aggregate_items
from .latent import LatentData
from .primitives import per_primitive, primitive_probabilities, primitive_table
from .readout import readout
from .recalibration import recalibrated_readouts
from .repeat_noise import repeat_noise
from .sensitivity import spread
from .swap import option_swap_table
from .uncertainty import uncertainty_table


def analyze(
    items: Sequence[Measured],
    *,
    seed: int = 0,
    error_cost: float = 100.0,
    defer_cost: float = 45.0,
    bootstrap: int = BOOTSTRAP_RESAMPLES,
    recalibration_splits: int = RECALIBRATION_SPLITS,
    repeats_per_answer: int = 1,
) -> Analysis:
    """Everything the summary, the JSON report and the gates need, from per-rendering results.

    bootstrap: latent-problem resamples for the uncertainty intervals (0 skips them). recalibration_splits:
    cross-fitted splits of the held-out readout (seeds seed … seed + splits − 1; statistics.md §5.3).
    repeats_per_answer: calls averaged into each sample (> 1: no single call was recorded, so the per-call
    reading is not measured; analysis/calls.py)."""
    with collector_paused():
        return _analyze(items, seed, error_cost, defer_cost, bootstrap, recalibration_splits, repeats_per_answer)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the analysis, back as it was after.

    At the end of a pytest run of 18k renderings the process holds millions of objects, and the analysis
    allocates enough containers (the item rows, the report's dicts) to set off full collections that walk all
    of them: about 1.2 s of a 2.7 s analysis. The analysis makes no reference cycles that need the collector
    (its memory is freed by reference counting as it goes), so pausing it changes nothing but the time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _analyze(
    items: Sequence[Measured],
    seed: int,
    error_cost: float,
    defer_cost: float,
    bootstrap: int,
    recalibration_splits: int,
    repeats_per_answer: int,
) -> Analysis:
    table = aggregate_items(items)
    probs = primitive_probabilities(table)
    calls = call_probabilities(table.samples)
    reading = calls_block(table, repeats_per_answer)
    why = None if reading["measured"] else reading.get("reason", "no call was recorded")
    latent = LatentData.of(table.mu_score, table.p_choice, table.p_star, table.latent_ids)
    readout_probs = {**probs, "choice": table.p_choice_both_orders}
    decomposition, reliability = decompositions(probs, table.p_star, table.latent_ids, seed=seed, bootstrap=bootstrap)
    analysis: Analysis = {
        "counts": table.counts(),
        "calls": reading,
        "primitives": {
            prim: {**row, "per_call": call_summary(calls[prim], table.p_star, why)}
            for prim, row in primitive_table(table).items()
        },
        "by_family": breakdown(table, table.family, calls, measured=why is None),
        "by_representation": breakdown(table, table.representation, calls, measured=why is None),
        "representation_sensitivity": per_primitive(probs, spread, table.latent_ids),
        "uncertainty": uncertainty_table(latent, seed=seed, bootstrap=bootstrap),
        "choice_calibration": choice_calibration_table(latent),
        "decisions": decisions_table(latent, error_cost=error_cost, defer_cost=defer_cost),
        "option_swap": option_swap_table(table),
        "readout": per_primitive(readout_probs, readout, table.p_star),
        "readout_recalibrated": recalibrated_readouts(
            readout_probs, table.p_star, table.latent_ids, seed=seed, splits=recalibration_splits
        ),
        "calibration": {
            prim: {**row, "per_call": call_calibration(calls[prim], table.p_star, why)}
            for prim, row in per_primitive(probs, calibration, table.p_star).items()
        },
        # Why a version moved (docs/statistics.md §8): the Brier score's parts, the bin-free curve, repeat noise
        # apart from bias, and what a held-out monotone recalibration recovers.
        "decomposition": decomposition,
        "reliability": reliability,
        "repeat_noise": repeat_noise(table),
        "recalibrated": recalibrated_table(
            probs, table.p_star, table.latent_ids, latent, seed=seed, splits=recalibration_splits
        ),
        "items": table.rows(),
    }
    if table.failed:  # the renderings `counts.failed` counts, and why, for whoever reads the report alone
        analysis["failures"] = [{"instance_id": instance_id, "error": error} for instance_id, error in table.failed]
    return analysis
