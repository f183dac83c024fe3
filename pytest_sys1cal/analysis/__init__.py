"""The paper's analysis, computed from what a run measured. Pure numpy/scipy; knows nothing of pytest.

Input: one mapping per rendering, as produced by the run and carried on test reports::

    {"instance_id": str, "latent_instance_id": str, "family": str, "representation": str,
     "p_star": float,
     "samples": [{"noul": float,                # P(True) from the Noul question
                  "choice": float,              # P(True), options asked in the order [False, True]
                  "choice_swapped": float,      # P(True), options asked in the order [True, False]
                  "score": [q_0, ..., q_9]},    # the 10-level Score distribution
                 ...],                          # one per repeat; a key is absent when not asked
     "error": str | None}                       # failed renderings are counted, never silently dropped

Output: a JSON-able dict (no NaN anywhere; ``None`` where a statistic cannot be computed) whose keys
are the report keys of SPEC.md. Same input and seed give the same output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .items import aggregate_items
from .primitives import primitive_table


def analyze(items: Sequence[Mapping[str, Any]], *, seed: int = 0) -> dict[str, Any]:
    """Everything the summary, the JSON report and the gates need, from per-rendering results."""
    table = aggregate_items(items)
    return {
        "counts": table.counts(),
        "primitives": primitive_table(table),
        "items": table.rows(),
    }
