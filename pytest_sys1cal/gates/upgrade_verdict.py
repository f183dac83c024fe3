"""The upgrade verdict: the report's top-level ``comparison`` block, written only when a baseline is in force.
It says what was compared (both versions, where the baseline came from) and how it ended, in one line every
renderer leads with (``upgrade jev-1.13.0 → jev-1.14.0, 10-call mean: FAILED (Noul Δ −0.082, Score Δ −0.065
shown worse; Choice passed)``); the absolute gates of thresholds.yaml keep a line of their own beside it; and every paired
rendering, the one that dropped most first, with the node id that re-runs it (docs/report.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..document import ReportDocument, averaged_calls
from ..document_upgrade import (
    AbsoluteGates,
    BaselineSide,
    ComparedSide,
    Comparison,
    PrimitiveComparison,
    ReadingVerdict,
)
from ..vocabulary import CALL_READING, LABELS, MEAN_READING, PRIMITIVES, Verdict, reading_label
from .rows import GateRow, Outcome, is_tolerated, outcome, summarize

# The upgrade's verdict from its rows' outcome (gates/rows.py decides it, as for the whole run).
VERDICTS = {
    Outcome.FAILED: Verdict.FAILED,
    Outcome.UNDECIDED: Verdict.INCONCLUSIVE,
    Outcome.PASSED: Verdict.PASSED,
    Outcome.NONE: Verdict.NOT_MEASURED,
}
# How the headline groups its primitives by verdict (the others under their verdict's own word).
PASSED_GROUP = "passed"
GROUPS: dict[str, str] = {Verdict.FAILED: "shown worse", Verdict.PASSED: PASSED_GROUP}


def comparison_block(
    report: ReportDocument,
    gates: Sequence[GateRow],
    baseline: ReportDocument,
    *,
    origin: str,
    location: str,
    node_ids: Mapping[str, str] | None = None,
    other: ReadingVerdict | None = None,
) -> Comparison:
    """The ``comparison`` block of `report` (its gates `gates` judged, the upgrade rows among them) against the
    `baseline` report, which came from `origin` at `location`; `node_ids`: instance id → the node id that
    re-runs the rendering (None: not known, e.g. a report assembled outside a pytest run); `other`: the
    comparison under the reading that did not decide (gates/upgrade.py, other_reading)."""
    from ..analysis.rendering_moves import chance_spreads, rendering_moves

    summary = summarize(gates)
    primitives = {gate.primitive: primitive_comparison(gate) for gate in summary.upgrade}
    verdict = VERDICTS[outcome(summary.upgrade)]
    base, new = baseline["model"], report["model"]
    candidate: ComparedSide = {"model": new["name"], "version": new["version"], "source": new.get("source")}
    side: BaselineSide = {
        "model": base.get("name", ""),
        "version": base.get("version", ""),
        "source": base.get("source"),
        "origin": origin,
        "location": location,
    }
    for named, model in ((candidate, new), (side, base)):
        if model.get("model_id"):  # a version recorded under a model id of its own: named beside it
            named["model_id"] = model["model_id"]
    reading = next((gate.details.get("reading") for gate in summary.upgrade if gate.details), None) or MEAN_READING
    label = reading_label(reading, averaged_calls(report))
    compared = [prim for prim in PRIMITIVES if primitives.get(prim, {}).get("difference") is not None]
    moves = rendering_moves(report, baseline, compared, reading)
    for prim, spread in chance_spreads(report, baseline, compared, reading).items():
        primitives[prim]["chance"] = spread
    paired = next((gate.details["matched"] for gate in summary.upgrade if gate.details), len(moves))
    said = decided_by(verdict, primitives)
    block: Comparison = {
        "headline": f"{compared_names(side, candidate)}, {label}: {verdict}" + (f" ({said})" if said else ""),
        "reading": reading,
        "reading_label": label,
        "summary": said,
        "verdict": verdict,
        "baseline": side,
        "candidate": candidate,
        "paired": paired,
        "primitives": primitives,
        "absolute_gates": absolute_gates(summary.absolute),
        "renderings": [{**row, "node_id": (node_ids or {}).get(row["instance_id"])} for row in moves],
    }
    cells = next((gate.details["cells"] for gate in summary.upgrade if gate.details and "cells" in gate.details), None)
    if cells:  # how the Δ cells were marked (the same in every row of one comparison)
        block["cells"] = cells
    if other is not None:
        block["other_reading"] = other
    return block


def disagreement(comparison: Comparison) -> str | None:
    """The notice when the reading that did not decide would give another verdict (overall or for a primitive),
    naming both and which decided; None when they agree or the other could not be compared."""
    other = comparison.get("other_reading")
    if other is None or "primitives" not in other:
        return None
    ours = {prim: row["verdict"] for prim, row in comparison["primitives"].items()}
    theirs = {prim: row["verdict"] for prim, row in other["primitives"].items()}
    if ours == theirs and comparison["verdict"] == other["verdict"]:
        return None
    said = comparison["summary"]
    read = other["label"] if other["reading"] == CALL_READING else f"as {other['label']}s"
    return (
        f"the two readings disagree: {comparison['reading_label']}, the reading that decides, the upgrade "
        f"{comparison['verdict']}" + (f" ({said})" if said else "") + f"; read {read} it would be "
        f"{other['verdict']}" + (f" ({other['summary']})" if other["summary"] else "") + ". thresholds.yaml's "
        'reading says which decides (python -m pytest_sys1cal docs thresholds, "The reading")'
    )


def primitive_comparison(gate: GateRow) -> PrimitiveComparison:
    """The reviewer's numbers of one upgrade-gate row, read from its details (every upgrade row has them)."""
    out: PrimitiveComparison = {"verdict": str(gate.verdict), "tolerated": is_tolerated(gate)}
    details = gate.details
    if details is None:
        return out
    out.update(
        {
            "n": details["n"],
            "baseline": details["baseline"],
            "new": details["new"],
            "difference": details["difference"],
            "margin": details["margin"],
            "fail_margin": details["fail_margin"],
        }
    )
    if "lower" in details:  # decided: its one-sided bounds at their Holm levels
        out.update(
            {
                "lower": details["lower"],
                "lower_level": details["lower_level"],
                "upper": details["upper"],
                "upper_level": details["upper_level"],
                "p_noninferior": details["p_noninferior"],
                "p_worse": details["p_worse"],
            }
        )
    if "why" in details:  # why it moved (docs/statistics.md §8.5)
        out["why"] = details["why"]
    if "reason" in details:  # not compared, and why
        out["reason"] = details["reason"]
    return out


