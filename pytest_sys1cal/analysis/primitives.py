"""Paper Table 1: distance of each primitive's P(True) to the exact p*."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np

from ..document import OvlSummary, PrimitiveRow
from .items import ItemTable

Block = TypeVar("Block")


def primitive_probabilities(table: ItemTable) -> dict[str, np.ndarray]:
    """Each primitive's probability that the proposition is true (Score: its expectation μ_S)."""
    return {"noul": table.p_noul, "choice": table.p_choice, "score": table.mu_score}


def per_primitive(
    probs: dict[str, np.ndarray], compute: Callable[..., Block], *columns: np.ndarray
) -> dict[str, Block]:
    """compute(p, *columns) for each primitive, on the renderings where it was asked (p not NaN)."""
    out: dict[str, Block] = {}
    for name, p in probs.items():
        asked = ~np.isnan(p)
        out[name] = compute(p[asked], *(column[asked] for column in columns))
    return out


def ovl(p: np.ndarray, p_star: np.ndarray) -> np.ndarray:
    """OVL = 1 − |p − p*| of each answer (NaN where p is NaN); p and p_star broadcast."""
    return 1 - np.abs(p - p_star)


def ovl_summary(distance: np.ndarray) -> OvlSummary:
    """Mean and median OVL = 1 − distance to p* (None when there are no items)."""
    if distance.size == 0:
        return {"mean_ovl": None, "median_ovl": None}
    return {"mean_ovl": float(1 - distance.mean()), "median_ovl": float(np.median(1 - distance))}


def distance_to_truth(p: np.ndarray, p_star: np.ndarray) -> PrimitiveRow:
    """Mean TV, mean OVL and median OVL of one primitive."""
    tv = np.abs(p - p_star)
    return {"n": int(p.size), "mean_tv": float(tv.mean()) if tv.size else None, **ovl_summary(tv)}


def primitive_table(table: ItemTable) -> dict[str, PrimitiveRow]:
    return per_primitive(primitive_probabilities(table), distance_to_truth, table.p_star)
