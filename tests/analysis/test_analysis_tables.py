"""The paper's tables as built from an analysis result."""

from __future__ import annotations

import pytest

from pytest_sys1cal.analysis import analyze
from pytest_sys1cal.report.breakdown_tables import by_family_table, by_representation_table
from pytest_sys1cal.report.paper_tables import (
    TABLES,
    build_tables,
    decisions_as_table,
    option_swap_as_table,
    per_call_table,
    table1,
    table2,
    table3,
    table6,
)
from pytest_sys1cal.report.recalibration_table import recalibration_table
from pytest_sys1cal.report.why_text import decomposition_table


def cell(table, label_start: str, column: str) -> str:
    row = next(row for row in table.rows if row[0].startswith(label_start))
    return row[table.columns.index(column)]


def test_print_order():
    assert [
        table1,
        per_call_table,
        by_family_table,
        by_representation_table,
        table2,
        table3,
        table6,
        decisions_as_table,
        option_swap_as_table,
        recalibration_table,
        decomposition_table,
    ] == TABLES


def test_table2_labels_the_paper_statistic_next_to_the_valid_test(published):
    table = table2(published)
    labels = [row[0] for row in table.rows]
    paper = next(i for i, label in enumerate(labels) if "paper's statistic (not a valid test of λ=0)" in label)
    assert labels[paper + 2].startswith("valid test of λ=0")  # after the paper's improvement statistic
    assert cell(table, "mean λ_j", "estimate") == "0.821"
    assert cell(table, "mean λ_j", "95% interval") == "[0.760, 0.882]"
    assert cell(table, "mean λ_j", "p") == "2.9e-44"
    assert cell(table, "λ (global fit)", "estimate") == "0.978"
    assert cell(table, "valid test", "p") == "≤1e-10"
    assert any("weakly identified" in note for note in table.notes)


def test_table3_and_table6(published):
    t3 = table3(published)
    assert cell(t3, "inverse-calibrated", "mean OVL") == "0.880"
    assert cell(t3, "T/U/F interval", "mean width") == "0.292"
    t6 = table6(published)
    assert cell(t6, "Choice", "mean pairwise TV") == "0.0998"


def test_decisions_table_shows_the_worked_example(published):
    table = decisions_as_table(published)
    assert [row[0] for row in table.rows] == [
        "raw Choice (Bayes)",
        "inverse-calibrated Choice (Bayes)",
        "T/U/F interval (Γ-minimax)",
        "oracle p*",
    ]
    example = next(note for note in table.notes if note.startswith("Worked example"))
    assert "Choice 0.632" in example and "[0.400, 0.767] → defer" in example


def test_option_swap_table(published, make_item):
    assert option_swap_as_table(published).rows == [
        ["not measured", "no rendering carries a swapped Choice (e.g. reconstructed cassettes)"]
    ]
    items = [
        make_item(f"bayes__{j}", f"r{r}", 0.2 + 0.6 * (j % 2), choice=0.3 + 0.1 * r + 0.02 * j, choice_swapped=0.3)
        for j in range(4)
        for r in range(2)
    ]
    table = option_swap_as_table(analyze(items, bootstrap=0))
    assert cell(table, "first-position rate", "value") == "0.500"
    assert cell(table, "one class collapsed", "value") in {"yes", "no"}


@pytest.mark.parametrize(
    "answers",
    [
        {},  # the run produced nothing
        {"noul": 0.4, "choice": 0.6},  # no Score answers
        {"noul": 0.4, "choice": 0.6, "mu": 0.0},  # Score expectation at an end
    ],
)
def test_degenerate_results_render(make_item, answers):
    items = [make_item("bayes__seed_000042", f"r{r}", 0.4, **answers) for r in range(3)]
    tables = build_tables(analyze(items))
    assert len(tables) == len(TABLES) - 1  # one call per rendering: the per-call table is Table 1, said in a note
    assert any(note.startswith("Not computed:") for table in tables for note in table.notes)
