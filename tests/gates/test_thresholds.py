"""thresholds.yaml: validation messages, the version-override rule, gate evaluation and the bundled draft."""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_sys1cal.errors import InputError
from pytest_sys1cal.gates.config import load_thresholds
from pytest_sys1cal.gates.evaluate import evaluate as evaluate_gates
from pytest_sys1cal.gates.schema import Thresholds, ThresholdsError, UpgradeConfig
from pytest_sys1cal.gates.upgrade import UpgradeError, evaluate_upgrade
from pytest_sys1cal.versions.upgrade_baseline import load_baseline
from pytest_sys1cal.vocabulary import PRIMITIVES

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "fixtures" / "published-jev" / "noul_choice_score_instance_metrics.csv"
GATE_KEYS = (
    "min_mean_ovl, min_median_ovl, max_mean_pairwise_tv, max_mean_max_tv, max_ece, max_brier, max_mcb, min_dsc, "
    "max_swap_shift, max_first_position_bias"
)
PRIMITIVE_KEYS = (
    "min_mean_ovl, min_median_ovl, max_mean_pairwise_tv, max_mean_max_tv, max_ece, max_brier, max_mcb, min_dsc"
)
SECTIONS = "noul, choice, score, uncertainty, decisions, regression"
MODEL_KEYS = f"{SECTIONS}, reading, or a model version (e.g. 'jev-1.14.0') holding those sections"


def evaluate(thresholds: Thresholds, report: dict[str, Any]) -> list[dict[str, Any]]:
    """The gate rows as the JSON report holds them."""
    return [row.to_json() for row in evaluate_gates(thresholds, report)]


def load_text(
    tmp_path: Path, text: str, model: str = "jev", version: str | None = "jev-1.14.0", **kw: Any
) -> Thresholds:
    path = tmp_path / "thresholds.yaml"
    path.write_text(text, encoding="utf-8")
    return load_thresholds(path, model, version, **kw)


def error_of(tmp_path: Path, text: str, **kw: Any) -> str:
    with pytest.raises(ThresholdsError) as info:
        load_text(tmp_path, text, **kw)
    message = str(info.value)
    assert "\n" not in message
    prefix = f"{tmp_path / 'thresholds.yaml'}:"
    assert message.startswith(prefix), message
    return message[len(prefix) :]


# ============================================================================================ mistakes

