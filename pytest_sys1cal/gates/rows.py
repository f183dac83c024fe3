"""A gate's result (`GateRow`, a dict only in the JSON report) and the one place that decides, from the
verdicts, whether a run passed and counts what its gates add up to (`GateSummary`, which every renderer reads)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum

from ..document import GateJSON
from ..document_upgrade import UpgradeDetails
from ..vocabulary import Verdict

UPGRADE = "regression."  # the name prefix of the upgrade gate's rows (thresholds.yaml's section name)


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
    details: UpgradeDetails | None = field(default=None, compare=False)
    tolerated: bool = False

    @property
    def is_upgrade(self) -> bool:
        """One of the upgrade gate's rows (the others are thresholds.yaml's absolute gates)."""
        return self.name.startswith(UPGRADE)

    @property
    def primitive(self) -> str:
        """The primitive an upgrade-gate row compares (``regression.noul.mean_ovl`` → ``noul``)."""
        return self.name.split(".")[1]

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
            out["details"], out["tolerated"] = self.details.copy(), self.tolerated
        return out

    @classmethod
    def from_json(cls, data: GateJSON) -> GateRow:
        """A row of a saved report's ``gates[]``, typed once where the report is read back."""
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


@dataclass(frozen=True)
class GateSummary:
    """What a run's gates add up to, counted once (`summarize`) for every renderer and the run's end: the rows in
    their order, the outcome, and the rows by what they mean for it."""

    rows: tuple[GateRow, ...]
    outcome: Outcome
    verdicts: dict[str, int]  # how many rows have each verdict, in the order the verdicts first appear
    failed: tuple[GateRow, ...]  # FAILED
    inconclusive: tuple[GateRow, ...]  # inconclusive comparisons that count against the run
    tolerated: tuple[GateRow, ...]  # inconclusive comparisons let pass by regression.inconclusive: pass
    not_decided: tuple[GateRow, ...]  # neither passed nor failed: not measured, inconclusive, not applicable
    not_applicable: tuple[GateRow, ...]  # a threshold gate on a run of part of the dataset
    absolute: tuple[GateRow, ...]  # thresholds.yaml's gates
    upgrade: tuple[GateRow, ...]  # the upgrade gate's rows

    @property
    def failed_absolute(self) -> tuple[GateRow, ...]:
        return tuple(gate for gate in self.failed if not gate.is_upgrade)

    @property
    def failed_upgrade(self) -> tuple[GateRow, ...]:
        return tuple(gate for gate in self.failed if gate.is_upgrade)


def summarize(gates: Iterable[GateRow]) -> GateSummary:
    rows = tuple(gates)
    verdicts: dict[str, int] = {}
    for gate in rows:
        verdicts[gate.verdict] = verdicts.get(gate.verdict, 0) + 1
    inconclusive = tuple(gate for gate in rows if Verdict(gate.verdict) == Verdict.INCONCLUSIVE)
    neither = (Verdict.NOT_MEASURED, Verdict.INCONCLUSIVE, Verdict.NOT_APPLICABLE)
    return GateSummary(
        rows=rows,
        outcome=outcome(rows),
        verdicts=verdicts,
        failed=tuple(gate for gate in rows if Verdict(gate.verdict) == Verdict.FAILED),
        inconclusive=tuple(gate for gate in inconclusive if not is_tolerated(gate)),
        tolerated=tuple(gate for gate in inconclusive if is_tolerated(gate)),
        not_decided=tuple(gate for gate in rows if Verdict(gate.verdict) in neither),
        not_applicable=tuple(gate for gate in rows if Verdict(gate.verdict) == Verdict.NOT_APPLICABLE),
        absolute=tuple(gate for gate in rows if not gate.is_upgrade),
        upgrade=tuple(gate for gate in rows if gate.is_upgrade),
    )