def signed(value: float) -> str:
    """A difference as the verdict line writes it: three decimals, its sign always, a true minus sign."""
    return f"{value:+.3f}".replace("-", "−")


def side_name(side: ComparedSide, other: ComparedSide) -> str:
    """A side's version, with its model when the two sides are of different models; a version recorded under a
    model id of its own as "prod (my-model-1)", the id sent to the server and the version's own name."""
    version = f"{side['model_id']} ({side['version']})" if side.get("model_id") else side["version"]
    return version if side["model"] == other["model"] else f"{side['model']} {version}"


def compared_names(baseline: ComparedSide, candidate: ComparedSide) -> str:
    """``upgrade <baseline> → <candidate>``: the headline's first part."""
    return f"upgrade {side_name(baseline, candidate)} → {side_name(candidate, baseline)}"


def decided_by(verdict: str, primitives: Mapping[str, PrimitiveComparison]) -> str:
    """What decided the verdict, per primitive, each Δ̂ where it counts: "Noul Δ −0.082 shown worse; Choice
    passed" (the headline's part in brackets)."""
    groups: dict[str, list[str]] = {}
    for prim, row in primitives.items():
        label = LABELS.get(prim, prim)
        if row["verdict"] == Verdict.INCONCLUSIVE and row.get("tolerated"):
            key = "inconclusive, let pass by regression.inconclusive: pass"
        else:
            key = GROUPS.get(row["verdict"], row["verdict"])
        shown = key != PASSED_GROUP or verdict == Verdict.PASSED
        difference = row.get("difference")
        groups.setdefault(key, []).append(
            f"{label} Δ {signed(difference)}" if shown and difference is not None else label
        )
    if verdict == Verdict.PASSED and PASSED_GROUP in groups:
        groups["shown within the margin"] = groups.pop(PASSED_GROUP)
    order = ["shown worse", "inconclusive", "shown within the margin", PASSED_GROUP]
    parts = sorted(groups.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
    return "; ".join(f"{', '.join(names)} {key}" for key, names in parts)


def absolute_gates(gates: Sequence[GateRow]) -> AbsoluteGates:
    """The thresholds.yaml gates in one line: ``absolute gates: 10 of 21 FAILED`` (or passed, or their verdicts)."""
    counted = summarize(gates)
    verdicts = {str(verdict): count for verdict, count in counted.verdicts.items()}
    total = len(gates)
    if not total:
        said = "none in force"
    elif counted.failed:
        said = f"{len(counted.failed)} of {total} {Verdict.FAILED}"
    else:
        said = ", ".join(f"{count} of {total} {verdict}" for verdict, count in verdicts.items())
    return {"total": total, "verdicts": verdicts, "outcome": str(counted.outcome), "line": f"absolute gates: {said}"}
