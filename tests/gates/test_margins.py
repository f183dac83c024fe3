"""Margins users can see and choose (issue 19, item 3): where the upgrade gate's margins came from (the
thresholds file's section, or the plugin's defaults), `regression.inconclusive: fail | pass`, and the words
the summary says when the comparison is too noisy for its margins (docs/statistics.md §6.6)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest

from pytest_sys1cal.gates.config import load_thresholds
from pytest_sys1cal.gates.rows import GateRow, Outcome, outcome, passes
from pytest_sys1cal.gates.schema import ThresholdsError, UpgradeConfig
from pytest_sys1cal.gates.upgrade import evaluate_upgrade
from pytest_sys1cal.gates.upgrade_margins import margins_details, upgrade_notices
from pytest_sys1cal.report.gates import headline
from pytest_sys1cal.report.terminal import gate_lines
from pytest_sys1cal.run_report import Report
from pytest_sys1cal.vocabulary import Verdict
from tests.analysis.test_compare import Model
from tests.reports import golden, shifted_baseline
from tests.runs import sys1cal
from tests.version_roots import NEW, OLD, two_versions

JEV = {"name": "jev", "version": "jev-1.14.0"}


def thresholds_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "thresholds.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# ============================================================================================ the key


def test_inconclusive_is_read_with_the_line_that_sets_it(tmp_path: Path) -> None:
    path = thresholds_file(tmp_path, "jev:\n  regression:\n    alpha: 0.1\n    inconclusive: pass\n")
    config = load_thresholds(path, "jev", "jev-1.14.0").regression
    assert config.inconclusive == "pass"
    assert config.set_by["inconclusive"] == ("jev.regression.inconclusive", 4)
    assert config.set_by["alpha"] == ("jev.regression.alpha", 3)
    assert "noul.max_drop_mean_ovl" not in config.set_by  # the default
    assert (
        load_thresholds(thresholds_file(tmp_path, "jev:\n  noul: {min_mean_ovl: 0.5}\n"), "jev").regression.inconclusive
        == "fail"
    )


@pytest.mark.parametrize(
    ("value", "shown"), [("maybe", "'maybe' (text)"), ("true", "'true' (a boolean)"), ("1", "'1' (an integer)")]
)
def test_any_other_inconclusive_value_is_a_line_numbered_error(tmp_path: Path, value: str, shown: str) -> None:
    path = thresholds_file(tmp_path, f"jev:\n  regression:\n    inconclusive: {value}\n")
    with pytest.raises(ThresholdsError) as error:
        load_thresholds(path, "jev")
    assert str(error.value).startswith(f"{path}:3: jev.regression.inconclusive: expected fail or pass, got {shown}")
    assert "pass lets it pass with a notice" in str(error.value)


def test_a_version_overrides_inconclusive_and_each_setting_names_its_section(tmp_path: Path) -> None:
    text = (
        "jev:\n"
        "  regression: {max_drop_mean_ovl: 0.03, inconclusive: fail}\n"
        "  jev-1.14.0:\n"
        "    regression:\n"
        "      inconclusive: pass\n"
        "      choice: {fail_drop_mean_ovl: 0.005}\n"
    )
    path = thresholds_file(tmp_path, text)
    config = load_thresholds(path, "jev", "jev-1.14.0").regression
    assert config.inconclusive == "pass"
    choice = margins_details(config, "choice", JEV)
    assert choice["set_by"] == {
        "max_drop_mean_ovl": {"path": "jev.regression.max_drop_mean_ovl", "line": 2},
        "fail_drop_mean_ovl": {"path": "jev[jev-1.14.0].regression.choice.fail_drop_mean_ovl", "line": 6},
        "alpha": None,
        "inconclusive": {"path": "jev[jev-1.14.0].regression.inconclusive", "line": 5},
    }
    assert choice["sections"] == ["jev.regression", "jev[jev-1.14.0].regression"]
    assert choice["text"] == f"{path}, jev.regression and jev[jev-1.14.0].regression (defaults: alpha 0.05)"
    noul = margins_details(config, "noul", JEV)
    assert (noul["max_drop_mean_ovl"], noul["fail_drop_mean_ovl"]) == (0.03, 0.015)
    assert noul["text"].endswith("(defaults: fail_drop_mean_ovl half of max_drop_mean_ovl, alpha 0.05)")
    assert load_thresholds(path, "jev").regression.inconclusive == "fail"  # other versions keep the model's


def test_margins_from_the_defaults_say_why(tmp_path: Path) -> None:
    path = thresholds_file(tmp_path, "jev:\n  noul: {min_mean_ovl: 0.5}\nsemif:\n  regression: {alpha: 0.1}\n")
    config = load_thresholds(path, "jev", "jev-1.14.0").regression
    details = margins_details(config, "score", JEV)
    assert details["source"] == "defaults" and details["sections"] == []
    assert details["text"] == f"the plugin's defaults ({path} sets no regression key for jev jev-1.14.0)"
    assert margins_details(UpgradeConfig(), "score", JEV)["text"] == "the plugin's defaults (no thresholds file)"
    assert margins_details(load_thresholds(path, "systemone").regression, "noul", JEV)["source"] == "defaults"


# ============================================================================================ inconclusive: pass


def semif_rows(config: UpgradeConfig) -> list[GateRow]:
    """The pinned SmolLM2 report against a baseline better on some families: Noul inconclusive, Choice
    FAILED, Score passed under the default margins (tests/reports.py)."""
    report = golden("semif")
    return evaluate_upgrade(config, report, shifted_baseline(report), seed=0)


def test_pass_lets_an_inconclusive_comparison_pass_and_still_shows_it() -> None:
    strict = semif_rows(UpgradeConfig(primitives=("noul", "score")))
    lenient = semif_rows(UpgradeConfig(primitives=("noul", "score"), inconclusive="pass"))
    assert [g.verdict for g in strict] == [g.verdict for g in lenient] == [Verdict.INCONCLUSIVE, Verdict.PASSED]
    assert [g.tolerated for g in strict] == [False, False] and [g.tolerated for g in lenient] == [True, False]
    assert outcome(strict) == Outcome.UNDECIDED and outcome(lenient) == Outcome.PASSED
    assert passes(strict[0]) is False and passes(lenient[0]) is None  # JUnit: failed, then skipped
    noul = lenient[0]
    assert noul.details["advice"]["renderings"] > 0  # the advice stays
    assert noul.explanation.endswith("Let pass by regression.inconclusive: pass (regression.inconclusive).")
    data = {"gates": [g.to_json() for g in lenient]}
    assert data["gates"][0]["tolerated"] is True and data["gates"][0]["passed"] is None
    assert GateRow.from_json(data["gates"][0]).tolerated
    gates = Report.read_back(data).gates  # the saved rows, typed as a run's
    assert headline(gates) == (
        Outcome.PASSED,
        "every gate in force passed; 1 inconclusive comparison(s) let pass by regression.inconclusive: pass",
    )
    notices = upgrade_notices(lenient)
    assert notices[0].startswith(
        "1 inconclusive comparison(s) (Noul mean OVL) let pass by regression.inconclusive: pass"
    )
    text = [line for line, _ in gate_lines(gates)]
    assert "1 comparison(s) inconclusive, let pass by regression.inconclusive: pass" in text[-2]
    assert not any(line.startswith("calibration gate not passed") for line in text)


def test_pass_does_not_let_a_failed_comparison_pass() -> None:
    rows = semif_rows(UpgradeConfig(inconclusive="pass"))
    assert [g.verdict for g in rows] == [Verdict.INCONCLUSIVE, Verdict.FAILED, Verdict.PASSED]
    assert outcome(rows) == Outcome.FAILED and passes(rows[1]) is False
    assert not rows[1].tolerated


def lenient_thresholds(tmp_path: Path, inconclusive: str) -> Path:
    """Wide margins under which jev-1.13.0 against the degraded copy is inconclusive on Choice only."""
    return thresholds_file(
        tmp_path,
        "jev:\n  regression:\n    max_drop_mean_ovl: 0.06\n    fail_drop_mean_ovl: 0.04\n"
        f"    inconclusive: {inconclusive}\n",
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return two_versions(tmp_path_factory.mktemp("margins") / "cassettes")


@pytest.mark.parametrize("inconclusive", ["pass", "fail"])
def test_a_run_with_inconclusive_pass_exits_0_and_says_why(
    pytester: pytest.Pytester, root: Path, tmp_path: Path, inconclusive: str
) -> None:
    thresholds = lenient_thresholds(tmp_path, inconclusive)
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    result = sys1cal(pytester, f"--sys1cal-cassettes={root}", f"--sys1cal-thresholds={thresholds}", f"--sys1cal-model-version={OLD}", f"--sys1cal-baseline={NEW}", f"--sys1cal-report={report}", f"--junitxml={junit}")  # fmt: skip
    result.stdout.fnmatch_lines(
        [
            "Choice mean OVL *-0.0385*-0.0600*inconclusive",
            f"*Regression margins: δ 0.06 (passes within), δ₀ 0.04 (fails beyond), α 0.05, inconclusive: {inconclusive}; "
            f"from {thresholds}, jev.regression (defaults: alpha 0.05)",
        ]
    )
    choice = next(g for g in json.loads(report.read_text())["gates"] if g["name"] == "regression.choice.mean_ovl")
    assert choice["verdict"] == "inconclusive" and "would decide it, passed or FAILED" in choice["explanation"]
    if inconclusive == "fail":
        assert result.ret == pytest.ExitCode.TESTS_FAILED and choice["tolerated"] is False
        result.stdout.fnmatch_lines(["calibration gate not passed: 1 comparison(s) inconclusive*"])
        return
    assert result.ret == pytest.ExitCode.OK and choice["tolerated"] is True
    result.stdout.fnmatch_lines(
        [
            f"notice: 1 inconclusive comparison(s) (Choice mean OVL) let pass by regression.inconclusive: pass "
            f"({thresholds}:5 jev.regression.inconclusive)*",
            "1 comparison(s) inconclusive, let pass by regression.inconclusive: pass*",
        ]
    )
    assert '<skipped type="pytest.skip" message="inconclusive: Choice mean OVL' in junit.read_text()


# ============================================================================================ too noisy for the margins


@pytest.fixture(scope="module")
def noisy_rows() -> list[GateRow]:
    """Two recordings of one simulated model, 3 repeats each, repeat noise σ_w = 0.3 (tests/analysis/test_compare.py)."""
    model = Model()
    new, base = (model.record(np.random.default_rng(seed), sigma_w=0.3) for seed in (1, 2))
    return evaluate_upgrade(None, new, base, seed=0)


def test_the_design_check_is_the_paired_formula_at_the_comparisons_own_se(noisy_rows: list[GateRow]) -> None:
    normal = NormalDist()
    for row in noisy_rows:
        d, design = row.details, row.details["design"]
        z = normal.inv_cdf(1 - design["level"]) + normal.inv_cdf(design["power"])
        assert design["level"] == pytest.approx(1 - d["lower_level"])
        assert design["mde"] == pytest.approx(z * d["se"])
        assert design["enough"] is False and design["repeats_alone"] is True
        # The repeats advised bring the paired formula within the margin; one fewer would not (unless 4 is the floor).
        var = lambda r, d=d: d["sigma_delta"] ** 2 + 2 * d["sigma_w"] ** 2 / r  # noqa: E731
        assert z**2 * var(design["repeats"]) * d["design_effect"] / d["n"] <= 0.02**2 + 1e-12
        assert design["repeats"] == 4 and z**2 * var(3) * d["design_effect"] / d["n"] > 0.02**2
        assert design["renderings"] == math.ceil(z**2 * d["n"] * d["se"] ** 2 / 0.02**2)


def test_the_summary_says_the_repeats_are_too_few_for_the_margins(noisy_rows: list[GateRow]) -> None:
    (notice,) = upgrade_notices(noisy_rows)
    assert notice.startswith(
        "the upgrade comparison is too noisy for its regression margins: at 368 paired renderings, each value the "
        "mean of 3 model repeats, its minimum detectable effect (80% power, from its own spread of per-rendering "
        "differences) is Noul 0.0209 > δ 0.02, Choice 0.0208 > δ 0.02, Score 0.0202 > δ 0.02"
    )
    assert notice.endswith(
        "The repeats are too few for the margins: about 4 repeats per rendering in both recordings (or about 401 "
        "paired renderings) would bring it within them"
    )


def test_no_design_notice_when_the_comparison_can_decide_or_has_decided() -> None:
    model = Model()
    new, base = (model.record(np.random.default_rng(seed)) for seed in (1, 2))  # σ_w = 0.1: MDE ≈ 0.01
    rows = evaluate_upgrade(None, new, base, seed=0)
    assert all(row.details["design"]["enough"] for row in rows) and upgrade_notices(rows) == []
    # The pinned Jev report against a baseline better on some families: Noul passed with MDE ≤ δ, Choice FAILED
    # (left out: decided), Score passed with MDE > δ; the repeat noise is unknown (each answer a published
    # mean of 10), so the words say what more renderings would do.
    report = golden("jev")
    rows = evaluate_upgrade(None, report, shifted_baseline(report), seed=0)
    (notice,) = upgrade_notices(rows)
    assert "is Score 0.0342 > δ 0.02:" in notice and "Noul" not in notice and "Choice" not in notice
    assert notice.endswith(
        "the repeat noise of these recordings is unknown, so what more repeats would do cannot be said: about "
        f"{rows[2].details['design']['renderings']} paired renderings would bring it within the margins"
    )
