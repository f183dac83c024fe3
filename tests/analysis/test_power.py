"""analysis/power.py: the sample-size formula against docs/power.md, the σ_w / between-item SD / ρ
estimators on synthetic reports with known values, a Monte Carlo check of a planned design, and the
`python -m pytest_sys1cal power` command end to end."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_sys1cal.analysis.power import PowerError, design_effect, detectable_drop, plan_power, sample_size
from pytest_sys1cal.analysis.power_estimates import estimate, intraclass_correlation, repeat_sd

LEVELS = np.arange(10) / 9

# ============================================================================================ the formula

# docs/power.md, "Renderings needed for δ = 0.02 (DEFF = 1)": (σ_Δ, σ_w) → n at r = 1, 3, 10, ∞.
DOC_TABLE = {
    (0.02, 0.05): (84, 32, 14, 7),
    (0.02, 0.10): (316, 110, 38, 7),
    (0.02, 0.20): (1243, 419, 130, 7),
    (0.05, 0.05): (116, 65, 47, 39),
    (0.05, 0.10): (348, 142, 70, 39),
    (0.05, 0.20): (1276, 451, 163, 39),
    (0.10, 0.05): (232, 181, 163, 155),
    (0.10, 0.10): (464, 258, 186, 155),
    (0.10, 0.20): (1392, 567, 279, 155),
}


@pytest.mark.parametrize(("sigmas", "expected"), DOC_TABLE.items(), ids=[f"{a}-{b}" for a, b in DOC_TABLE])
def test_sample_size_reproduces_the_statistics_doc_table(sigmas: tuple[float, float], expected: tuple) -> None:
    sigma_delta, sigma_w = sigmas
    got = tuple(sample_size(0.02, sigma_delta, sigma_w, r) for r in (1, 3, 10, math.inf))
    assert got == expected


def test_the_doc_headline_cell_and_the_design_effect() -> None:
    assert sample_size(0.02, 0.1, 0.1, 10) == 186
    assert design_effect(5, 0.3) == pytest.approx(2.2)  # the doc's example
    # DEFF multiplies n: 185.5 × 2.2 = 408.05 → 409.
    assert sample_size(0.02, 0.1, 0.1, 10, deff=2.2) == 409
    # Holm over 3 gates replaces z_{1−α} by z_{1−α/3}: the doc's ×1.43 on n.
    assert sample_size(0.02, 0.1, 0.1, 10, alpha=0.05 / 3) / 186 == pytest.approx(1.43, abs=0.01)


@pytest.mark.parametrize(
    ("sigma_delta", "sigma_w", "r", "mde"), [(0.05, 0.1, 10, 0.0087), (0.1, 0.1, 10, 0.0143), (0.1, 0.2, 3, 0.0249)]
)
def test_detectable_drop_at_365_items_matches_the_doc(sigma_delta: float, sigma_w: float, r: int, mde: float) -> None:
    assert detectable_drop(365, sigma_delta, sigma_w, r) == pytest.approx(mde, abs=5e-5)
    # and the two functions invert each other
    assert sample_size(detectable_drop(365, sigma_delta, sigma_w, r), sigma_delta, sigma_w, r) == 365


def test_formula_rejects_nonsense() -> None:
    with pytest.raises(PowerError):
        sample_size(0.0, 0.1, 0.1, 10)
    with pytest.raises(PowerError):
        sample_size(0.02, 0.1, 0.1, 10, alpha=1.5)


# ============================================================================================ synthetic reports


def synthetic_report(
    seed: int,
    *,
    problems: int = 300,
    per_problem: int = 5,
    repeats: int = 4,
    tau: float = 0.06,
    sigma_e: float = 0.04,
    sigma_w: float = 0.05,
    bias: float = 0.3,
    dataset_sha: str = "a" * 64,
    noise_seed: int | None = None,
    change_sd: float = 0.0,
) -> dict[str, Any]:
    """A report whose answers are p_ir = p*_j − bias + u_j + e_i + ε_ir: u_j ~ N(0, τ²) per latent problem,
    e_i ~ N(0, σ_e²) per rendering, ε ~ N(0, σ_w²) per repeat. With bias ≫ the noise every answer lies below
    p*, so per-rendering OVL = 1 − bias + u + e + ε̄ exactly: its noise-free between-rendering SD is
    sqrt(τ² + σ_e²), its intra-problem correlation τ²/(τ² + σ_e²), and the per-repeat OVL has SD σ_w.

    noise_seed: seed of the repeat noise (default: from `seed`); change_sd: a per-rendering change N(0, sd²)
    added to the true values, drawn from its own generator; so two reports with the same seed and different
    noise seeds are two recordings of one model, or of two versions when one has change_sd > 0."""
    rng = np.random.default_rng(seed)
    noise = np.random.default_rng(seed + 1000 if noise_seed is None else noise_seed)
    change = np.random.default_rng(seed + 2000)
    items = []
    for j in range(problems):
        p_star = rng.uniform(0.5, 0.9)
        u = rng.normal(0, tau)
        for k in range(per_problem):
            true = p_star - bias + u + rng.normal(0, sigma_e) + (change.normal(0, change_sd) if change_sd else 0.0)
            answers = true + noise.normal(0, sigma_w, repeats)
            items.append(_item(f"fam__seed_{j:06d}", f"r{k}", "fam", p_star, answers))
    return _report(items, repeats, dataset_sha)


def _item(latent: str, representation: str, family: str, p_star: float, answers: np.ndarray) -> dict[str, Any]:
    answers = np.clip(answers, 0.0, 1.0)
    samples = []
    for a in answers:
        q = np.zeros(10)
        q[int(np.argmin(np.abs(LEVELS - a)))] = 1.0  # Score: all mass on the nearest level
        samples.append({"noul": float(a), "choice": float(a), "score": q.tolist()})
    mu = float(np.mean([np.dot(s["score"], LEVELS) for s in samples]))
    return {
        "instance_id": f"{latent}__repr_{representation}__parallel_primitives",
        "latent_instance_id": latent,
        "family": family,
        "representation": representation,
        "p_star": float(p_star),
        "p_noul": float(answers.mean()),
        "p_choice": float(answers.mean()),
        "p_choice_swapped": None,
        "mu_score": mu,
        "repeats": len(answers),
        "samples": samples,
    }


def _report(items: list[dict[str, Any]], repeats: int, dataset_sha: str) -> dict[str, Any]:
    return {
        "schema": "sys1cal-report/1",
        "model": {"name": "synthetic", "version": "s-1", "source": "recorded", "server_model": None},
        "dataset": {"name": "synthetic", "sha256": dataset_sha},
        "repeats": repeats,
        "seed": 0,
        "items": items,
    }


def test_estimators_recover_known_sigma_w_between_sd_and_rho() -> None:
    tau, sigma_e, sigma_w = 0.06, 0.04, 0.05
    report = synthetic_report(1, tau=tau, sigma_e=sigma_e, sigma_w=sigma_w)
    est = estimate(report, "choice")
    assert (est.renderings, est.latent_problems, est.repeats, est.per_problem) == (1500, 300, 4, 5)
    assert est.sigma_w == pytest.approx(sigma_w, rel=0.04)
    assert est.answer_sd == pytest.approx(sigma_w, rel=0.04)  # below p* throughout: no folding
    assert est.sigma_between == pytest.approx(math.hypot(tau, sigma_e), rel=0.08)
    assert est.rho == pytest.approx(tau**2 / (tau**2 + sigma_e**2), abs=0.05)  # 0.692
    # Without the noise removal ρ is diluted by the repeat noise σ_w²/r.
    ovl = 1 - np.abs(np.array([i["p_choice"] for i in report["items"]]) - [i["p_star"] for i in report["items"]])
    diluted = intraclass_correlation(ovl, [i["latent_instance_id"] for i in report["items"]])
    expected = tau**2 / (tau**2 + sigma_e**2 + sigma_w**2 / 4)
    assert diluted == pytest.approx(expected, abs=0.05) and diluted < est.rho


def test_sigma_w_of_a_calibrated_model_is_the_folded_sd_of_per_repeat_ovl() -> None:
    """Answers centred on p*: per-repeat OVL = 1 − |ε| has SD s·sqrt(1 − 2/π), which is also the noise of the
    OVL of the repeat mean; the SD of the answers themselves is s."""
    report = synthetic_report(2, bias=0.0, tau=0.0, sigma_e=0.0, sigma_w=0.05, problems=300)
    assert repeat_sd(report, "noul", of="answer") == pytest.approx(0.05, rel=0.04)
    assert repeat_sd(report, "noul") == pytest.approx(0.05 * math.sqrt(1 - 2 / math.pi), rel=0.06)


def test_icc_edge_cases() -> None:
    groups = ["a", "a", "b", "b", "c", "c"]
    assert intraclass_correlation(np.array([1, 1, 2, 2, 3, 3.0]), groups) == 1.0
    assert intraclass_correlation(np.array([1, 2, 1, 2, 1, 2.0]), groups) == 0.0  # negative estimate clipped
    with pytest.raises(PowerError):
        intraclass_correlation(np.array([1.0, 2.0]), ["a", "b"])  # no problem with two renderings


def test_single_repeat_report_states_sigma_w_as_an_assumption() -> None:
    report = synthetic_report(3, repeats=1, problems=60)
    plan = plan_power(report, drop=0.02)
    assert plan["estimates"]["sigma_w"] is None
    assert plan["sigma_w"] == 0.10 and plan["sigma_w_source"].startswith("ASSUMED")
    assert any("not measurable" in text for text in plan["assumptions"])
    given = plan_power(report, drop=0.02, sigma_w=0.2)
    assert given["sigma_w"] == 0.2 and given["sigma_w_source"] == "given (--sigma-w)"
    # More assumed noise needs more renderings at one repeat.
    assert given["table"][0]["renderings"] > plan["table"][0]["renderings"]


def test_plan_table_follows_the_formula_with_the_noise_diluted_design_effect() -> None:
    report = synthetic_report(4)
    plan = plan_power(report, drop=0.02, sigma_delta=0.08, repeats=(1, 3, 5, 10, 20))
    m, rho, w = plan["renderings_per_problem_deff"], plan["rho"], plan["sigma_w"]
    assert [row["repeats"] for row in plan["table"]] == [1, 3, 5, 10, 20]
    for row in plan["table"]:
        r = row["repeats"]
        variance = 0.08**2 + 2 * w**2 / r
        deff = design_effect(m, rho * 0.08**2 / variance)
        assert row["design_effect"] == pytest.approx(deff)
        assert row["renderings"] == sample_size(0.02, 0.08, w, r, deff=deff)
        assert row["latent_problems"] == math.ceil(row["renderings"] / 5 - 1e-9)
        assert row["requests"] == row["renderings"] * r
    # More repeats: fewer renderings, but never below the σ_Δ floor; the MDE of the report's size shrinks.
    counts = [row["renderings"] for row in plan["table"]]
    assert counts == sorted(counts, reverse=True)
    own_deff = design_effect(m, rho * 0.08**2 / (0.08**2 + 2 * w**2 / 4))
    assert plan["own_design"]["mde"] == pytest.approx(detectable_drop(1500, 0.08, w, 4, deff=own_deff))


def test_small_designs_use_student_t() -> None:
    report = synthetic_report(5)
    plan = plan_power(report, drop=0.05, sigma_delta=0.02)
    small = [row for row in plan["table"] if row["t_corrected"]]
    assert small, "a drop of 0.05 needs few problems"
    for row in small:
        z_only = sample_size(0.05, 0.02, plan["sigma_w"], row["repeats"], deff=row["design_effect"])
        assert row["renderings"] > z_only  # t quantiles are wider


def test_planned_design_has_its_power_in_simulation() -> None:
    """Simulate the paired gate at the planned size: problems of m renderings whose true changes correlate
    ρ within a problem, plus independent repeat noise; a one-sided t-test on per-problem mean differences
    rejects 'no drop' in about 80% of runs."""
    drop, sigma_delta, sigma_w, r, m, rho = 0.02, 0.08, 0.1, 5, 4, 0.5
    variance = sigma_delta**2 + 2 * sigma_w**2 / r
    deff = design_effect(m, rho * sigma_delta**2 / variance)
    problems = math.ceil(sample_size(drop, sigma_delta, sigma_w, r, deff=deff) / m)
    rng = np.random.default_rng(7)
    sims = 4000
    shared = rng.normal(0, sigma_delta * math.sqrt(rho), (sims, problems, 1))
    own = rng.normal(0, sigma_delta * math.sqrt(1 - rho), (sims, problems, m))
    noise = rng.normal(0, math.sqrt(2 * sigma_w**2 / r), (sims, problems, m))
    d = (-drop + shared + own + noise).mean(axis=2)  # per-problem mean difference
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(problems))
    from pytest_sys1cal.analysis.student_t import t_ppf

    power = float(np.mean(t < -t_ppf(problems - 1, 0.95)))
    assert 0.76 <= power <= 0.85, power


def test_baseline_measures_sigma_delta_from_paired_differences() -> None:
    """Two recordings of the same renderings by versions whose true per-rendering OVL differ by a change of SD
    0.04, each with its own repeat noise: σ_Δ is recovered with the noise removed; two recordings of the same
    version give σ_Δ ≈ 0; a report of another dataset is refused."""
    base = synthetic_report(6, sigma_w=0.05, noise_seed=1)
    changed = synthetic_report(6, sigma_w=0.05, noise_seed=2, change_sd=0.04)
    plan = plan_power(changed, drop=0.02, baseline=base)
    assert plan["spread"] == pytest.approx(0.04, rel=0.15)
    assert plan["spread_source"].startswith("measured") and plan["sigma_w"] == pytest.approx(0.05, rel=0.05)
    again = plan_power(synthetic_report(6, sigma_w=0.05, noise_seed=3), drop=0.02, baseline=base)
    assert again["spread"] < 0.01
    other = synthetic_report(6, dataset_sha="b" * 64)
    with pytest.raises(PowerError, match="sha256"):
        plan_power(changed, drop=0.02, baseline=other)


def test_unpaired_plan_says_when_the_public_set_is_too_small() -> None:
    report = synthetic_report(9, problems=40, tau=0.1, sigma_e=0.08)
    plan = plan_power(report, drop=0.01, design="unpaired")
    assert all(row["renderings"] is None for row in plan["table"])  # V·DEFF/N₀ alone exceeds (δ/z)²
    loose = plan_power(report, drop=0.08, design="unpaired")
    row = loose["table"][0]
    assert row["renderings"] is not None
    # With that fresh size the unpaired formula holds: V·DEFF·(1/n + 1/N₀) ≤ (δ/z)².
    var, deff, z = row["variance"], row["design_effect"], loose["z"]
    assert var * deff * (1 / row["renderings"] + 1 / 200) <= (0.08 / z) ** 2 + 1e-12


# ============================================================================================ command line


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_sys1cal", "power", *args], capture_output=True, text=True, timeout=60
    )


def test_command_prints_the_table_and_json(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(synthetic_report(10, problems=80)))
    done = _run(str(path), "--drop", "0.02", "--primitive", "noul")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Power for Noul mean OVL" in out and "measured: 4 repeats per rendering" in out
    assert "repeats" in out and "latent problems" in out and "MDE of this report's design" in out
    assert re.findall(r"^ *(\d+) +\d\.\d\d +\d\.\d\d ", out, re.M) == ["1", "3", "5", "10", "20"]
    data = json.loads(_run(str(path), "--drop", "0.02", "--json").stdout)
    assert data["primitive"] == "choice" and len(data["table"]) == 5


def test_command_single_repeat_and_sigma_w_option(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps(synthetic_report(11, repeats=1, problems=40)))
    out = _run(str(path), "--drop", "0.02").stdout
    assert "ASSUMED (--sigma-w)" in out and "not measurable" in out
    assert "given (--sigma-w)" in _run(str(path), "--drop", "0.02", "--sigma-w", "0.07").stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read it"),
        ("{not json", "not a JSON file"),
        ('{"hello": 1}', "not a sys1cal report"),
        ("[1, 2]", "not a sys1cal report"),
    ],
)
def test_command_errors_are_clean(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    done = _run(str(path), "--drop", "0.02")
    assert done.returncode == 4  # a mistake in the user's input, as in a pytest run and every other command
    assert message in done.stderr and "Traceback" not in done.stderr and done.stdout == ""


def test_command_rejects_bad_numbers(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(synthetic_report(12, problems=20)))
    for args in (("--drop", "0"), ("--drop", "x"), ("--drop", "0.02", "--power", "1")):
        done = _run(str(path), *args)
        assert done.returncode == 2 and "Traceback" not in done.stderr
