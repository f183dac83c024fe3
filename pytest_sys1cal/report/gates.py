"""The gate block: every configured gate with observed value, limit and verdict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..gates.rows import Outcome, outcome
from ..vocabulary import Verdict
from .table import Table, fmt


def headline(result: Mapping[str, Any]) -> tuple[Outcome, str]:
    """The run's gates in one phrase, and its outcome (gates/rows.py decides it)."""
    verdicts = [g["verdict"] for g in result.get("gates") or []]
    kind = outcome(verdicts)
    if kind == Outcome.FAILED:
        return kind, f"{verdicts.count(Verdict.FAILED)} gate(s) FAILED"
    if kind == Outcome.UNDECIDED:
        return kind, f"{verdicts.count(Verdict.INCONCLUSIVE)} comparison(s) inconclusive: not passed"
    return kind, "every gate in force passed" if kind == Outcome.PASSED else "no gate decided this run"


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
        g["explanation"]
        for g in gates
        if g["verdict"] in (Verdict.NOT_MEASURED, Verdict.INCONCLUSIVE, Verdict.NOT_APPLICABLE)
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
