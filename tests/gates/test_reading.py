"""thresholds.yaml's `reading` (docs/thresholds.md, "The reading"): read per model and version, every mistake one
line naming the file, line and key; the OVL, ECE and Brier gates read the per-call values under `reading: call`
(never the means read as calls: not measured on published means); the rule writes its limits from the same
per-call statistics the analysis reports."""

from __future__ import annotations

import pytest

from pytest_sys1cal.gates.config import parse_thresholds
from pytest_sys1cal.gates.evaluate import evaluate
from pytest_sys1cal.gates.schema import Reading, ThresholdsError
from pytest_sys1cal.gates.thresholds_rule import threshold_rule
from pytest_sys1cal.vocabulary import Verdict
from tests.analysis.test_compare_per_call import recording
from tests.reports import golden

FILE = """\
systemone:
  reading: call
  noul: {min_mean_ovl: 0.6, max_brier: 0.2, max_mean_pairwise_tv: 0.5}
  v2:
    reading: mean
  v3:
    reading: null
"""


def test_the_reading_is_the_models_unless_a_version_says_otherwise() -> None:
    assert parse_thresholds(FILE, "t.yaml", "systemone").reading == Reading("call", "systemone.reading", 2, "t.yaml")
    assert parse_thresholds(FILE, "t.yaml", "systemone", "v2").reading == Reading(
        "mean", "systemone[v2].reading", 5, "t.yaml"
    )
    assert parse_thresholds(FILE, "t.yaml", "systemone", "v3").reading.value == "call"  # null: the model's
    assert parse_thresholds(FILE, "t.yaml", "systemone", "v4").reading.value == "call"  # no block: inherited
    unset = parse_thresholds("systemone:\n  noul: {min_mean_ovl: 0.5}\n", "t.yaml", "systemone").reading
    assert unset == Reading(file="t.yaml") and unset.said() == "t.yaml sets no reading: the default, mean"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "systemone:\n  reading: calls\n",
            "t.yaml:2: systemone.reading: expected call or mean, got 'calls' (text): call reads each answer per call "
            "(what one request to the service gets), mean reads each rendering's mean over its calls (the paper's "
            "protocol)",
        ),
        (
            "systemone:\n  readng: call\n",
            "t.yaml:2: systemone.readng: unknown key 'readng'; did you mean 'reading'? Allowed keys: noul, choice, "
            "score, uncertainty, decisions, regression, reading, or a model version (e.g. 'jev-1.14.0') holding those "
            "sections.",
        ),
        (
            "systemone:\n  v2:\n    reading: [call]\n",
            "t.yaml:3: systemone[v2].reading: expected call or mean, got a list",
        ),
    ],
)
def test_a_wrong_reading_is_one_line_naming_the_file_line_and_key(text: str, message: str) -> None:
    with pytest.raises(ThresholdsError) as caught:
        parse_thresholds(text, "t.yaml", "systemone")
    assert str(caught.value).startswith(message)


def test_read_per_call_the_gates_read_the_per_call_values_and_say_so() -> None:
    report = recording(3, 10, noise=1.5)
    rows = {row.name: row for row in evaluate(parse_thresholds(FILE, "t.yaml", "systemone"), report)}
    ovl = rows["noul.min_mean_ovl"]
    assert ovl.metric == "primitives.noul.per_call.mean_ovl"
    assert ovl.observed == report["primitives"]["noul"]["per_call"]["mean_ovl"]
    assert ovl.explanation.startswith("Noul mean OVL per call ")
    assert rows["noul.max_brier"].observed == report["calibration"]["noul"]["per_call"]["brier"]
    # Table 6 reads the repeat means in either reading.
    assert (
        rows["noul.max_mean_pairwise_tv"].observed == report["representation_sensitivity"]["noul"]["mean_pairwise_tv"]
    )
    means = {row.name: row for row in evaluate(parse_thresholds(FILE, "t.yaml", "systemone", "v2"), report)}
    assert means["noul.min_mean_ovl"].observed == report["primitives"]["noul"]["mean_ovl"]
    assert means["noul.min_mean_ovl"].explanation.startswith("Noul mean OVL ")
    assert "per call" not in means["noul.min_mean_ovl"].explanation


def test_published_means_are_not_measured_per_call() -> None:
    row = evaluate(parse_thresholds(FILE, "t.yaml", "systemone"), golden("jev"))[0]
    assert (row.name, row.verdict, row.observed) == ("noul.min_mean_ovl", Verdict.NOT_MEASURED, None)
    assert (
        "Noul mean OVL per call was not measured in this run (each answer in these cassettes is the mean of 10 calls"
        in row.explanation
    )


def test_a_call_reading_of_means_is_refused_in_one_line_naming_the_key() -> None:
    reading = parse_thresholds(FILE, "t.yaml", "systemone").reading
    assert reading.refusal("cassettes/systemone/v1", 1) is None
    assert parse_thresholds(FILE, "t.yaml", "systemone", "v2").reading.refusal("x", 10) is None
    assert reading.refusal("cassettes/jev/jev-1.13.0", 10) == (
        "t.yaml:2 systemone.reading: call, but cassettes/jev/jev-1.13.0 holds 10-call means (each answer rebuilt from "
        "a published mean), not single calls, so nothing in it can be read per call: set reading: mean for this "
        'model or version (python -m pytest_sys1cal docs thresholds, "The reading"), or record the version afresh'
    )


def test_the_rule_read_per_call_measures_what_the_analysis_reports_per_call() -> None:
    report = recording(4, 10, noise=1.5)
    rule = threshold_rule(report["items"], resamples=50, repeat_resamples=20, reading="call")
    assert rule.reading == "call"
    measured = {(lim.primitive, lim.key): lim.value for lim in rule.limits}
    call, calibration = report["primitives"]["noul"]["per_call"], report["calibration"]["noul"]["per_call"]
    assert measured["noul", "min_mean_ovl"] == pytest.approx(call["mean_ovl"], abs=1e-12)
    assert measured["noul", "min_median_ovl"] == pytest.approx(call["median_ovl"], abs=1e-12)
    assert measured["noul", "max_brier"] == pytest.approx(calibration["brier"], abs=1e-12)
    assert measured["noul", "max_ece"] == pytest.approx(calibration["ece"], abs=1e-12)
    spread = report["representation_sensitivity"]["noul"]["mean_pairwise_tv"]
    assert measured["noul", "max_mean_pairwise_tv"] == pytest.approx(spread, abs=1e-12)
    means = {(lim.primitive, lim.key): lim.value for lim in threshold_rule(report["items"], resamples=50).limits}
    assert means["noul", "min_mean_ovl"] == pytest.approx(report["primitives"]["noul"]["mean_ovl"], abs=1e-12)
    # Repeat noise is measured from the calls themselves: every per-call limit has one.
    assert all(lim.repeat_se for lim in rule.limits if lim.primitive == "noul")
