"""The readout raw and with its threshold fitted on held-out latent problems (docs/statistics.md §5.3), as a
`Table` for every renderer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .table import Table, fmt

TITLE = "Readout: raw vs threshold fitted on one half of the latent problems, scored on the held-out half"
COLUMNS = [
    "primitive",
    "n",
    "raw bal. acc.",
    "recal. bal. acc.",
    "recal. recall T, F",
    "AUC",
    "fitted logit t (1st, 2nd half)",
    "offset (nats)",
]


def _row(name: str, block: Mapping[str, Any], raw_readout: Mapping[str, Any] | None) -> list[str]:
    raw, recal = block.get("raw") or {}, block.get("recalibrated") or {}
    thresholds = block.get("threshold_logit")
    recalls = "—" if not recal else f"{fmt(recal['recall_true'])}, {fmt(recal['recall_false'])}"
    return [
        name.capitalize(),
        str(block["n"]),
        fmt(raw.get("balanced_accuracy")),
        fmt(recal.get("balanced_accuracy")),
        recalls,
        fmt(block.get("auc")),
        "—" if thresholds is None else f"{thresholds[0]:.2f}, {thresholds[1]:.2f}",
        fmt((raw_readout or {}).get("offset"), 2),
    ]


def recalibration_table(result: Mapping[str, Any]) -> Table | None:
    """None for a result without the block (a report written before it existed)."""
    blocks: Mapping[str, Any] | None = result.get("readout_recalibrated")
    if blocks is None:
        return None
    readouts: Mapping[str, Any] = result.get("readout") or {}
    rows = [_row(name, block, readouts.get(name)) for name, block in blocks.items()]
    block = next(iter(blocks.values()), None)
    split = "" if block is None else f"split {block['latent_problems'][0]} / {block['latent_problems'][1]} "
    seed = "" if block is None else f"seed {block['seed']}, "
    notes = [
        f"Latent problems {split}({seed}stratified by gold class). The threshold fitted on each half (the one "
        "maximising its balanced accuracy) scores the other half only: no rendering is scored by a threshold "
        "fitted on its own latent problem. Raw: P(True) ≥ 0.5 (logit 0) on the same renderings. AUC fits "
        "nothing: it is the readout's. Choice: P(True) averaged over both option orders; Score: μ_S.",
        "Recalibrated ≫ raw: the ranking is there and only the threshold is off; both ≈ 0.5: nothing to recover.",
    ]
    notes += [f"Not computed ({name}): {block['reason']}." for name, block in blocks.items() if block.get("reason")]
    return Table(title=TITLE, columns=COLUMNS, rows=rows, notes=notes)
