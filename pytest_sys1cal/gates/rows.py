"""A gate's result (`GateRow`, a dict only in the JSON report) and the one place that decides, from the
verdicts, whether a run passed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from ..document import GateJSON
from ..vocabulary import Verdict


@dataclass(frozen=True)
class GateRow:
    """One gate as evaluated on one run: what it read (`metric`, `observed`), the `limit` it holds it to, its
    `verdict` and a sentence saying what that means. Upgrade-gate rows add `baseline`, `new` (mean OVL over
    the paired renderings) and `details` (the whole comparison); `tolerated` marks an inconclusive comparison
    that thresholds.yaml lets pass (``regression.inconclusive: pass``): still inconclusive, not failing."""

    name: str
    metric: str
    observed: float | None
    limit: float | None
    verdict: Verdict
    explanation: str
    baseline: float | None = None
    new: float | None = None
    details: Mapping[str, Any] | None = field(default=None, compare=False)
    tolerated: bool = False

    def with_verdict(self, verdict: Verdict, explanation: str, *, keep_observed: bool = True) -> GateRow:
        return replace(
            self, verdict=verdict, explanation=explanation, observed=self.observed if keep_observed else None
        )

    def to_json(self) -> GateJSON:
        """The row as the report's ``gates[]`` holds it; ``passed`` is derived (true, false, or null when the
        gate neither passed nor failed) for the readers of the stable schema."""
        out: GateJSON = {
            "name": self.name,
            "metric": self.metric,
            "observed": self.observed,
            "limit": self.limit,
            "passed": {Verdict.PASSED: True, Verdict.FAILED: False}.get(self.verdict),
            "verdict": self.verdict,
            "explanation": self.explanation,
        }
        if self.details is not None:  # an upgrade-gate row, whose baseline and new may be null
            out["baseline"], out["new"] = self.baseline, self.new
            out["details"], out["tolerated"] = dict(self.details), self.tolerated
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GateRow:
        return cls(
            name=data["name"],
            metric=data.get("metric", ""),
            observed=data.get("observed"),
            limit=data.get("limit"),
            verdict=Verdict(data["verdict"]),
            explanation=data.get("explanation") or "",
            baseline=data.get("baseline"),
            new=data.get("new"),
            details=data.get("details"),
            tolerated=bool(data.get("tolerated", False)),
        )


class Outcome(StrEnum):
    """What the gates of a run add up to."""

    FAILED = "failed"  # a gate FAILED
    UNDECIDED = "undecided"  # no gate failed, but a comparison was inconclusive
    PASSED = "passed"  # every gate that decided passed
    NONE = "none"  # no gate decided anything


def outcome(gates: Iterable[GateRow]) -> Outcome:
    """The run's outcome from its gates: the only place this is decided (exit status, JUnit, terminal,
    Markdown and HTML headlines all ask here). A gate not measured on a run of the whole dataset is FAILED
    already (evaluate.unmeasured_fails); "not measured" and "not applicable" are left only on a run of part
    of it, where they neither pass nor fail; nor does an inconclusive comparison that is `tolerated`."""
    found = {Verdict(gate.verdict) for gate in gates if not is_tolerated(gate)}
    if Verdict.FAILED in found:
        return Outcome.FAILED
    if Verdict.INCONCLUSIVE in found:
        return Outcome.UNDECIDED
    return Outcome.PASSED if Verdict.PASSED in found else Outcome.NONE


def passes(gate: GateRow) -> bool | None:
    """One gate as a test outcome: True (passed), False (FAILED, or an inconclusive comparison: not shown
    to pass), None (neither: not measured or not applicable on a run of part of the dataset, or an
    inconclusive comparison `tolerated` by ``regression.inconclusive: pass``)."""
    if is_tolerated(gate):
        return None
    return {Verdict.PASSED: True, Verdict.FAILED: False, Verdict.INCONCLUSIVE: False}.get(Verdict(gate.verdict))


def is_tolerated(gate: GateRow) -> bool:
    """An inconclusive comparison let pass by ``regression.inconclusive: pass`` (only inconclusive ones can be)."""
    return gate.tolerated and Verdict(gate.verdict) == Verdict.INCONCLUSIVE