MISTAKES = {
    "typo of a gate key": (
        "jev:\n  choice:\n    min_mean_ovll: 0.7\n",
        "3: jev.choice.min_mean_ovll: unknown key 'min_mean_ovll'; did you mean 'min_mean_ovl'? "
        f"Allowed keys: {GATE_KEYS}.",
    ),
    "typo of a section": (
        "jev:\n  choise:\n    min_mean_ovl: 0.7\n",
        f"2: jev.choise: unknown key 'choise'; did you mean 'choice'? Allowed keys: {MODEL_KEYS}.",
    ),
    "unknown key with no near match": (
        "jev:\n  alpha: 0.05\n",
        f"2: jev.alpha: unknown key 'alpha'. Allowed keys: {MODEL_KEYS}.",
    ),
    "typo in uncertainty": (
        "jev:\n  uncertainty:\n    require_lambda_positve: true\n",
        "3: jev.uncertainty.require_lambda_positve: unknown key 'require_lambda_positve'; did you mean "
        "'require_lambda_positive'? Allowed keys: require_lambda_positive, require_lambda_zero, alpha.",
    ),
    "typo in decisions": (
        "jev:\n  decisions:\n    defer_cost: 45\n",
        "3: jev.decisions.defer_cost: unknown key 'defer_cost'; did you mean 'deferral_cost'? "
        "Allowed keys: error_cost, deferral_cost.",
    ),
    "typo in regression": (
        "jev:\n  regression:\n    max_drop_mean_ovl: 0.02\n    alpah: 0.05\n",
        "4: jev.regression.alpah: unknown key 'alpah'; did you mean 'alpha'? Allowed keys: alpha, "
        "max_drop_mean_ovl, fail_drop_mean_ovl, primitives, resamples, inconclusive, sequential, noul, choice, score.",
    ),
    "sequential rounds out of range": (
        "jev:\n  regression:\n    sequential:\n      rounds: 0\n",
        "4: jev.regression.sequential.rounds: expected a whole number of rounds from 1 to 100, got '0' (an integer) "
        "(1 round is the fixed design: one look, at the whole dataset)",
    ),
    "sequential spending unknown": (
        "jev:\n  regression:\n    sequential:\n      spending: pocok\n",
        "4: jev.regression.sequential.spending: expected obrien-fleming or pocock, got 'pocok' (text): obrien-fleming "
        "(the default) spends almost no error early, pocock spends it evenly (docs/statistics.md §7.2)",
    ),
    "typo in sequential": (
        "jev:\n  regression:\n    sequential:\n      round: 5\n",
        "4: jev.regression.sequential.round: unknown key 'round'; did you mean 'rounds'? Allowed keys: spending, rounds.",
    ),
    "typo in a regression primitive map": (
        "jev:\n  regression:\n    choice: {max_drop_mean_ov: 0.03}\n",
        "3: jev.regression.choice.max_drop_mean_ov: unknown key 'max_drop_mean_ov'; did you mean "
        "'max_drop_mean_ovl'? Allowed keys: max_drop_mean_ovl, fail_drop_mean_ovl.",
    ),
    "a Choice gate under noul": (
        "jev:\n  noul:\n    max_swap_shift: 0.05\n",
        "3: jev.noul.max_swap_shift: 'max_swap_shift' is a Choice gate; it is only allowed under choice. "
        f"Allowed keys: {PRIMITIVE_KEYS}.",
    ),
    "a gate directly under the model": (
        "jev:\n  min_mean_ovl: 0.7\n",
        "2: jev.min_mean_ovl: 'min_mean_ovl' is a gate of one primitive; put it under noul, choice or score "
        f"(e.g. jev.choice.min_mean_ovl). Allowed keys here: {SECTIONS}.",
    ),
    "text for a number": (
        "jev:\n  noul: {min_mean_ovl: high}\n",
        "2: jev.noul.min_mean_ovl: expected a number, got 'high' (text)",
    ),
    "boolean for a number": (
        "jev:\n  noul:\n    min_mean_ovl: true\n",
        "3: jev.noul.min_mean_ovl: expected a number, got 'true' (a boolean)",
    ),
    "list for a number": (
        "jev:\n  noul:\n    min_mean_ovl: [0.9]\n",
        "3: jev.noul.min_mean_ovl: expected a number, got a list",
    ),
    "number for a boolean": (
        "jev:\n  uncertainty:\n    require_lambda_positive: 1\n",
        "3: jev.uncertainty.require_lambda_positive: expected true or false, got '1' (an integer)",
    ),
    "scalar for a section": (
        "jev:\n  noul: 0.9\n",
        "2: jev.noul: expected a mapping for 'noul', got '0.9' (a number)",
    ),
    "probability above 1": (
        "jev:\n  noul:\n    min_mean_ovl: 1.2\n",
        "3: jev.noul.min_mean_ovl: 1.2 is outside the allowed range [0, 1]",
    ),
    "negative probability": (
        "jev:\n  score:\n    max_brier: -0.1\n",
        "3: jev.score.max_brier: -0.1 is outside the allowed range [0, 1]",
    ),
    "NaN limit": (
        "jev:\n  score:\n    max_ece: .nan\n",
        "3: jev.score.max_ece: nan is outside the allowed range [0, 1]",
    ),
    "first-position bias above 0.5": (
        "jev:\n  choice:\n    max_first_position_bias: 0.6\n",
        "3: jev.choice.max_first_position_bias: 0.6 is outside the allowed range [0, 0.5]",
    ),
    "negative cost": (
        "jev:\n  decisions:\n    error_cost: 100\n    deferral_cost: -5\n",
        "4: jev.decisions.deferral_cost: -5 is not a valid cost: it must be finite and ≥ 0",
    ),
    "infinite cost": (
        "jev:\n  decisions:\n    error_cost: .inf\n",
        "3: jev.decisions.error_cost: inf is not a valid cost: it must be finite and ≥ 0",
    ),
    "alpha 0": (
        "jev:\n  uncertainty:\n    require_lambda_positive: true\n    alpha: 0\n",
        "4: jev.uncertainty.alpha: 0 is outside the allowed range (0, 1)",
    ),
    "alpha 1": (
        "jev:\n  uncertainty:\n    alpha: 1\n",
        "3: jev.uncertainty.alpha: 1 is outside the allowed range (0, 1)",
    ),
    "regression alpha above 1": (
        "jev:\n  regression:\n    alpha: 1.5\n",
        "3: jev.regression.alpha: 1.5 is outside the allowed range (0, 1)",
    ),
    "both lambda requirements": (
        "jev:\n  uncertainty:\n    require_lambda_positive: true\n    require_lambda_zero: true\n",
        "4: jev.uncertainty.require_lambda_zero: require_lambda_positive and require_lambda_zero cannot both "
        "be true; keep one",
    ),
    "fail drop above the pass drop": (
        "jev:\n  regression:\n    max_drop_mean_ovl: 0.02\n    fail_drop_mean_ovl: 0.03\n",
        "4: jev.regression.fail_drop_mean_ovl: 0.03 exceeds max_drop_mean_ovl 0.02 for noul (set by "
        "jev.regression.max_drop_mean_ovl on line 3); the drop that fails must not exceed the drop that passes",
    ),
    "per-primitive drop below the shared fail drop": (
        "jev:\n  regression:\n    fail_drop_mean_ovl: 0.01\n    choice: {max_drop_mean_ovl: 0.005}\n",
        "3: jev.regression.fail_drop_mean_ovl: 0.01 exceeds max_drop_mean_ovl 0.005 for choice (set by "
        "jev.regression.choice.max_drop_mean_ovl on line 4); the drop that fails must not exceed the drop that "
        "passes",
    ),
    "typo in the primitives list": (
        "jev:\n  regression:\n    primitives: [noul, choise]\n",
        "3: jev.regression.primitives: unknown primitive 'choise'; did you mean 'choice'? Allowed: noul, choice, score.",
    ),
    "primitive listed twice": (
        "jev:\n  regression:\n    primitives: [noul, noul]\n",
        "3: jev.regression.primitives: 'noul' is listed twice",
    ),
    "empty primitives list": (
        "jev:\n  regression:\n    primitives: []\n",
        "3: jev.regression.primitives: the list is empty; remove the key to gate all three primitives",
    ),
    "primitives not a list": (
        "jev:\n  regression:\n    primitives: noul\n",
        "3: jev.regression.primitives: expected a list of primitives (e.g. [noul, choice, score]), got 'noul' (text)",
    ),
    "fractional resamples": (
        "jev:\n  regression:\n    resamples: 2000.5\n",
        "3: jev.regression.resamples: expected a whole number of resamples, got '2000.5' (a number)",
    ),
    "too few resamples": (
        "jev:\n  regression:\n    resamples: 10\n",
        "3: jev.regression.resamples: 10 is outside the allowed range 200..100000",
    ),
    "duplicate key": (
        "jev:\n  noul:\n    min_mean_ovl: 0.9\n    min_mean_ovl: 0.8\n",
        "4: jev.noul.min_mean_ovl: duplicate key (first given on line 3)",
    ),
    "unquoted numeric version": (
        "jev:\n  1.14:\n    noul: {min_mean_ovl: 0.9}\n",
        '2: jev.1.14: keys must be text; quote it ("1.14") if it is a version',
    ),
    "typo inside a version": (
        "jev:\n  noul: {min_mean_ovl: 0.9}\n  jev-1.14.0:\n    choise: {min_mean_ovl: 0.8}\n",
        f"4: jev[jev-1.14.0].choise: unknown key 'choise'; did you mean 'choice'? Allowed keys: {SECTIONS}, reading.",
    ),
    "bad value inside a version": (
        "jev:\n  jev-1.14.0:\n    choice: {min_mean_ovl: 2}\n",
        "3: jev[jev-1.14.0].choice.min_mean_ovl: 2 is outside the allowed range [0, 1]",
    ),
    "mistake in another model's section": (
        "jev:\n  noul: {min_mean_ovl: 0.9}\nsemif:\n  score: {min_mean_ovl: 9}\n",
        "4: semif.score.min_mean_ovl: 9 is outside the allowed range [0, 1]",
    ),
    "mistake in another version's section": (
        "jev:\n  jev-1.99.0:\n    choice: {max_ece: -1}\n",
        "3: jev[jev-1.99.0].choice.max_ece: -1 is outside the allowed range [0, 1]",
    ),
    "top level not a mapping": (
        "- jev\n- semif\n",
        "1: expected a mapping for the top level (model names), got a list",
    ),
    "model section not a mapping": (
        "jev: 3\n",
        "1: jev: expected a mapping for model 'jev', got '3' (an integer)",
    ),
    "YAML merge key": (
        "base: &b\n  noul: {min_mean_ovl: 0.9}\njev:\n  <<: *b\n",
        "4: jev.<<: YAML merge keys (<<) are not supported; use an alias (*name) for a whole section",
    ),
    "YAML syntax error": (
        "jev:\n  noul:\n    min_mean_ovl: [0.9\n  choice: {}\n",
        "4: not valid YAML: while parsing a flow sequence expected ',' or ']', but got ':'",
    ),
    "tab indentation": (
        "jev:\n\tnoul: {}\n",
        "2: not valid YAML: while scanning for the next token found character '\\t' that cannot start any token",
    ),
    # Alias bombs and tags: every one said in words, never an internal repr or a traceback (issue 20).
    "alias bomb as a limit": (
        "jev:\n  noul: {min_mean_ovl: &a [*a, *a]}\n",
        "2: jev.noul.min_mean_ovl: expected a number, got a list",
    ),
    "alias to a mapping as a limit": (
        "jev:\n  noul: &n {min_mean_ovl: 0.9}\n  score: {min_mean_ovl: *n}\n",
        "2: jev.score.min_mean_ovl: expected a number, got a mapping",  # the line of what the alias names
    ),
    "alias bomb in the primitives list": (
        "jev:\n  regression:\n    primitives: &p [*p, noul]\n",
        "3: jev.regression.primitives: expected primitive names, found a list in the list",
    ),
    "mapping in the primitives list": (
        "jev:\n  regression:\n    primitives: [{noul: 1}]\n",
        "3: jev.regression.primitives: expected primitive names, found a mapping in the list",
    ),
    "a list as a key": (
        "jev:\n  ? [noul]\n  : {min_mean_ovl: 0.9}\n",
        "2: jev: keys must be text, found a list as a key",
    ),
    "unsupported tag as a limit": (
        "jev:\n  noul: {min_mean_ovl: !custom 0.9}\n",
        "2: jev.noul.min_mean_ovl: expected a number, got '0.9' (with the YAML tag !custom, which is not supported here)",
    ),
    "python tag as a limit": (
        "jev:\n  noul: {min_mean_ovl: !!python/object/apply:os.getpid []}\n",
        "2: jev.noul.min_mean_ovl: expected a number, got a list",
    ),
    "invalid boolean": (
        "jev:\n  uncertainty: {require_lambda_positive: !!bool maybe}\n",
        "2: jev.uncertainty.require_lambda_positive: expected true or false, got 'maybe' (not a valid !!bool)",
    ),
    "invalid date": (
        "jev:\n  noul: {min_mean_ovl: !!timestamp soon}\n",
        "2: jev.noul.min_mean_ovl: expected a number, got 'soon' (not a valid !!timestamp)",
    ),
    "a set as a limit": (
        "jev:\n  noul: {min_mean_ovl: !!set {0.9}}\n",
        "2: jev.noul.min_mean_ovl: expected a number, got a set",
    ),
    "model name typo": (
        "jve:\n  noul: {min_mean_ovl: 0.9}\n",
        "1: jve: this run's model is 'jev', which has no section; is 'jve' a typo of 'jev'? (models in the file: jve)",
    ),
}


