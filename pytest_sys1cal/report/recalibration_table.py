"""The readout raw and with its threshold fitted on held-out latent problems (docs/statistics.md §5.3), as a
`Table` for every renderer: the run's own split (seed 0 by default) beside the mean ± SD over all splits."""

from __future__ import annotations

from collections.abc import Mapping

from ..document import ReportDocument
from ..document_decisions import HeldOut, Readout, RecalibratedReadout
from .table import Table, fmt

TITLE = "Readout: raw vs threshold fitted on one half of the latent problems, scored on the held-out half"


def columns(seed: int | None, splits: int | None) -> list[str]:
    """The header; the two held-out balanced accuracies name their split(s), which the run's options set."""
    return [
        "primitive",
        "n",
        "raw bal. acc.",
        "recal. bal. acc." if seed is None else f"recal. bal. acc., seed {seed}",
        "over splits: mean ± SD" if splits is None else f"over {splits} split{'s' if splits > 1 else ''}: mean ± SD",
        "recal. recall T, F",
        "AUC",
        "fitted logit t (1st, 2nd half)",
        "offset (nats)",
    ]


def mean_sd(held_out: HeldOut | None) -> str:
    """The held-out balanced accuracy: '0.933 ± 0.007'; the mean alone after a single split (no SD); '—' when
    nothing was scored or the report predates repeated splits."""
    spread = None if held_out is None else held_out["balanced_accuracy"]
    if not spread:
        return "—"
    return fmt(spread["mean"]) if spread["sd"] is None else f"{fmt(spread['mean'])} ± {fmt(spread['sd'])}"


def _row(name: str, block: RecalibratedReadout, raw_readout: Readout | None) -> list[str]:
    raw, recal = block.get("raw"), block.get("recalibrated")
    thresholds = block.get("threshold_logit")
    recalls = "—" if not recal else f"{fmt(recal['recall_true'])}, {fmt(recal['recall_false'])}"
    return [
        name.capitalize(),
        str(block["n"]),
        fmt(raw["balanced_accuracy"] if raw else None),
        fmt(recal["balanced_accuracy"] if recal else None),
        mean_sd(block.get("held_out")),
        recalls,
        fmt(block.get("auc")),
        "—" if thresholds is None else f"{thresholds[0]:.2f}, {thresholds[1]:.2f}",
        fmt(raw_readout["offset"] if raw_readout else None, 2),
    ]


def _splits_note(blocks: Mapping[str, RecalibratedReadout]) -> list[str]:
    """What the mean ± SD column averages, and any split that could not be scored."""
    held = [(name, h, block["splits"]) for name, block in blocks.items() if (h := block.get("held_out"))]
    if not held:
        return []
    (first, last), splits = held[0][1]["seeds"], held[0][2]
    if splits == 1:
        notes = [
            f"Over 1 split: the split above (seed {first}) alone, so no SD; --sys1cal-recalibration-splits sets more."
        ]
    else:
        notes = [
            f"Over {splits} splits: the same cross-fitted fit on splits of the latent problems seeded {first} … "
            f"{last} (the first is the split above), their mean ± SD (n − 1). One split is a noisy estimate: read "
            "the mean; the SD is how much one split's value varies."
        ]
    notes += [
        f"{name.capitalize()}: {h['scored']} of {n} splits scored (the others left a half without a gold class "
        "to fit on)."
        for name, h, n in held
        if h["scored"] < n
    ]
    return notes


def recalibration_table(result: ReportDocument) -> Table | None:
    """None for a result without the block (a report written before it existed)."""
    blocks = result.get("readout_recalibrated")
    if blocks is None:
        return None
    readouts = result.get("readout") or {}
    rows = [_row(name, block, readouts.get(name)) for name, block in blocks.items()]
    block = next(iter(blocks.values()), None)
    header = columns(None if block is None else block["seed"], None if block is None else block.get("splits"))
    split = "" if block is None else f"split {block['latent_problems'][0]} / {block['latent_problems'][1]} "
    seed = "" if block is None else f"seed {block['seed']}, "
    notes = [
        f"Latent problems {split}({seed}stratified by gold class). The threshold fitted on each half (the one "
        "maximising its balanced accuracy) scores the other half only: no rendering is scored by a threshold "
        "fitted on its own latent problem. Raw: P(True) ≥ 0.5 (logit 0) on the same renderings. AUC fits "
        "nothing: it is the readout's. Choice: P(True) averaged over both option orders; Score: μ_S.",
        *_splits_note(blocks),
        "Recalibrated ≫ raw: the ranking is there and only the threshold is off; both ≈ 0.5: nothing to recover.",
    ]
    notes += [f"Not computed ({name}): {reason}." for name, block in blocks.items() if (reason := block.get("reason"))]
    return Table(title=TITLE, columns=header, rows=rows, notes=notes)
