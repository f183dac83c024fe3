"""The per-call reading (issue 37, docs/statistics.md §1.6): each primitive's metrics over single calls beside the
repeat mean, computed by hand on small inputs, checked against its identities on noisy ones, equal to the repeat
mean bit for bit with one call per rendering (the bundled engines), and not measured where the samples are means."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_sys1cal.analysis import analyze
from pytest_sys1cal.report.breakdown_tables import by_family_table
from pytest_sys1cal.report.paper_tables import per_call_table, table1
from tests.analysis.conftest import score_with_mean
from tests.reports import golden

PRIMITIVES = ("noul", "choice", "score")


def rendering(latent: str, name: str, p_star: float, calls: list[dict]) -> dict:
    return {
        "instance_id": f"{latent}__repr_{name}",
        "latent_instance_id": latent,
        "family": latent.split("__")[0],
        "representation": name,
        "p_star": p_star,
        "samples": calls,
    }


def test_two_calls_either_side_of_p_star_are_exact_as_a_mean_and_0_3_off_per_call() -> None:
    """p* = 0.5 and calls 0.2, 0.8: the mean is exact (OVL 1, Brier 0, ECE 0), while each call is 0.3 off (OVL
    0.7, Brier 0.09); per call the two calls fall in bins 3 and 12, each weighing 1/2: ECE (0.15 + 0.15) / 1."""
    item = rendering("explicit__1", "prose", 0.5, [{"noul": 0.2}, {"noul": 0.8}])
    result = analyze([item], bootstrap=0)
    mean, call = result["primitives"]["noul"], result["primitives"]["noul"]["per_call"]
    assert (mean["mean_ovl"], mean["median_ovl"]) == (1.0, 1.0)
    assert call == {
        "calls": 2,
        "mean_tv": pytest.approx(0.3),
        "mean_ovl": pytest.approx(0.7),
        "median_ovl": pytest.approx(0.7),
    }
    calibration = result["calibration"]["noul"]
    assert (calibration["brier"], calibration["ece"]) == (0.0, 0.0)
    assert calibration["per_call"] == {"ece": pytest.approx(0.3), "brier": pytest.approx(0.09)}
    assert result["calls"] == {"measured": True, "calls": 2}


def test_renderings_weigh_alike_whatever_their_number_of_calls() -> None:
    """A rendering with one call (0.1 off) and one with four (0.3 off each): per-call mean TV (0.1 + 0.3) / 2, not
    the mean over the five calls (0.26); the median over the two renderings' OVLs."""
    items = [
        rendering("explicit__1", "prose", 0.5, [{"choice": 0.6}]),
        rendering("explicit__2", "prose", 0.5, [{"choice": 0.8}, {"choice": 0.2}, {"choice": 0.8}, {"choice": 0.2}]),
    ]
    call = analyze(items, bootstrap=0)["primitives"]["choice"]["per_call"]
    assert call["calls"] == 5
    assert call["mean_tv"] == pytest.approx(0.2) and call["median_ovl"] == pytest.approx(0.8)


def test_score_per_call_is_the_expectation_of_each_calls_own_distribution() -> None:
    items = [rendering("bayes__1", "table", 0.3, [{"score": score_with_mean(0.1)}, {"score": score_with_mean(0.5)}])]
    result = analyze(items, bootstrap=0)
    assert result["primitives"]["score"]["mean_ovl"] == pytest.approx(1.0)  # the mean distribution's μ_S is 0.3
    assert result["primitives"]["score"]["per_call"]["mean_ovl"] == pytest.approx(0.8)


def noisy_items(seed: int, calls: int = 10) -> list[dict]:
    """40 renderings of 20 problems, each answered σ(logit p* + 1 + ε) with logit noise ε ~ N(0, 1.5²) per call."""
    truth, noise = np.random.default_rng(seed), np.random.default_rng(seed + 1000)  # the same p* whatever the calls
    items = []
    for problem in range(20):
        p_star = float(truth.uniform(0.05, 0.95))
        for name in ("prose", "table"):
            logits = math.log(p_star / (1 - p_star)) + 1 + noise.normal(0, 1.5, size=(calls, 2))
            answers = 1 / (1 + np.exp(-logits))
            samples = [{"noul": float(a), "choice": float(b)} for a, b in answers]
            items.append(rendering(f"frequency__{problem}", name, p_star, samples))
    return items


def test_the_mean_is_never_further_from_p_star_and_brier_splits_into_the_means_plus_the_call_variance() -> None:
    items = noisy_items(seed=4)
    result = analyze(items, bootstrap=0)
    for prim in ("noul", "choice"):
        row, call = result["primitives"][prim], result["primitives"][prim]["per_call"]
        assert call["mean_ovl"] < row["mean_ovl"] and call["median_ovl"] <= row["median_ovl"]
        within = np.mean([np.var([s[prim] for s in item["samples"]]) for item in items])  # ddof 0: around the mean
        calibration = result["calibration"][prim]
        assert calibration["per_call"]["brier"] == pytest.approx(calibration["brier"] + within, rel=1e-12)
    for item in result["items"]:  # rendering by rendering (the triangle inequality)
        tv_mean = abs(item["p_noul"] - item["p_star"])
        tv_call = np.mean([abs(s["noul"] - item["p_star"]) for s in item["samples"]])
        assert tv_mean <= tv_call + 1e-15