@pytest.mark.parametrize("text, expected", MISTAKES.values(), ids=MISTAKES.keys())
def test_every_mistake_names_file_line_path_and_allowed_keys(tmp_path: Path, text: str, expected: str) -> None:
    assert error_of(tmp_path, text) == expected
    assert " object at 0x" not in expected and "tag:yaml.org" not in expected


def test_unknown_model_against_the_registered_adapters(tmp_path: Path) -> None:
    message = error_of(tmp_path, "jev: {}\nsemiff: {}\n", known_models=["jev", "semif", "systemone"])
    assert message == (
        "2: semiff: unknown key 'semiff'; did you mean 'semif'? Allowed keys: jev, semif, systemone "
        "(the top level names models; these are the known ones)."
    )


def test_missing_file_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ThresholdsError, match=r"nothere\.yaml: cannot read the thresholds file: No such file"):
        load_thresholds(tmp_path / "nothere.yaml", "jev")


def test_model_without_a_section_gets_no_gates_and_a_notice(tmp_path: Path) -> None:
    t = load_text(tmp_path, "jev:\n  noul: {min_mean_ovl: 0.9}\n", model="semif")
    assert t.gates == () and t.layers == ()
    assert t.notice == "no section for model 'semif' (models in the file: jev); no threshold gates apply"
    assert evaluate(t, {}) == []


