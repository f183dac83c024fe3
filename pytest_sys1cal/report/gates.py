"""The gate block: every configured gate with observed value, limit and verdict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..vocabulary import FAILED, INCONCLUSIVE, NOT_APPLICABLE, NOT_MEASURED, PASSED
from .table import Table, fmt


def headline(result: Mapping[str, Any]) -> tuple[str, str]:
    """The run's gates in one phrase, and its kind: "failed", "undecided", "passed" or "none"."""
    gates = result.get("gates") or []
    failed = sum(g.get("verdict") == FAILED for g in gates)
    undecided = sum(g.get("verdict") == INCONCLUSIVE for g in gates)
    if failed:
        return "failed", f"{failed} gate(s) FAILED"
    if undecided:
        return "undecided", f"{undecided} comparison(s) inconclusive: not passed"
    if any(g.get("verdict") == PASSED for g in gates):
        return "passed", "every gate in force passed"
    return "none", "no gate decided this run"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and 0 < abs(value) < 1e-3:
        return f"{value:.1e}"  # p-values: 0.0000 would hide the order of magnitude
    return fmt(value, 4) if isinstance(value, float) else fmt(value)


def gate_table(result: Mapping[str, Any]) -> Table | None:
    gates = result.get("gates") or []
    if not gates:
        return None
    rows = [[g["name"], _value(g.get("observed")), _value(g.get("limit")), g["verdict"]] for g in gates]
    counts = {v: sum(g["verdict"] == v for g in gates) for v in dict.fromkeys(g["verdict"] for g in gates)}
    notes = [", ".join(f"{n} {verdict}" for verdict, n in counts.items())]
    # One note per distinct reason a gate was not decided (a -k subset would repeat one reason 21 times).
    reasons = dict.fromkeys(
        g["explanation"] for g in gates if g["verdict"] in (NOT_MEASURED, INCONCLUSIVE, NOT_APPLICABLE)
    )
    notes += [f"{reason}" for reason in reasons if reason]
    return Table(title="Gates", columns=["gate", "observed", "limit", "verdict"], rows=rows, notes=notes)


def comparison_table(result: Mapping[str, Any]) -> Table | None:
    """The upgrade comparison: baseline and new side by side, for each regression gate."""
    rows = [g for g in result.get("gates") or [] if "baseline" in g and "new" in g]
    if not rows:
        return None
    return Table(
        title="Upgrade comparison against the baseline report (paired by rendering)",
        columns=["metric", "baseline", "new", "Δ", "limit", "verdict"],
        rows=[
            [
                g.get("details", {}).get("label", g["name"]),
                _value(g["baseline"]),
                _value(g["new"]),
                "—" if g.get("observed") is None else f"{g['observed']:+.4f}",
                _value(g.get("limit")),
                g["verdict"],
            ]
            for g in rows
        ],
        notes=[g["explanation"] for g in rows if g.get("explanation")],
    )
