"""Table 1 by family and by representation: where the distance to p* comes from (docs/statistics.md §1.5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..document import GroupCell, GroupRow
from .calls import call_cell
from .items import ItemTable
from .primitives import primitive_probabilities


def breakdown(
    table: ItemTable, groups: Sequence[str], calls: Mapping[str, np.ndarray], *, measured: bool
) -> dict[str, GroupRow]:
    """Per group (one per distinct value of `groups`, one value per rendering; keys sorted): its renderings,
    its latent problems, and per primitive the n, latent problems, mean TV and mean OVL of Table 1 on the
    group's renderings where that primitive was asked, and the same per call (`calls`: each primitive's
    (renderings, calls) answers, analysis/calls.py; `measured` False: the cassettes hold no single call)."""
    probs = primitive_probabilities(table)
    labels = np.asarray(groups, dtype=str)
    # Latent problems as integer codes, once: counting distinct strings per cell sorted them afresh each time.
    latent = np.unique(table.latent_ids, return_inverse=True)[1].reshape(-1)
    out: dict[str, GroupRow] = {}
    for name in sorted(set(labels.tolist())):
        rows = labels == name
        out[name] = {
            "renderings": int(rows.sum()),
            "latent_problems": int(np.unique(latent[rows]).size),
            "primitives": {
                prim: {
                    **_cell(p[rows], table.p_star[rows], latent[rows]),
                    "per_call": call_cell(calls[prim][rows], table.p_star[rows], measured),
                }
                for prim, p in probs.items()
            },
        }
    return out


def _cell(p: np.ndarray, p_star: np.ndarray, latent: np.ndarray) -> GroupCell:
    asked = ~np.isnan(p)
    if not asked.any():
        return {"n": 0, "latent_problems": 0, "mean_tv": None, "mean_ovl": None}
    tv = np.abs(p[asked] - p_star[asked])
    return {
        "n": int(asked.sum()),
        "latent_problems": int(np.unique(latent[asked]).size),
        "mean_tv": float(tv.mean()),
        "mean_ovl": float(1 - tv.mean()),  # as Table 1 computes it, so the "all" row matches it exactly
    }