def test_an_empty_file_is_an_error_and_null_sections_mean_no_gates(tmp_path: Path) -> None:
    with pytest.raises(ThresholdsError, match=r"the file is empty \(or only comments\), so it would gate nothing"):
        load_text(tmp_path, "# nothing yet\n")
    t = load_text(tmp_path, "jev:\nsemif:\n  noul:\n  choice: {}\n", model="semif")
    assert t.gates == () and t.layers == ("semif",)


# ============================================================================================ versions

BASE = """\
jev:
  noul: {min_mean_ovl: 0.90, max_mean_pairwise_tv: 0.06}
  choice: {min_mean_ovl: 0.74, max_ece: 0.25}
  uncertainty: {require_lambda_positive: true, alpha: 0.01}
  decisions: {error_cost: 100, deferral_cost: 45}
  regression: {max_drop_mean_ovl: 0.02, primitives: [noul, choice], choice: {max_drop_mean_ovl: 0.03}}
"""


def limits(t: Thresholds) -> dict[str, float]:
    return {g.name: g.limit for g in t.gates}


def test_version_overrides_merge_leaf_by_leaf(tmp_path: Path) -> None:
    text = BASE + (
        "  jev-1.14.0:\n"
        "    choice: {min_mean_ovl: 0.78, max_ece: null}\n"  # replace one gate, remove another
        "    score: {min_mean_ovl: 0.88}\n"  # add a section
        "    uncertainty: {require_lambda_zero: true}\n"  # the lambda requirement is one choice
        "    decisions: {deferral_cost: 30}\n"
        "    regression: {primitives: [score], choice: null}\n"
    )
    base = load_text(tmp_path, text, version="jev-1.13.0")
    assert base.layers == ("jev",) and base.versions == ("jev-1.14.0",)
    assert limits(base) == {
        "noul.min_mean_ovl": 0.90,
        "noul.max_mean_pairwise_tv": 0.06,
        "choice.min_mean_ovl": 0.74,
        "choice.max_ece": 0.25,
        "uncertainty.require_lambda_positive": 0.01,
    }
    new = load_text(tmp_path, text, version="jev-1.14.0")
    assert new.layers == ("jev", "jev[jev-1.14.0]")
    assert limits(new) == {
        "noul.min_mean_ovl": 0.90,  # inherited
        "noul.max_mean_pairwise_tv": 0.06,
        "choice.min_mean_ovl": 0.78,  # replaced; max_ece removed by null
        "score.min_mean_ovl": 0.88,
        "uncertainty.require_lambda_zero": 0.01,  # flag replaced, alpha inherited
    }
    assert new.decisions == {"error_cost": 100, "deferral_cost": 30}
    assert new.analysis_options() == {"error_cost": 100, "defer_cost": 30}
    assert base.regression.primitives == ("noul", "choice") and base.regression.drop["choice"] == 0.03
    assert new.regression.primitives == ("score",) and new.regression.drop["choice"] == 0.02


