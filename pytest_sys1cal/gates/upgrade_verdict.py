"""The upgrade verdict: the report's top-level ``comparison`` block, written only when a baseline is in force.
It says what was compared (both versions, where the baseline came from) and how it ended, in one line every
renderer leads with (``upgrade jev-1.13.0 → jev-1.14.0: FAILED (Noul Δ −0.082, Score Δ −0.065 shown worse;
Choice passed)``); the absolute gates of thresholds.yaml keep a line of their own beside it; and every paired
rendering, the one that dropped most first, with the node id that re-runs it (docs/report.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..document import ReportDocument
from ..document_upgrade import AbsoluteGates, BaselineSide, ComparedSide, Comparison, PrimitiveComparison
from ..vocabulary import LABELS, PRIMITIVES, Verdict
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
) -> Comparison:
    """The ``comparison`` block of `report` (its gates `gates` judged, the upgrade rows among them) against the
    `baseline` report, which came from `origin` at `location`; `node_ids`: instance id → the node id that
    re-runs the rendering (None: not known, e.g. a report assembled outside a pytest run)."""
    from ..analysis.rendering_moves import chance_spreads, rendering_moves

    summary = summarize(gates)
    primitives = {gate.primitive: _primitive(gate) for gate in summary.upgrade}
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
    compared = [prim for prim in PRIMITIVES if primitives.get(prim, {}).get("difference") is not None]
    moves = rendering_moves(report, baseline, compared)
    for prim, spread in chance_spreads(report, baseline, compared).items():
        primitives[prim]["chance"] = spread
    paired = next((gate.details["matched"] for gate in summary.upgrade if gate.details), len(moves))
    said = decided_by(verdict, primitives)
    return {
        "headline": f"{compared_names(side, candidate)}: {verdict}" + (f" ({said})" if said else ""),
        "summary": said,
        "verdict": verdict,
        "baseline": side,
        "candidate": candidate,
        "paired": paired,
        "primitives": primitives,
        "absolute_gates": absolute_gates(summary.absolute),
        "renderings": [{**row, "node_id": (node_ids or {}).get(row["instance_id"])} for row in moves],
    }


def _primitive(gate: GateRow) -> PrimitiveComparison:
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
    if "reason" in details:  # not compared, and why
        out["reason"] = details["reason"]
    return out


def signed(value: float) -> str:
    """A difference as the verdict line writes it: three decimals, its sign always, a true minus sign."""
    return f"{value:+.3f}".replace("-", "−")


def side_name(side: ComparedSide, other: ComparedSide) -> str:
    """A side's version, with its model when the two sides are of different models."""
    return side["version"] if side["model"] == other["model"] else f"{side['model']} {side['version']}"


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
