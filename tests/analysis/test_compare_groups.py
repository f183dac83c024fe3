"""The upgrade comparison by family (analysis/compare_groups.py) against the paired comparison itself: the
same pairing, the same latent-problem bootstrap, and numbers that add up to the overall Δ."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from pytest_sys1cal.analysis.stats import Clusters
from pytest_sys1cal.analysis.upgrade import compare_reports
from pytest_sys1cal.defaults import UPGRADE_RESAMPLES
from pytest_sys1cal.report.breakdown_tables import family_delta_table
from pytest_sys1cal.run_report import Report
from tests.reports import BASELINE_MOVES, golden, shifted_baseline, with_comparison

ANSWER = {"noul": "p_noul", "choice": "p_choice", "score": "mu_score"}


@pytest.fixture(scope="module")
def reports() -> tuple[dict, dict]:
    new = golden("jev")
    return new, shifted_baseline(new)


@pytest.fixture(scope="module")
def comparison(reports: tuple[dict, dict]) -> dict:
    return compare_reports(*reports, seed=7)


def paired_differences(new: dict, base: dict, prim: str) -> dict[str, list[float]]:
    """Per family, OVL_new − OVL_base of each rendering in both reports, computed from the items."""
    column = ANSWER[prim]
    base_items = {item["instance_id"]: item for item in base["items"]}
    out: dict[str, list[float]] = {}
    for item in new["items"]:
        other = base_items.get(item["instance_id"])
        if other is None or item[column] is None or other[column] is None:
            continue
        star = item["p_star"]
        out.setdefault(item["family"], []).append(abs(other[column] - star) - abs(item[column] - star))
    return out


@pytest.mark.parametrize("prim", ["noul", "choice", "score"])
def test_each_familys_delta_is_its_paired_mean_and_they_add_up_to_the_overall_delta(
    reports: tuple[dict, dict], comparison: dict, prim: str
) -> None:
    metric = comparison["metrics"][prim]
    by_family = metric["by_family"]
    expected = paired_differences(*reports, prim)
    assert list(by_family) == sorted(expected)
    for family, d in expected.items():
        assert by_family[family]["n"] == len(d)
        assert by_family[family]["difference"] == pytest.approx(sum(d) / len(d), abs=1e-12)
        assert by_family[family]["new"] - by_family[family]["baseline"] == pytest.approx(sum(d) / len(d), abs=1e-12)
    weighted = sum(cell["n"] * cell["difference"] for cell in by_family.values()) / metric["n"]
    assert weighted == pytest.approx(metric["difference"], abs=1e-12)


def test_the_moved_families_are_found_and_the_others_did_not_move(comparison: dict) -> None:
    moved = {(family, prim) for family, prim, _ in BASELINE_MOVES}
    for prim, metric in comparison["metrics"].items():
        for family, cell in metric["by_family"].items():
            if (family, prim) in moved:
                low, high = cell["ci"]
                assert not low <= 0 <= high, (family, prim, cell)  # the interval excludes 0
            else:
                assert cell["difference"] == 0 and cell["ci"] == [0.0, 0.0], (family, prim)
    assert comparison["metrics"]["choice"]["by_family"]["compound"]["difference"] < 0  # the baseline was better
    assert comparison["metrics"]["score"]["by_family"]["frequency"]["difference"] > 0  # and worse here


def test_the_intervals_come_from_the_comparisons_own_resamples(reports: tuple[dict, dict], comparison: dict) -> None:
    """Redraw the comparison's bootstrap (its seed, its latent-problem clusters) and restrict it to a family."""
    new, base = reports
    items = sorted(new["items"], key=lambda item: item["instance_id"])  # the comparison's order
    base_items = {item["instance_id"]: item for item in base["items"]}
    clusters = Clusters.of([item["latent_instance_id"] for item in items])
    counts = clusters.resample_counts(np.random.default_rng(7), UPGRADE_RESAMPLES)
    family = np.asarray([item["family"] for item in items])
    d = np.asarray(
        [abs(base_items[i["instance_id"]]["p_choice"] - i["p_star"]) - abs(i["p_choice"] - i["p_star"]) for i in items]
    )
    rows = family == "compound"
    boot = (counts @ clusters.sums(np.where(rows, d, 0))) / (counts @ clusters.sums(rows.astype(float)))
    cell = comparison["metrics"]["choice"]["by_family"]["compound"]
    assert cell["ci"] == pytest.approx(list(np.quantile(boot, [0.025, 0.975])), abs=1e-12)
    assert cell["se"] == pytest.approx(float(boot.std(ddof=1)), abs=1e-12)
    assert cell["resamples"] == UPGRADE_RESAMPLES


def test_one_family_reproduces_the_overall_bootstrap(reports: tuple[dict, dict]) -> None:
    new, base = (copy.deepcopy(r) for r in reports)
    for report in (new, base):
        for item in report["items"]:
            item["family"] = "all"
    comparison = compare_reports(new, base, seed=3)
    for metric in comparison["metrics"].values():
        cell = metric["by_family"]["all"]
        assert cell["difference"] == pytest.approx(metric["difference"], abs=1e-15)
        assert cell["se"] == metric["se"]  # the very same resampled means


def test_a_report_without_families_has_no_breakdown(reports: tuple[dict, dict]) -> None:
    new, base = (copy.deepcopy(r) for r in reports)
    for item in new["items"]:
        del item["family"]
    assert all(m["by_family"] is None for m in compare_reports(new, base)["metrics"].values())


def test_the_table_names_the_cells_that_moved_most(reports: tuple[dict, dict]) -> None:
    report = with_comparison(*reports)
    table = family_delta_table(Report.read_back(report))
    assert table is not None
    assert table.columns[:2] == ["family", "n"]
    # The families, then the whole dataset's Δ that the verdicts read (issue 23), between the gate's bounds.
    assert [row[0] for row in table.rows] == [*sorted(report["by_family"]), "all (the gate's Δ)"]
    noul = next(g for g in report["gates"] if g["name"] == "regression.noul.mean_ovl")["details"]
    assert table.rows[-1][2] == f"{noul['difference']:+.3f} [{noul['lower']:+.3f}, {noul['upper']:+.3f}]"
    moved = table.notes[0]
    assert moved.startswith("Moved most: Score on frequency +0.343")
    assert "Choice on compound -0.161" in moved and "Noul on bayes" in moved
    assert family_delta_table(Report.read_back(golden("jev"))) is None  # no baseline, no table