def test_section_set_to_null_in_a_version_removes_it(tmp_path: Path) -> None:
    t = load_text(tmp_path, BASE + "  jev-1.14.0:\n    noul: null\n    uncertainty: null\n")
    assert set(limits(t)) == {"choice.min_mean_ovl", "choice.max_ece"}


def test_version_key_that_is_not_a_section_typo_is_a_version(tmp_path: Path) -> None:
    t = load_text(
        tmp_path, "systemone:\n  jev-latest:\n    noul: {min_mean_ovl: 0.5}\n", model="systemone", version="jev-latest"
    )
    assert limits(t) == {"noul.min_mean_ovl": 0.5}


def test_version_overrides_are_validated_after_merging(tmp_path: Path) -> None:
    message = error_of(tmp_path, BASE + "  jev-1.14.0:\n    regression: {fail_drop_mean_ovl: 0.025}\n")
    assert message == (
        "8: jev[jev-1.14.0].regression.fail_drop_mean_ovl: 0.025 exceeds max_drop_mean_ovl 0.02 for noul "
        "(for jev-1.14.0) (set by jev.regression.max_drop_mean_ovl on line 6); the drop that fails must not "
        "exceed the drop that passes"
    )


def test_regression_defaults(tmp_path: Path) -> None:
    t = load_text(tmp_path, "jev:\n  noul: {min_mean_ovl: 0.9}\n")
    assert t.regression == UpgradeConfig()
    assert t.regression.fail_drop == {"noul": 0.01, "choice": 0.01, "score": 0.01}
    t = load_text(tmp_path, "jev:\n  regression: {max_drop_mean_ovl: 0.04, score: {max_drop_mean_ovl: 0.01}}\n")
    assert t.regression.drop == {"noul": 0.04, "choice": 0.04, "score": 0.01}
    assert t.regression.fail_drop == {"noul": 0.02, "choice": 0.02, "score": 0.005}  # δ/2 by default


# ============================================================================================ evaluate


def published_items(swap_shift: float | None = None) -> list[dict[str, Any]]:
    """The per-rendering inputs the bundled cassettes replay (the paper's published Jev outputs); with
    swap_shift, a swapped Choice of P(True) − swap_shift is added to every rendering."""
    items = []
    with PUBLISHED.open(newline="") as handle:
        for row in csv.DictReader(handle):
            sample: dict[str, Any] = {
                "noul": float(row["p_noul"]),
                "choice": float(row["p_choice"]),
                "score": [float(row[f"q_{j}"]) for j in range(10)],
            }
            if swap_shift is not None:
                sample["choice_swapped"] = min(max(float(row["p_choice"]) - swap_shift, 0.0), 1.0)
            items.append(
                {
                    "instance_id": row["instance_id"],
                    "latent_instance_id": row["latent_instance_id"],
                    "family": row["family"],
                    "representation": row["representation"],
                    "p_star": float(row["p_star"]),
                    "samples": [sample],
                }
            )
    return items


