"""The Brier decomposition against p* (analysis/decomposition.py) against an independent computation: S(f) written
out, and the isotonic fit by a second PAV written here (merge the first adjacent violators, start again: slow,
plain, and another algorithm than the package's stack); the identity S = MCB − DSC + UNC on all four bundled
sets; DSC unmoved by a monotone distortion and gone when the answers are shuffled; intervals that are the
analysis re-run on resampled problems; a consistency band that holds a calibrated model and not a biased one."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from pytest_sys1cal.analysis.decomposition import decompose, statistics
from pytest_sys1cal.analysis.isotonic import Pooled
from pytest_sys1cal.analysis.stats import Clusters

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SETS = ("jev", "semif", "gemma", "typed-gguf")
COLUMNS = {"noul": "p_noul", "choice": "p_choice", "score": "mu_score"}


def report(name: str) -> dict:
    return json.loads((GOLDEN / f"{name}-report.json").read_text(encoding="utf-8"))


def slow_pav(y: list[float], w: list[float]) -> list[float]:
    """Isotonic least squares by pooling the first adjacent pair that violates, over and over (O(n²))."""
    blocks = [[wi * yi, wi, 1] for yi, wi in zip(y, w, strict=True)]  # [Σ w·y, Σ w, points]
    merged = True
    while merged:
        merged = False
        for k in range(len(blocks) - 1):
            if blocks[k][0] / blocks[k][1] > blocks[k + 1][0] / blocks[k + 1][1]:
                blocks[k] = [a + b for a, b in zip(blocks[k], blocks.pop(k + 1), strict=True)]
                merged = True
                break
    return [total / weight for total, weight, points in blocks for _ in range(points)]


def recalibrated(p: np.ndarray, p_star: np.ndarray) -> np.ndarray:
    """c(p̂) of each rendering: tied answers pooled into one point (their count, their mean p*), then slow_pav."""
    groups: dict[float, list[float]] = defaultdict(list)
    for answer, target in zip(p.tolist(), p_star.tolist(), strict=True):
        groups[answer].append(target)
    xs = sorted(groups)
    fitted = slow_pav([math.fsum(groups[x]) / len(groups[x]) for x in xs], [float(len(groups[x])) for x in xs])
    value = dict(zip(xs, fitted, strict=True))
    return np.array([value[answer] for answer in p.tolist()])


def expected_brier(f: np.ndarray, p_star: np.ndarray) -> float:
    """S(f) = mean (f − p*)² + mean p*(1 − p*)."""
    return float(np.mean((f - p_star) ** 2) + np.mean(p_star * (1 - p_star)))


def answered(data: dict, prim: str) -> tuple[np.ndarray, np.ndarray]:
    items = [item for item in data["items"] if item[COLUMNS[prim]] is not None]
    return np.array([i[COLUMNS[prim]] for i in items]), np.array([i["p_star"] for i in items])


@pytest.mark.parametrize("name", SETS)
def test_the_parts_are_an_independent_computations_and_add_up_to_1e_12(name: str) -> None:
    data = report(name)
    for prim, parts in data["decomposition"].items():
        p, p_star = answered(data, prim)
        c, m = recalibrated(p, p_star), float(np.mean(p_star))
        s_p, s_c, s_m = (expected_brier(f, p_star) for f in (p, c, np.full_like(p_star, m)))
        assert parts["score"] == pytest.approx(s_p, abs=1e-12)
        assert parts["mcb"] == pytest.approx(s_p - s_c, abs=1e-12)
        assert parts["dsc"] == pytest.approx(s_m - s_c, abs=1e-12)
        assert parts["unc"] == pytest.approx(s_m, abs=1e-12)
        assert abs(parts["score"] - (parts["mcb"] - parts["dsc"] + parts["unc"])) <= 1e-12
        assert parts["distinct_answers"] == np.unique(p).size
        # the bin-free ECE is the curve's own L1 distance, mean |p̂ − c(p̂)|
        assert data["reliability"][prim]["ece"] == pytest.approx(float(np.mean(np.abs(p - c))), abs=1e-12)


def test_the_bundled_jev_set_reads_as_the_issue_says() -> None:
    noul = report("jev")["decomposition"]["noul"]
    assert round(noul["dsc"], 3) == 0.080 and round(noul["mcb"], 3) == 0.006
    assert noul["mcb_ci"][0] < noul["mcb"] < noul["mcb_ci"][1] and noul["dsc_ci"][0] < noul["dsc"] < noul["dsc_ci"][1]


def parts_of(p: np.ndarray, p_star: np.ndarray, latent: np.ndarray, bootstrap: int = 0) -> dict:
    return decompose(p, p_star, latent, seed=0, bootstrap=bootstrap)[0]


def jev_noul() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = report("jev")
    p, p_star = answered(data, "noul")
    return p, p_star, np.array([i["latent_instance_id"] for i in data["items"]])


def test_a_monotone_distortion_keeps_dsc_and_raises_mcb() -> None:
    p, p_star, latent = jev_noul()
    before = parts_of(p, p_star, latent)
    with np.errstate(divide="ignore"):
        distorted = 1 / (1 + np.exp(-(0.6 * np.log(p / (1 - p)) + 0.7)))
    after = parts_of(distorted, p_star, latent)
    assert after["dsc"] == pytest.approx(before["dsc"], abs=1e-12)
    assert after["mcb"] > before["mcb"] + 0.03


def test_answers_shuffled_across_problems_lose_their_discrimination() -> None:
    p, p_star, latent = jev_noul()
    shuffled = p[np.random.default_rng(1).permutation(p.size)]
    assert parts_of(shuffled, p_star, latent)["dsc"] < 0.01 < parts_of(p, p_star, latent)["dsc"]


def test_each_resample_is_the_decomposition_of_the_resampled_problems() -> None:
    """Row k of the weighted statistics equals the decomposition of problems drawn with replacement, each copy a
    problem of its own: what a bootstrap over latent problems means."""
    p, p_star, latent = jev_noul()
    clusters = Clusters.of(latent)
    counts = clusters.resample_counts(np.random.default_rng(5), 4)
    weighted = statistics(Pooled.of(p), p, p_star, counts, clusters.codes)[0]
    for row, drawn in enumerate(counts.astype(int)):
        copies = np.repeat(np.arange(p.size), drawn[clusters.codes])
        again = parts_of(p[copies], p_star[copies], latent[copies])
        for key in ("score", "mcb", "dsc", "unc"):
            assert weighted[key][row] == pytest.approx(again[key], abs=1e-12), (row, key)


def synthetic(bias: bool, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """120 problems × 3 renderings; p* scattered around the answer (calibrated: E[p* | p̂] = p̂) or around p̂²."""
    rng = np.random.default_rng(seed)
    answer = np.repeat(rng.uniform(0.1, 0.9, 120), 3) + rng.normal(0, 0.02, 360)
    truth = (answer**2 if bias else answer) + rng.normal(0, 0.05, 360)
    return np.clip(answer, 0, 1), np.clip(truth, 0, 1), np.repeat(np.arange(120).astype(str), 3)


def inside_band(p: np.ndarray, p_star: np.ndarray, latent: np.ndarray) -> float:
    curve = decompose(p, p_star, latent, seed=0, bootstrap=300)[1]
    band = curve["band"]
    fit = np.interp(band["x"], curve["curve"]["x"], curve["curve"]["y"])
    return float(np.mean((np.array(band["lower"]) <= fit) & (fit <= np.array(band["upper"]))))


def test_the_consistency_band_holds_a_calibrated_curve_and_not_a_biased_one() -> None:
    """Pointwise 90% band: a calibrated model's curve inside it at about 90% of the answers (docs/statistics.md
    §8.2: 0.90 over 30 datasets), a biased model's nearly nowhere."""
    calibrated = [inside_band(*synthetic(bias=False, seed=seed)) for seed in range(8)]
    biased = [inside_band(*synthetic(bias=True, seed=seed)) for seed in range(4)]
    assert np.mean(calibrated) >= 0.82, calibrated
    assert max(biased) <= 0.15, biased


def test_no_answers_and_no_bootstrap_say_why() -> None:
    empty = decompose(np.empty(0), np.empty(0), np.empty(0, dtype=str), seed=0, bootstrap=10)
    assert empty[0]["mcb"] is None and empty[0]["reason"] == "not enough data: no answers"
    parts, curve = decompose(*jev_noul(), seed=0, bootstrap=0)
    assert parts["mcb"] is not None and "mcb_ci" not in parts and parts["reason"] == "bootstrap skipped (bootstrap=0)"
    assert curve["band"] is None and curve["ece_ci"] is None
