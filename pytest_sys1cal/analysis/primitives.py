"""Paper Table 1: distance of each primitive's P(True) to the exact p*."""

from __future__ import annotations

from typing import Any

import numpy as np

from .items import ItemTable

PRIMITIVES = ("noul", "choice", "score")


def primitive_probabilities(table: ItemTable) -> dict[str, np.ndarray]:
    """Each primitive's probability that the proposition is true (Score: its expectation μ_S)."""
    return {"noul": table.p_noul, "choice": table.p_choice, "score": table.mu_score}


def primitive_table(table: ItemTable) -> dict[str, Any]:
    """Mean TV, mean OVL and median OVL per primitive, over the renderings where it was asked."""
    out: dict[str, Any] = {}
    for name, p in primitive_probabilities(table).items():
        asked = ~np.isnan(p)
        tv = np.abs(p[asked] - table.p_star[asked])
        out[name] = {
            "n": int(asked.sum()),
            "mean_tv": float(tv.mean()) if tv.size else None,
            "mean_ovl": float(1 - tv.mean()) if tv.size else None,
            "median_ovl": float(np.median(1 - tv)) if tv.size else None,
        }
    return out
