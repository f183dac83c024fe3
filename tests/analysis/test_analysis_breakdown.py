"""analysis/breakdown.py: Table 1 by family and by representation, against a computation of its own from the
report's items (plain Python, one rendering at a time)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from pytest_sys1cal.analysis import analyze
from pytest_sys1cal.report.breakdown_tables import by_family_table, by_representation_table
from tests.reports import golden

ANSWER = {"noul": "p_noul", "choice": "p_choice", "score": "mu_score"}


def by_hand(items: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """The by-group block computed directly from the items' repeat means and p*."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in items:
        groups[item[key]].append(item)
    out = {}
    for name, rows in groups.items():
        cells = {}
        for prim, column in ANSWER.items():
            asked = [row for row in rows if row[column] is not None]
            tv = [abs(row[column] - row["p_star"]) for row in asked]
            cells[prim] = {
                "n": len(asked),
                "latent_problems": len({row["latent_instance_id"] for row in asked}),
                "mean_tv": math.fsum(tv) / len(tv) if tv else None,
                "mean_ovl": 1 - math.fsum(tv) / len(tv) if tv else None,
            }
        out[name] = {
            "renderings": len(rows),
            "latent_problems": len({row["latent_instance_id"] for row in rows}),
            "primitives": cells,
        }
    return out


def assert_same(block: dict[str, Any], expected: dict[str, Any]) -> None:
    assert list(block) == sorted(expected)
    for name, group in expected.items():
        assert block[name]["renderings"] == group["renderings"]
        assert block[name]["latent_problems"] == group["latent_problems"]
        for prim, cell in group["primitives"].items():
            got = block[name]["primitives"][prim]
            assert (got["n"], got["latent_problems"]) == (cell["n"], cell["latent_problems"]), (name, prim)
            for stat in ("mean_tv", "mean_ovl"):
                assert got[stat] == (None if cell[stat] is None else pytest.approx(cell[stat], abs=1e-12)), (name, prim)


@pytest.mark.parametrize("model", ["jev", "semif"])
@pytest.mark.parametrize(("key", "block"), [("family", "by_family"), ("representation", "by_representation")])
def test_the_bundled_reports_breakdowns_match_their_items(model: str, key: str, block: str) -> None:
    report = golden(model)
    assert_same(report[block], by_hand(report["items"], key))


def test_jev_by_family_counts_and_the_paper_total() -> None:
    report = golden("jev")
    families = report["by_family"]
    assert {name: g["renderings"] for name, g in families.items()} == {
        "bayes": 35,
        "compound": 60,
        "conditional": 100,
        "explicit_probability": 80,
        "frequency": 30,
        "sequential_bayes": 60,
    }
    # A latent problem belongs to one family: the families partition the 92 problems.
    assert sum(g["latent_problems"] for g in families.values()) == 92
    for prim in ("noul", "choice", "score"):
        weighted = sum(g["primitives"][prim]["n"] * g["primitives"][prim]["mean_ovl"] for g in families.values())
        assert weighted / 365 == pytest.approx(report["primitives"][prim]["mean_ovl"], abs=1e-12)


def test_a_primitive_not_asked_in_a_group_is_none_and_noted(make_item: Callable[..., dict]) -> None:
    items = [
        make_item("alpha__1", "prose", 0.2, noul=0.3, choice=0.4, mu=0.2),
        make_item("alpha__1", "table", 0.2, noul=0.1, choice=0.2, mu=0.3),
        make_item("beta__1", "prose", 0.7, choice=0.9, mu=0.6),  # Noul not asked
        make_item("beta__2", "prose", 0.5, choice=0.5, mu=0.5),
    ]
    result = analyze(items, bootstrap=0)
    beta = result["by_family"]["beta"]
    assert (beta["renderings"], beta["latent_problems"]) == (2, 2)
    assert beta["primitives"]["noul"] == {
        "n": 0,
        "latent_problems": 0,
        "mean_tv": None,
        "mean_ovl": None,
        "per_call": {"mean_tv": None, "mean_ovl": None},
    }
    assert beta["primitives"]["choice"]["mean_tv"] == pytest.approx(0.1)
    prose = result["by_representation"]["prose"]
    assert prose["primitives"]["noul"]["n"] == 1
    assert prose["primitives"]["noul"]["mean_ovl"] == pytest.approx(0.9)
    report = {**result, "model": {}, "dataset": {}}
    table = by_family_table(report)
    assert table is not None
    assert table.rows[1][3:5] == ["—", "—"]  # beta's Noul TV and OVL
    assert table.rows[-1][0] == "all"
    assert "Noul on beta: 0 of 2" in table.notes[-1]
    representation = by_representation_table(report)
    assert representation is not None
    assert [row[0] for row in representation.rows] == ["prose", "table", "all"]


def test_failed_renderings_are_left_out_of_every_group(make_item: Callable[..., dict]) -> None:
    items = [
        make_item("alpha__1", "prose", 0.2, noul=0.3, choice=0.4, mu=0.2),
        make_item("alpha__2", "prose", 0.6, error="server error"),
    ]
    result = analyze(items, bootstrap=0)
    assert result["by_family"]["alpha"]["renderings"] == 1
    assert result["counts"]["failed"] == 1
