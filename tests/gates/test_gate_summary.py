"""gates/rows.py counts what a run's gates add up to, once (GateSummary), for every renderer and the run's end:
each row in the one bucket its verdict puts it in, in the run's order, and the outcome the rows decide."""

from __future__ import annotations

from pytest_sys1cal.gates.rows import GateRow, Outcome, summarize
from pytest_sys1cal.vocabulary import Verdict


def row(name: str, verdict: Verdict, *, tolerated: bool = False) -> GateRow:
    return GateRow(name, "metric", 0.5, 0.4, verdict, f"why {name}", tolerated=tolerated)


ROWS = [
    row("noul.min_mean_ovl", Verdict.PASSED),
    row("choice.max_ece", Verdict.FAILED),
    row("score.max_ece", Verdict.NOT_MEASURED),
    row("regression.noul.mean_ovl", Verdict.INCONCLUSIVE, tolerated=True),
    row("regression.choice.mean_ovl", Verdict.INCONCLUSIVE),
    row("regression.score.mean_ovl", Verdict.FAILED),
    row("choice.max_swap_shift", Verdict.NOT_APPLICABLE),
]


def names(rows: tuple[GateRow, ...]) -> list[str]:
    return [gate.name for gate in rows]


def test_every_row_is_counted_in_the_bucket_its_verdict_puts_it_in() -> None:
    summary = summarize(ROWS)
    assert summary.rows == tuple(ROWS)
    assert summary.outcome == Outcome.FAILED
    assert summary.verdicts == {"passed": 1, "FAILED": 2, "not measured": 1, "inconclusive": 2, "not applicable": 1}
    assert names(summary.failed) == ["choice.max_ece", "regression.score.mean_ovl"]
    assert names(summary.failed_absolute) == ["choice.max_ece"]
    assert names(summary.failed_upgrade) == ["regression.score.mean_ovl"]
    assert names(summary.inconclusive) == ["regression.choice.mean_ovl"]  # the tolerated one counts apart
    assert names(summary.tolerated) == ["regression.noul.mean_ovl"]
    assert names(summary.not_decided) == [
        "score.max_ece",
        "regression.noul.mean_ovl",
        "regression.choice.mean_ovl",
        "choice.max_swap_shift",
    ]
    assert names(summary.not_applicable) == ["choice.max_swap_shift"]
    assert names(summary.upgrade) == [g.name for g in ROWS if g.name.startswith("regression.")]
    assert names(summary.absolute) == [g.name for g in ROWS if not g.name.startswith("regression.")]


def test_the_outcome_is_the_one_rows_py_decides() -> None:
    tolerated_only = summarize([ROWS[0], ROWS[3]])
    assert tolerated_only.outcome == Outcome.PASSED and not tolerated_only.inconclusive
    assert summarize([ROWS[0], ROWS[4]]).outcome == Outcome.UNDECIDED
    assert summarize([ROWS[2], ROWS[6]]).outcome == Outcome.NONE
    assert summarize([]).outcome == Outcome.NONE and summarize([]).verdicts == {}
