"""Threshold gates on a run: each configured gate judges itself (kinds.py); then what a run of part of the
dataset, or a gate that measured nothing, means for its verdict."""

from __future__ import annotations

from collections.abc import Iterable

from ..document import ReportDocument
from ..vocabulary import Verdict
from .rows import GateRow
from .schema import Thresholds


def evaluate(thresholds: Thresholds, report: ReportDocument) -> list[GateRow]:
    """One row per configured gate, in file-independent order (primitives, then uncertainty): "passed",
    "FAILED", or "not measured" when what it reads is absent from this run; read as thresholds.yaml's `reading`
    says (per call, or the repeat means)."""
    return [gate.evaluate(report, thresholds.reading.value) for gate in thresholds.gates]


def not_applicable(rows: Iterable[GateRow], why: str) -> list[GateRow]:
    """The rows of a run that measured part of the dataset: neither passed nor failed, with no value shown
    beside a limit it was never meant to meet."""
    return [row.with_verdict(Verdict.NOT_APPLICABLE, why, keep_observed=False) for row in rows]


def unmeasured_fails(rows: Iterable[GateRow]) -> list[GateRow]:
    """On a run of the whole dataset a configured gate that could not be measured fails: a gate that
    measured nothing never passes."""
    return [
        row.with_verdict(
            Verdict.FAILED,
            f"{row.explanation} A configured gate must be measured to pass: record what it needs, or remove it "
            "from the thresholds for this model or version.",
        )
        if row.verdict == Verdict.NOT_MEASURED
        else row
        for row in rows
    ]
