"""Rendering by rendering, how far each primitive moved against the baseline: D_i = OVL_new,i − OVL_base,i,
the paired difference whose mean Δ̂ the upgrade gate tests (analysis/upgrade.py, docs/statistics.md §6), with
both answers beside it. Sorted so that the rendering that dropped most, on any compared primitive, comes
first: is a drop broad, or a few items of one family? Knows nothing of pytest or of thresholds.yaml."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..document import ReportDocument
from ..document_upgrade import RenderingMove
from ..vocabulary import MEAN_READING
from .paired import pair_reports


def rendering_moves(
    new: ReportDocument, baseline: ReportDocument, primitives: Sequence[str], reading: str = MEAN_READING
) -> list[RenderingMove]:
    """One row per rendering measured in both reports: ``instance_id``, ``family``, ``representation``,
    ``p_star``, and per primitive of `primitives` the ``baseline`` and ``new`` answer (repeat means; Score: μ_S)
    and ``d`` (D_i; null where either report did not ask it); ``worst`` is the lowest D_i of the row and
    ``worst_primitive`` its primitive (null when none was compared). Rows sorted by ``worst``, lowest first
    (ties: the larger summed drop first, then by instance id); rows with nothing compared last. D_i under the
    `reading` the gate read (per call: each side's mean over the rendering's calls of their OVL). Raises
    PairingError as pair_reports does."""
    paired = pair_reports(new, baseline, reading)
    items = {item["instance_id"]: item for item in new["items"]}
    differences = {prim: paired.ovl("new", prim) - paired.ovl("base", prim) for prim in primitives}
    rows: list[RenderingMove] = []
    for index, instance_id in enumerate(paired.instance_id):
        item = items[instance_id]
        d = {prim: _number(differences[prim][index]) for prim in primitives}
        compared = [(value, prim) for prim, value in d.items() if value is not None]
        worst, worst_primitive = min(compared, key=lambda pair: pair[0]) if compared else (None, None)
        rows.append(
            {
                "instance_id": instance_id,
                "family": item.get("family"),
                "representation": item.get("representation"),
                "p_star": float(paired.p_star[index]),
                "baseline": {prim: _number(paired.base[prim][index]) for prim in primitives},
                "new": {prim: _number(paired.new[prim][index]) for prim in primitives},
                "d": d,
                "worst": worst,
                "worst_primitive": worst_primitive,
            }
        )
    rows.sort(key=_order)
    return rows


def _order(row: RenderingMove) -> tuple[bool, float, float, str]:
    """The lowest D_i first; among equal ones, the larger drop summed over the primitives; then the id."""
    compared = [value for value in row["d"].values() if value is not None]
    return row["worst"] is None, row["worst"] or 0.0, sum(compared), row["instance_id"]


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)
