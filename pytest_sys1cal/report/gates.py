"""The gate block: every configured gate with observed value, limit and verdict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..document import GateJSON, ReportDocument
from ..gates.rows import GateRow, Outcome, is_tolerated, outcome
from ..gates.upgrade_margins import margins_phrase
from ..vocabulary import Verdict
from .table import Table, fmt


def headline(result: ReportDocument) -> tuple[Outcome, str]:
    """The run's gates in one phrase, and its outcome (gates/rows.py decides it)."""
    gates = [GateRow.from_json(g) for g in result.get("gates") or []]
    kind = outcome(gates)
    tolerated = sum(is_tolerated(g) for g in gates)
    verdicts = [g.verdict for g in gates if not is_tolerated(g)]
    if kind == Outcome.FAILED:
        phrase = f"{verdicts.count(Verdict.FAILED)} gate(s) FAILED"
    elif kind == Outcome.UNDECIDED:
        phrase = f"{verdicts.count(Verdict.INCONCLUSIVE)} comparison(s) inconclusive: not passed"
    else:
        phrase = "every gate in force passed" if kind == Outcome.PASSED else "no gate decided this run"
    if tolerated:
        phrase += f"; {tolerated} inconclusive comparison(s) let pass by regression.inconclusive: pass"
    return kind, phrase


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and 0 < abs(value) < 1e-3:
        return f"{value:.1e}"  # p-values: 0.0000 would hide the order of magnitude
    return fmt(value, 4) if isinstance(value, float) else fmt(value)


def gate_table(result: ReportDocument) -> Table | None:
    gates = result.get("gates") or []
    if not gates:
        return None
    rows = [[g["name"], *_observed_and_limit(g), g["verdict"]] for g in gates]
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


def _observed_and_limit(gate: GateJSON) -> list[str]:
    """A gate row's observed value and limit; a test's p-value (the λ gates) says that it is one, and its limit
    the level it is held to."""
    observed, limit = _value(gate.get("observed")), _value(gate.get("limit"))
    if str(gate.get("metric", "")).endswith("p_value"):
        return [f"p = {observed}" if gate.get("observed") is not None else observed, f"α = {limit}"]
    return [observed, limit]


def _baseline_name(comparison: Mapping[str, Any] | None) -> str:
    """The baseline as the table's title names it: its version (a report written before the comparison block
    existed says only "the baseline report")."""
    version = ((comparison or {}).get("baseline") or {}).get("version")
    return f"the baseline {version}" if version else "the baseline report"


def comparison_table(result: ReportDocument) -> Table | None:
    """The upgrade comparison: baseline and new side by side, for each regression gate, with the one-sided
    bounds that decided it and both margins (fails below −δ₀, passes only above the limit −δ)."""
    rows = [g for g in result.get("gates") or [] if "baseline" in g and "new" in g]
    if not rows:
        return None
    from .upgrade_text import baseline_line, sentence

    comparison = result.get("comparison")
    named = [f"{sentence(baseline_line(comparison))}."] if comparison else []
    return Table(
        title=f"Upgrade comparison against {_baseline_name(comparison)} (paired by rendering)",
        columns=["metric", "baseline", "new", "Δ", "lower bound", "upper bound", "fails below", "limit", "verdict"],
        rows=[_comparison_row(g) for g in rows],
        notes=[*named, *_margin_notes(rows), *(g["explanation"] for g in rows if g.get("explanation"))],
    )


def _comparison_row(gate: GateJSON) -> list[str]:
    from .upgrade_text import bound

    details = gate.get("details") or {}
    fail = details.get("fail_margin")
    return [
        details.get("label", gate["name"]),
        _value(gate["baseline"]),
        _value(gate["new"]),
        "—" if gate.get("observed") is None else f"{gate['observed']:+.4f}",
        bound(details.get("lower"), details.get("lower_level")),
        bound(details.get("upper"), details.get("upper_level")),
        "—" if fail is None else f"{-fail:+.4f}",
        _value(gate.get("limit")),
        gate["verdict"],
    ]


def _margin_notes(rows: Sequence[GateJSON]) -> list[str]:
    """Where the margins came from: one note when every compared primitive shares them, else one each (a
    report written before margins were recorded has none)."""
    phrases = {
        (g.get("details") or {}).get("label", g["name"]): margins_phrase(margins)
        for g in rows
        if (margins := (g.get("details") or {}).get("margins"))
    }
    if len(set(phrases.values())) == 1:
        return [f"Regression margins: {next(iter(phrases.values()))}"]
    return [f"{label}: {phrase}" for label, phrase in phrases.items()]
