"""The gate block: every configured gate with observed value, limit and verdict, read from the run's typed gate
rows and what they add up to (gates/rows.py counts it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..document_upgrade import Comparison
from ..gates.rows import GateRow, GateSummary, Outcome
from ..gates.upgrade_margins import margins_phrase
from ..run_report import Report
from .table import Table, fmt


def headline(gates: GateSummary) -> tuple[Outcome, str]:
    """The run's gates in one phrase, and its outcome (gates/rows.py decides it)."""
    kind = gates.outcome
    if kind == Outcome.FAILED:
        phrase = f"{len(gates.failed)} gate(s) FAILED"
    elif kind == Outcome.UNDECIDED:
        phrase = f"{len(gates.inconclusive)} comparison(s) inconclusive: not passed"
    else:
        phrase = "every gate in force passed" if kind == Outcome.PASSED else "no gate decided this run"
    if gates.tolerated:
        phrase += f"; {len(gates.tolerated)} inconclusive comparison(s) let pass by regression.inconclusive: pass"
    return kind, phrase


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and 0 < abs(value) < 1e-3:
        return f"{value:.1e}"  # p-values: 0.0000 would hide the order of magnitude
    return fmt(value, 4) if isinstance(value, float) else fmt(value)


def gate_table(gates: GateSummary) -> Table | None:
    if not gates.rows:
        return None
    rows = [[g.name, *_observed_and_limit(g), str(g.verdict)] for g in gates.rows]
    notes = [", ".join(f"{n} {verdict}" for verdict, n in gates.verdicts.items())]
    # One note per distinct reason a gate was not decided (a -k subset would repeat one reason 21 times).
    notes += [reason for reason in dict.fromkeys(g.explanation for g in gates.not_decided) if reason]
    return Table(title="Gates", columns=["gate", "observed", "limit", "verdict"], rows=rows, notes=notes)


def _observed_and_limit(gate: GateRow) -> list[str]:
    """A gate row's observed value and limit; a test's p-value (the λ gates) says that it is one, and its limit
    the level it is held to."""
    observed, limit = _value(gate.observed), _value(gate.limit)
    if gate.metric.endswith("p_value"):
        return [f"p = {observed}" if gate.observed is not None else observed, f"α = {limit}"]
    return [observed, limit]


def _baseline_name(comparison: Comparison | None) -> str:
    """The baseline as the table's title names it: its version (a report written before the comparison block
    existed says only "the baseline report")."""
    version = None if comparison is None else comparison["baseline"].get("version")
    return f"the baseline {version}" if version else "the baseline report"


def comparison_table(report: Report) -> Table | None:
    """The upgrade comparison: baseline and new side by side, for each regression gate, with the one-sided
    bounds that decided it and both margins (fails below −δ₀, passes only above the limit −δ)."""
    rows = [gate for gate in report.gates.upgrade if gate.details is not None]
    if not rows:
        return None
    from .upgrade_text import baseline_line, sentence

    comparison = report.data.get("comparison")
    named = [f"{sentence(baseline_line(comparison))}."] if comparison else []
    return Table(
        title=f"Upgrade comparison against {_baseline_name(comparison)} (paired by rendering)",
        columns=["metric", "baseline", "new", "Δ", "lower bound", "upper bound", "fails below", "limit", "verdict"],
        rows=[_comparison_row(g) for g in rows],
        notes=[*named, *_margin_notes(rows), *(g.explanation for g in rows if g.explanation)],
    )


def _comparison_row(gate: GateRow) -> list[str]:
    from .upgrade_text import bound

    details = gate.details
    fail = None if details is None else details["fail_margin"]
    return [
        gate.name if details is None else details["label"],
        _value(gate.baseline),
        _value(gate.new),
        "—" if gate.observed is None else f"{gate.observed:+.4f}",
        bound(None, None) if details is None else bound(details.get("lower"), details.get("lower_level")),
        bound(None, None) if details is None else bound(details.get("upper"), details.get("upper_level")),
        "—" if fail is None else f"{-fail:+.4f}",
        _value(gate.limit),
        str(gate.verdict),
    ]


def _margin_notes(rows: Sequence[GateRow]) -> list[str]:
    """Where the margins came from: one note when every compared primitive shares them, else one each."""
    phrases = {details["label"]: margins_phrase(details["margins"]) for g in rows if (details := g.details)}
    if len(set(phrases.values())) == 1:
        return [f"Regression margins: {next(iter(phrases.values()))}"]
    return [f"{label}: {phrase}" for label, phrase in phrases.items()]
