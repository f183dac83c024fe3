"""Why a model reads as it does, and why a version moved, as every renderer says it (terminal, job summary,
pull-request comment, HTML): the Brier decomposition table of the analysis, the upgrade's diagnosis lines and its
table of ΔMCB, ΔDSC and the recalibrated Δ. Read from the report's ``decomposition``, ``reliability``,
``repeat_noise`` and ``recalibrated`` blocks and ``comparison.primitives.<p>.why`` alone (docs/report.md;
what each number means: docs/statistics.md §8)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..document import Comparison, ReportDocument
from ..vocabulary import LABELS
from .table import Table, fmt, fmt_interval

DECOMPOSITION_TITLE = (
    "Why it reads so: the Brier score against p* split into its parts, and what a recalibration recovers"
)
WHY_TITLE = "Why it moved: miscalibration against discrimination, and what a recalibration gives back"


def _signed(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{round(value, digits) + 0.0:+.{digits}f}"


def _interval(bounds: list[float] | None, digits: int = 3) -> str:
    return "" if not bounds else f" [{_signed(bounds[0], digits)}, {_signed(bounds[1], digits)}]"


def _with_ci(value: float | None, bounds: list[float] | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    return fmt(value, digits) + ("" if not bounds else f" {fmt_interval(bounds, digits)}")


def _held_out(block: Mapping[str, Any] | None) -> str:
    """ "0.764 → 0.883 ± 0.002": raw mean OVL, then held-out recalibrated mean ± SD over the splits."""
    if not block or block.get("held_out") is None:
        return "—"
    held = block["held_out"]
    sd = "" if held["sd"] is None else f" ± {fmt(held['sd'])}"
    return f"{fmt(block['raw'])} → {fmt(held['mean'])}{sd}"


def decomposition_table(result: ReportDocument) -> Table | None:
    """Per primitive: S (the expected Brier score), MCB, DSC, UNC with their intervals, the bin-free ECE with
    its interval beside the 15-bin one, and the held-out recalibrated mean OVL. None for a report without them."""
    parts, curves = result.get("decomposition"), result.get("reliability")
    if not parts or not curves:
        return None
    recalibrated: Mapping[str, Any] = result.get("recalibrated") or {}
    binned: Mapping[str, Any] = result.get("calibration") or {}
    rows = []
    for prim, block in parts.items():
        curve = curves.get(prim) or {}
        rows.append(
            [
                LABELS.get(prim, prim),
                str(block.get("n", 0)),
                _with_ci(block.get("score"), block.get("score_ci"), 4),
                _with_ci(block.get("mcb"), block.get("mcb_ci"), 4),
                _with_ci(block.get("dsc"), block.get("dsc_ci"), 4),
                fmt(block.get("unc"), 4),
                _with_ci(curve.get("ece"), curve.get("ece_ci")),
                fmt((binned.get(prim) or {}).get("ece")),
                _held_out(recalibrated.get(prim)),
            ]
        )
    first: Mapping[str, Any] = next(iter(parts.values()), {})
    notes = [
        "S = mean (p − p*)² + mean p*(1 − p*), the expected Brier score with outcomes drawn from p*; with c the "
        "isotonic fit of p* on the answers (tied answers pooled into one point) and m = mean p*: MCB = S(p) − S(c) "
        "(miscalibration: what the best monotone relabelling removes), DSC = S(m) − S(c) (discrimination: what the "
        "ranking is worth), UNC = S(m) = m(1 − m); S = MCB − DSC + UNC.",
        "Bin-free ECE: mean |p − c(p)|, the reliability curve's own distance to the diagonal; the 15-bin ECE beside it "
        "for continuity. "
        + (
            f"Intervals: {100 * first['level']:.0f}% percentile, {first['resamples']} latent-problem resamples."
            if first.get("resamples")
            else "No intervals (no bootstrap)."
        ),
        "Recalibrated: mean OVL raw → through an isotonic map fitted on half of the latent problems and scored on "
        "the other half, mean ± SD over the splits: near raw, nothing to recover; well above, the ranking is there "
        "and only the calibration is off.",
        *_inverse_note(recalibrated.get("choice")),
        *noise_notes(result),
    ]
    return Table(
        title=DECOMPOSITION_TITLE,
        columns=[
            "primitive",
            "n",
            "S [95%]",
            "MCB [95%]",
            "DSC [95%]",
            "UNC",
            "bin-free ECE",
            "ECE 15 bins",
            "recalibrated OVL",
        ],
        rows=rows,
        notes=notes,
    )


def _inverse_note(choice: Mapping[str, Any] | None) -> list[str]:
    inverse = (choice or {}).get("inverse") or {}
    if inverse.get("held_out") is None:
        return []
    return [
        f"Choice through the paper's inverse map f⁻¹ (the latent model refitted on the held-out half): {_held_out(inverse)}."
    ]


def noise_notes(result: ReportDocument) -> list[str]:
    """Repeat noise apart from bias, per primitive, or why it cannot be told apart."""
    blocks: Mapping[str, Any] = result.get("repeat_noise") or {}
    if not blocks:
        return []
    split = [
        f"{LABELS.get(prim, prim)} {fmt(block['brier'], 4)} = bias {fmt(block['bias'], 4)} + noise "
        f"{fmt(block['noise'], 4)}"
        for prim, block in blocks.items()
        if block.get("brier") is not None
    ]
    if split:
        repeats = next(block["repeats"] for block in blocks.values() if block.get("repeats"))
        return [
            "Repeat noise apart from bias, mean (p̄ − p*)² = bias² + s²/r over renderings with 2 or more repeats "
            f"(median r = {repeats}): " + "; ".join(split) + "."
        ]
    per_answer = result.get("repeats_per_answer", 1)
    why = (
        f"each answer is the published mean of {per_answer} repeats, whose spread the cassettes do not hold"
        if per_answer > 1
        else "one answer per rendering"
    )
    return [f"Repeat noise cannot be told apart from bias here: {why}."]


# ---------------------------------------------------------------------------------------------- the upgrade


def why_lines(comparison: Comparison | None) -> list[str]:
    """The diagnosis of each primitive whose raw verdict is FAILED or inconclusive, one line each."""
    if comparison is None:
        return []
    return [line for row in comparison["primitives"].values() if (line := (row.get("why") or {}).get("line"))]


def why_table(result: ReportDocument) -> Table | None:
    """Per compared primitive: Δ mean OVL raw, ΔMCB and ΔDSC with their intervals, the recalibrated Δ with its
    one-sided bounds, and the diagnosis. None without a comparison that has them."""
    comparison = result.get("comparison")
    if comparison is None:
        return None
    rows = []
    for prim, row in comparison["primitives"].items():
        why = row.get("why")
        if not why:
            continue
        recal = why.get("recalibrated") or {}
        bounds = (
            f" [{_signed(recal['lower'])}, {_signed(recal['upper'])}]" if recal.get("difference") is not None else ""
        )
        rows.append(
            [
                LABELS.get(prim, prim),
                _signed(row.get("difference")),
                f"{_signed(why['mcb']['difference'], 4)}{_interval(why['mcb']['ci'], 4)}",
                f"{_signed(why['dsc']['difference'], 4)}{_interval(why['dsc']['ci'], 4)}",
                f"{_signed(recal.get('difference'))}{bounds}",
                why.get("cause") or "—",
            ]
        )
    if not rows:
        return None
    level = next(
        (r["why"]["recalibrated"].get("level") for r in comparison["primitives"].values() if r.get("why")), None
    )
    return Table(
        title=WHY_TITLE,
        columns=["primitive", "Δ mean OVL", "ΔMCB [95%]", "ΔDSC [95%]", "recalibrated Δ [bounds]", "diagnosis"],
        rows=rows,
        notes=[
            "ΔMCB, ΔDSC: new − baseline of the Brier decomposition's miscalibration and discrimination on the paired "
            "renderings (a monotone distortion moves MCB and leaves DSC; lost ranking lowers DSC).",
            "Recalibrated Δ: both versions through isotonic maps fitted on held-out latent problems, mean OVL new − "
            f"baseline, with one-sided {_level(level)} bootstrap bounds. miscalibration: its lower bound is above −δ "
            "(a recalibration gives the old quality back); lost discrimination: its upper bound is below −δ₀; "
            "otherwise not determined. The raw verdict still decides (docs/statistics.md §8.5).",
        ],
    )


def _level(level: float | None) -> str:
    return "" if level is None else f"{100 * level:.0f}%"