def make_report(items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    from pytest_sys1cal.analysis import analyze

    return {
        "schema": "sys1cal-report/1",
        "model": {"name": "jev", "version": "jev-1.13.0", "source": "reconstructed"},
        "dataset": {"name": "sys1cal-v1", "sha256": "a" * 64},
        "repeats": 1,
        "seed": 0,
        **analyze(items, seed=0, bootstrap=0),
        "gates": [],
        **extra,
    }


@pytest.fixture(scope="module")
def jev_report() -> dict[str, Any]:
    return make_report(published_items())


@pytest.fixture(scope="module")
def bundled() -> Thresholds:
    return load_thresholds(ROOT / "thresholds.yaml", "jev", "jev-1.13.0")


@pytest.fixture
def recorded() -> Thresholds:
    """The gates of a recorded Jev version (any but the reconstructed jev-1.13.0): option-order gates too."""
    return load_thresholds(ROOT / "thresholds.yaml", "jev", "jev-1.14.0")


def test_bundled_replay_passes_every_measured_gate(jev_report: dict[str, Any], bundled: Thresholds) -> None:
    p = jev_report["primitives"]
    assert [round(p[k]["mean_ovl"], 3) for k in PRIMITIVES] == [0.918, 0.764, 0.886]
    rows = evaluate(bundled, jev_report)
    verdicts = {row["name"]: row["verdict"] for row in rows}
    assert not [r for r in rows if r["verdict"] == "FAILED"], [
        r["explanation"] for r in rows if r["verdict"] == "FAILED"
    ]
    # The reconstructed cassettes ask no swapped Choice, and their version's thresholds do not ask for it:
    # every gate in force is measured.
    assert "not measured" not in verdicts.values()
    assert len(rows) == 19 and sum(v == "passed" for v in verdicts.values()) == 19


def test_rows_have_the_report_shape(jev_report: dict[str, Any], bundled: Thresholds) -> None:
    for row in evaluate(bundled, jev_report):
        assert set(row) == {"name", "metric", "observed", "limit", "passed", "verdict", "explanation"}
        assert row["passed"] is {"passed": True, "FAILED": False, "not measured": None}[row["verdict"]]
        json.dumps(row, allow_nan=False)


def measured_swap(report: dict[str, Any]) -> dict[str, Any]:
    """The real report with a benign measured option_swap block, so every configured gate is measured."""
    report = copy.deepcopy(report)
    report["option_swap"] = {"n": 365, "mean_shift": 0.01, "first_position_rate": 0.51, "p_value": 0.3}
    return report


def violate(report: dict[str, Any], name: str, limit: float) -> None:
    """Move exactly the metric behind gate `name` just past its limit."""
    prim, key = name.split(".")
    if name == "uncertainty.require_lambda_positive":
        report["uncertainty"]["test"]["p_value"] = 0.2
    elif key == "max_swap_shift":
        report["option_swap"]["mean_shift"] = -(limit + 0.01)  # the sign does not matter
    elif key == "max_first_position_bias":
        report["option_swap"]["first_position_rate"] = 0.5 + limit + 0.01
    else:
        block, field = {
            "min_mean_ovl": ("primitives", "mean_ovl"),
            "min_median_ovl": ("primitives", "median_ovl"),
            "max_mean_pairwise_tv": ("representation_sensitivity", "mean_pairwise_tv"),
            "max_mean_max_tv": ("representation_sensitivity", "mean_max_tv"),
            "max_ece": ("calibration", "ece"),
            "max_brier": ("calibration", "brier"),
        }[key]
        report[block][prim][field] = limit - 0.001 if key.startswith("min_") else limit + 0.001


def test_each_gate_fires_alone(jev_report: dict[str, Any], recorded: Thresholds) -> None:
    clean = measured_swap(jev_report)
    assert all(row["verdict"] == "passed" for row in evaluate(recorded, clean))
    for gate in recorded.gates:
        crafted = copy.deepcopy(clean)
        violate(crafted, gate.name, gate.limit)
        rows = evaluate(recorded, crafted)
        failed = [row["name"] for row in rows if row["verdict"] != "passed"]
        assert failed == [gate.name], f"violating {gate.name} failed {failed}"
        row = next(row for row in rows if row["name"] == gate.name)
        assert row["passed"] is False and row["limit"] == gate.limit


def test_limits_are_inclusive(jev_report: dict[str, Any], recorded: Thresholds) -> None:
    report = measured_swap(jev_report)
    report["primitives"]["choice"]["mean_ovl"] = 0.735
    report["representation_sensitivity"]["noul"]["mean_pairwise_tv"] = 0.055
    rows = {row["name"]: row for row in evaluate(recorded, report)}
    assert rows["choice.min_mean_ovl"]["verdict"] == "passed"
    assert rows["noul.max_mean_pairwise_tv"]["verdict"] == "passed"


def test_explanations_read_as_sentences(jev_report: dict[str, Any], recorded: Thresholds) -> None:
    report = measured_swap(jev_report)
    report["primitives"]["choice"]["mean_ovl"] = 0.7349
    report["representation_sensitivity"]["score"]["mean_pairwise_tv"] = 0.0912
    report["option_swap"]["mean_shift"] = -0.071
    report["option_swap"]["first_position_rate"] = 0.62
    rows = {row["name"]: row for row in evaluate(recorded, report)}
    assert rows["choice.min_mean_ovl"]["explanation"] == "Choice mean OVL 0.7349 is below the floor 0.735."
    assert rows["noul.min_mean_ovl"]["explanation"] == "Noul mean OVL 0.918 meets the floor 0.9."
    assert rows["score.max_mean_pairwise_tv"]["explanation"] == (
        "Score mean pairwise TV between renderings 0.0912 exceeds the ceiling 0.08."
    )
    assert rows["choice.max_swap_shift"]["observed"] == pytest.approx(0.071)
    assert rows["choice.max_swap_shift"]["metric"] == "abs(option_swap.mean_shift)"
    assert rows["choice.max_swap_shift"]["explanation"] == (
        "Choice option-swap shift |mean_shift| 0.071 exceeds the ceiling 0.05. "
        "P(True) is higher when True is shown first (mean shift -0.071)."
    )
    assert rows["choice.max_first_position_bias"]["explanation"] == (
        "Choice first-position bias |first_position_rate − 0.5| 0.12 exceeds the ceiling 0.05. "
        "The option shown first wins 62.0% of the time (0.5 is order-blind)."
    )
    report["uncertainty"]["test"]["p_value"] = 0.21
    row = next(r for r in evaluate(recorded, report) if r["name"] == "uncertainty.require_lambda_positive")
    assert row["explanation"] == (
        "The one-sided test of λ = 0 does not reject it (p = 0.21 ≥ α = 0.01), but this gate requires λ > 0."
    )


def test_require_lambda_zero(tmp_path: Path, jev_report: dict[str, Any]) -> None:
    t = load_text(tmp_path, "jev:\n  uncertainty: {require_lambda_zero: true}\n")
    (row,) = evaluate(t, jev_report)  # Jev: p = 1e-10, λ > 0 is evident
    assert (row["name"], row["verdict"], row["limit"]) == ("uncertainty.require_lambda_zero", "FAILED", 0.05)
    report = copy.deepcopy(jev_report)
    report["uncertainty"]["test"]["p_value"] = 0.4
    assert evaluate(t, report)[0]["verdict"] == "passed"


def test_not_measured_is_never_passed(jev_report: dict[str, Any], recorded: Thresholds) -> None:
    report = copy.deepcopy(jev_report)
    del report["calibration"]  # e.g. a report from an older version
    report["representation_sensitivity"]["noul"] = {
        "mean_pairwise_tv": None,
        "mean_max_tv": None,
        "latent_problems": 0,
        "reason": "not enough data: no latent problem has 2 measured renderings",
    }
    report["primitives"]["score"]["mean_ovl"] = None
    report["uncertainty"]["test"].update(p_value=None, reason="not enough data: 1 latent problem")
    rows = {row["name"]: row for row in evaluate(recorded, report)}
    expected = {
        "noul.max_ece": "the report has no calibration",
        "choice.max_brier": "the report has no calibration",
        "noul.max_mean_pairwise_tv": "not enough data: no latent problem has 2 measured renderings",
        "score.min_mean_ovl": "primitives.score.mean_ovl is null",
        "choice.max_swap_shift": "no rendering was asked the swapped Choice, so option_swap is null",
    }
    for name, reason in expected.items():
        row = rows[name]
        assert (row["verdict"], row["passed"], row["observed"]) == ("not measured", None, None), name
        assert row["explanation"].endswith(f"was not measured in this run ({reason})."), row["explanation"]
    assert rows["uncertainty.require_lambda_positive"]["verdict"] == "not measured"
    assert rows["uncertainty.require_lambda_positive"]["explanation"] == (
        "The test of λ = 0 could not be run (not enough data: 1 latent problem)."
    )
    assert rows["choice.min_mean_ovl"]["verdict"] == "passed"


def test_option_swap_gates_on_a_run_that_asked_both_orders(recorded: Thresholds) -> None:
    """End to end through analyze: swapped Choice answers make the swap gates measurable."""
    blind = {r["name"]: r for r in evaluate(recorded, make_report(published_items(swap_shift=0.0)))}
    assert blind["choice.max_swap_shift"]["verdict"] == "passed"
    assert blind["choice.max_swap_shift"]["observed"] == 0.0
    biased = {r["name"]: r for r in evaluate(recorded, make_report(published_items(swap_shift=0.1)))}
    assert biased["choice.max_swap_shift"]["verdict"] == "FAILED"
    assert biased["choice.max_swap_shift"]["observed"] == pytest.approx(0.1, abs=0.01)


# ============================================================================================ baseline errors


def test_baseline_on_another_dataset_is_an_error_naming_both_hashes(jev_report: dict[str, Any]) -> None:
    other = copy.deepcopy(jev_report)
    other["dataset"]["sha256"] = "b" * 64
    with pytest.raises(UpgradeError) as info:
        evaluate_upgrade(None, jev_report, other, 0, baseline_name="base.json")
    assert str(info.value) == (
        f"base.json was computed on dataset sha256 {'b' * 64}, this run on sha256 {'a' * 64}; a paired "
        "comparison needs the same renderings, so record the baseline on this dataset"
    )
    assert isinstance(info.value, InputError)  # a mistake in the user's input: exit status 4


def test_baseline_with_other_repeat_count_is_refused(jev_report: dict[str, Any]) -> None:
    other = copy.deepcopy(jev_report)
    for item in other["items"]:
        item["repeats"] = 10
    with pytest.raises(
        UpgradeError, match=r"^base\.json: the baseline averages 10 repeats per rendering and this run 1: "
    ):
        evaluate_upgrade(None, jev_report, other, 0, baseline_name="base.json")


def test_baseline_not_a_report(tmp_path: Path, jev_report: dict[str, Any]) -> None:
    with pytest.raises(UpgradeError, match=r"^base\.json: not a sys1cal-report/1 report \(schema: None\)$"):
        evaluate_upgrade(None, jev_report, {"items": []}, 0, baseline_name="base.json")
    bad = tmp_path / "base.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(UpgradeError, match=r"^baseline .*base\.json: not a JSON file"):
        load_baseline(bad)
    bad.write_text('{"schema": "something-else"}', encoding="utf-8")
    with pytest.raises(UpgradeError, match=r"^baseline .*base\.json: not a sys1cal report \(schema 'something-else'"):
        load_baseline(bad)


def test_regression_rows_against_itself(jev_report: dict[str, Any], bundled: Thresholds) -> None:
    rows = [r.to_json() for r in evaluate_upgrade(bundled, jev_report, copy.deepcopy(jev_report), 0)]
    assert [r["name"] for r in rows] == [f"regression.{p}.mean_ovl" for p in PRIMITIVES]
    for row in rows:
        assert row["verdict"] == "passed" and row["passed"] is True and row["observed"] == 0.0
        assert row["limit"] == -0.02
        assert row["baseline"] == row["new"]
        assert {"name", "metric", "observed", "limit", "passed", "verdict", "explanation"} <= set(row)
        json.dumps(row, allow_nan=False)
    assert rows[1]["explanation"] == (
        "Choice mean OVL 0.764 vs baseline 0.764 on 365 paired renderings: Δ = +0.0000; its one-sided 97.5% "
        "lower bound +0.0000 is above -0.02, so any drop is within the margin 0.02."
    )


def test_loading_thresholds_imports_neither_pytest_nor_numpy() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from pytest_sys1cal.gates.config import load_thresholds; "
        f"load_thresholds({str(ROOT / 'thresholds.yaml')!r}, 'jev'); "
        "print(sorted(m for m in ('numpy', 'scipy', 'pytest') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_sequential_design_is_read_with_the_line_that_set_it(tmp_path: Path) -> None:
    thresholds = load_text(tmp_path, "jev:\n  regression:\n    sequential: {spending: pocock, rounds: 4}\n")
    config = thresholds.regression
    assert (config.spending, config.rounds) == ("pocock", 4)
    assert config.set_by["sequential.rounds"] == ("jev.regression.sequential.rounds", 3)
    assert (load_text(tmp_path, "jev: {}\n").regression.spending, UpgradeConfig().rounds) == ("obrien-fleming", 10)