def unbiased_items(calls: int) -> list[dict]:
    """40 renderings answered p* + ε, ε ~ N(0, 0.1²) per call (p* in [0.3, 0.7]: never clipped, so E p = p*)."""
    truth, noise = np.random.default_rng(8), np.random.default_rng(9)
    p_stars = truth.uniform(0.3, 0.7, size=40)
    return [
        rendering(
            f"compound__{i // 2}", f"r{i % 2}", float(p), [{"noul": float(p + e)} for e in noise.normal(0, 0.1, calls)]
        )
        for i, p in enumerate(p_stars)
    ]


def test_the_per_call_reading_does_not_depend_on_the_number_of_calls_the_mean_reading_does() -> None:
    """The same noisy but unbiased model asked 3 and 30 times: per call, the same expectation (the difference is
    noise); the mean's OVL climbs with the calls averaged (|p̄ − p*| shrinks as σ/√r)."""
    few, many = analyze(unbiased_items(calls=3), bootstrap=0), analyze(unbiased_items(calls=30), bootstrap=0)
    call_few, call_many = (
        few["primitives"]["noul"]["per_call"]["mean_ovl"],
        many["primitives"]["noul"]["per_call"]["mean_ovl"],
    )
    assert abs(call_few - call_many) < 0.02
    assert many["primitives"]["noul"]["mean_ovl"] - few["primitives"]["noul"]["mean_ovl"] > 0.02


@pytest.mark.parametrize("name", ["semif", "gemma", "typed-gguf"])
def test_with_one_call_per_rendering_both_readings_are_the_same_numbers_bit_for_bit(name: str) -> None:
    report = golden(name)
    assert report["calls"] == {"measured": True, "calls": 365}
    for prim in PRIMITIVES:
        row, call = report["primitives"][prim], report["primitives"][prim]["per_call"]
        assert (call["mean_tv"], call["mean_ovl"], call["median_ovl"]) == (
            row["mean_tv"],
            row["mean_ovl"],
            row["median_ovl"],
        )
        calibration = report["calibration"][prim]
        assert calibration["per_call"] == {"ece": calibration["ece"], "brier": calibration["brier"]}
        for group in report["by_family"].values():
            cell = group["primitives"][prim]
            assert cell["per_call"] == {"mean_tv": cell["mean_tv"], "mean_ovl": cell["mean_ovl"]}
    assert per_call_table(report) is None  # one table: Table 1, with a note saying so
    assert "the per-call reading (what one request gets) is these same values" in table1(report).notes[-1]


def test_samples_that_are_means_have_no_per_call_reading_never_the_means_read_as_calls() -> None:
    report = golden("jev")  # rebuilt from published 10-call means: repeats_per_answer 10
    reason = report["calls"]["reason"]
    assert report["calls"]["measured"] is False and "the mean of 10 calls" in reason
    for prim in PRIMITIVES:
        assert report["primitives"][prim]["per_call"] == {
            "calls": 0, "mean_tv": None, "mean_ovl": None, "median_ovl": None, "reason": reason,
        }  # fmt: skip
        assert report["calibration"][prim]["per_call"] == {"ece": None, "brier": None, "reason": reason}
    assert table1(report).notes[-1] == f"Per call: not measured: {reason}."
    # The same items said to hold single calls would give numbers: it is the manifest's word that withholds them.
    assert analyze(report["items"], bootstrap=0)["primitives"]["noul"]["per_call"]["mean_ovl"] is not None
    assert analyze(report["items"], bootstrap=0, repeats_per_answer=10)["primitives"]["noul"]["per_call"]["calls"] == 0


def test_the_tables_show_the_per_call_reading_beside_the_mean_where_calls_differ() -> None:
    result = {**analyze(noisy_items(seed=6), bootstrap=0), "repeats": 10, "repeats_per_answer": 1}
    table = per_call_table(result)
    assert table is not None and table.title == "Per call beside the 10-call mean: what one request to the service gets"
    assert table.columns[:4] == ["primitive", "calls", "mean OVL: per call", "mean OVL: 10-call mean"]
    noul = table.rows[0]
    assert noul[:2] == ["Noul", "400"] and float(noul[2]) < float(noul[3])
    family = by_family_table(result)
    assert family is not None and "Noul OVL per call" in family.columns
    column = family.columns.index("Noul OVL per call")
    assert family.rows[-1][column] == f"{result['primitives']['noul']['per_call']['mean_ovl']:.3f}"
