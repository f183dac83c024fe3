"""The upgrade verdict: the report's top-level ``comparison`` block, written only when a baseline is in force.
It says what was compared (both versions, where the baseline came from) and how it ended, in one line every
renderer leads with (``upgrade jev-1.13.0 → jev-1.14.0: FAILED (Noul Δ −0.082, Score Δ −0.065 shown worse;
Choice passed)``); the absolute gates of thresholds.yaml keep a line of their own beside it; and every paired
rendering, the one that dropped most first, with the node id that re-runs it (docs/report.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from ..document import (
    AbsoluteGates,
    BaselineSide,
    ComparedSide,
    Comparison,
    MovedRendering,
    PrimitiveComparison,
    ReportDocument,
)
from ..vocabulary import LABELS, PRIMITIVES, Verdict
from .rows import GateRow, Outcome, is_tolerated, outcome

REGRESSION = "regression."  # the name prefix of the upgrade gate's rows
# The upgrade's verdict from its rows' outcome (gates/rows.py decides it, as for the whole run).
VERDICTS = {
    Outcome.FAILED: Verdict.FAILED,
    Outcome.UNDECIDED: Verdict.INCONCLUSIVE,
    Outcome.PASSED: Verdict.PASSED,
    Outcome.NONE: Verdict.NOT_MEASURED,
}
_KEPT = ("n", "baseline", "new", "difference", "lower", "lower_level", "upper", "upper_level", "why", "reason")


def is_upgrade(gate: GateRow) -> bool:
    return gate.name.startswith(REGRESSION)


def comparison_block(
    report: ReportDocument,
    gates: Sequence[GateRow],
    baseline: ReportDocument,
    *,
    origin: str,
    location: str,
    node_ids: Mapping[str, str] | None = None,
) -> Comparison:
    """The ``comparison`` block of `report` (its gates `gates` judged, the upgrade rows among them) against the
    `baseline` report, which came from `origin` at `location`; `node_ids`: instance id → the node id that
    re-runs the rendering (None: not known, e.g. a report assembled outside a pytest run)."""
    from ..analysis.rendering_moves import rendering_moves

    upgrade = [gate for gate in gates if is_upgrade(gate)]
    primitives = {gate.name.split(".")[1]: _primitive(gate) for gate in upgrade}
    verdict = VERDICTS[outcome(upgrade)]
    base, new = baseline["model"], report["model"]
    candidate: ComparedSide = {"model": new["name"], "version": new["version"], "source": new.get("source")}
    side: BaselineSide = {
        "model": base.get("name", ""),
        "version": base.get("version", ""),
        "source": base.get("source"),
        "origin": origin,
        "location": location,
    }
    compared = [prim for prim in PRIMITIVES if primitives.get(prim, {}).get("difference") is not None]
    moves: list[Any] = rendering_moves(report, baseline, compared)
    for row in moves:
        row["node_id"] = (node_ids or {}).get(row["instance_id"])
    paired = next((int((gate.details or {}).get("matched", 0)) for gate in upgrade), len(moves))
    said = decided_by(verdict, primitives)
    block: Comparison = {
        "headline": f"{compared_names(side, candidate)}: {verdict}" + (f" ({said})" if said else ""),
        "summary": said,
        "verdict": verdict,
        "baseline": side,
        "candidate": candidate,
        "paired": paired,
        "primitives": primitives,
        "absolute_gates": absolute_gates([gate for gate in gates if not is_upgrade(gate)]),
        "renderings": [_ordered(row) for row in moves],
    }
    cells = next(((gate.details or {}).get("cells") for gate in upgrade if (gate.details or {}).get("cells")), None)
    if cells:  # how the Δ cells were marked (the same in every row of one comparison)
        block["cells"] = cells
    return block


def _primitive(gate: GateRow) -> PrimitiveComparison:
    details = gate.details or {}
    out: dict[str, Any] = {"verdict": str(gate.verdict)}
    out.update({key: details[key] for key in _KEPT if key in details})
    out.update(margin=details.get("margin"), fail_margin=details.get("fail_margin"), tolerated=is_tolerated(gate))
    return cast(PrimitiveComparison, out)


def _ordered(row: Mapping[str, Any]) -> MovedRendering:
    keys = ("instance_id", "family", "representation", "p_star", "node_id", "baseline", "new", "d", "worst")
    return cast(MovedRendering, {**{key: row[key] for key in keys}, "worst_primitive": row["worst_primitive"]})


def signed(value: float) -> str:
    """A difference as the verdict line writes it: three decimals, its sign always, a true minus sign."""
    return f"{value:+.3f}".replace("-", "−")


def side_name(side: Mapping[str, Any], other: Mapping[str, Any]) -> str:
    """A side's version, with its model when the two sides are of different models."""
    return side["version"] if side["model"] == other["model"] else f"{side['model']} {side['version']}"


def compared_names(baseline: Mapping[str, Any], candidate: Mapping[str, Any]) -> str:
    """``upgrade <baseline> → <candidate>``: the headline's first part."""
    return f"upgrade {side_name(baseline, candidate)} → {side_name(candidate, baseline)}"


def decided_by(verdict: str, primitives: Mapping[str, Any]) -> str:
    """What decided the verdict, per primitive, each Δ̂ where it counts: "Noul Δ −0.082 shown worse; Choice
    passed" (the headline's part in brackets)."""
    groups: dict[str, list[str]] = {}
    for prim, row in primitives.items():
        label = LABELS.get(prim, prim)
        if row["verdict"] == Verdict.INCONCLUSIVE and row.get("tolerated"):
            key = "inconclusive, let pass by regression.inconclusive: pass"
        else:
            key = {Verdict.FAILED: "shown worse", Verdict.PASSED: "passed"}.get(row["verdict"], row["verdict"])
        shown = key != "passed" or verdict == Verdict.PASSED
        groups.setdefault(key, []).append(
            f"{label} Δ {signed(row['difference'])}" if shown and row.get("difference") is not None else label
        )
    if verdict == Verdict.PASSED and "passed" in groups:
        groups["shown within the margin"] = groups.pop("passed")
    order = ["shown worse", "inconclusive", "shown within the margin", "passed"]
    parts = sorted(groups.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))
    return "; ".join(f"{', '.join(names)} {key}" for key, names in parts)


def absolute_gates(gates: Sequence[GateRow]) -> AbsoluteGates:
    """The thresholds.yaml gates in one line: ``absolute gates: 10 of 21 FAILED`` (or passed, or their verdicts)."""
    verdicts: dict[str, int] = {}
    for gate in gates:
        verdicts[str(gate.verdict)] = verdicts.get(str(gate.verdict), 0) + 1
    total = len(gates)
    if not total:
        said = "none in force"
    elif Verdict.FAILED in verdicts:
        said = f"{verdicts[Verdict.FAILED]} of {total} FAILED"
    else:
        said = ", ".join(f"{count} of {total} {verdict}" for verdict, count in verdicts.items())
    return {"total": total, "verdicts": verdicts, "outcome": str(outcome(gates)), "line": f"absolute gates: {said}"}
