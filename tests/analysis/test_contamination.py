"""analysis/contamination.py: the unpaired public − fresh comparison on synthetic reports with a known truth
(interval coverage under no difference, detection of a built-in public advantage, the family reweighting removing
a composition effect), the refusals, and `python -m pytest_sys1cal contamination` end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_sys1cal.analysis.contamination import NOT_SUSPICIOUS, SUSPICIOUS, check_contamination
from pytest_sys1cal.analysis.contamination_sides import ContaminationError
from pytest_sys1cal.report.contamination_text import format_check

# Family → mean distance of the answers to p*: families differ in difficulty, as real ones do.
DIFFICULTY = {"alpha": 0.10, "beta": 0.12, "gamma": 0.15, "delta": 0.18, "epsilon": 0.22, "zeta": 0.26}
PUBLIC_MIX = {"alpha": 20, "beta": 20, "gamma": 20, "delta": 20, "epsilon": 7, "zeta": 5}  # like Sys1Cal-v1
FRESH_MIX = dict.fromkeys(DIFFICULTY, 30)  # like a generated set: even
REPRESENTATIONS = ("direct", "table", "prose", "counts")


def synthetic(
    seed: int,
    mix: dict[str, int],
    *,
    advantage: float = 0.0,
    sha: str,
    name: str = "synthetic",
    version: str = "s-1",
    repeats: int = 2,
) -> dict[str, Any]:
    """A report of one model: per rendering the answer is p = p* − (d_f + u_j + e_i − advantage) + ε, with
    d_f the family difficulty, u_j ~ N(0, 0.04²) per latent problem, e_i ~ N(0, 0.02²) per rendering and
    ε ~ N(0, 0.03²) per repeat. The answers stay below p*, so the expected OVL is 1 − d_f + advantage: two
    reports with the same advantage are equally good on every family."""
    rng = np.random.default_rng(seed)
    items = []
    for family, count in mix.items():
        for j in range(count):
            latent = f"{family}__seed_{seed:04d}{j:04d}"
            p_star = rng.uniform(0.45, 0.95)
            u = rng.normal(0, 0.04)
            for representation in REPRESENTATIONS:
                distance = DIFFICULTY[family] + u + rng.normal(0, 0.02) - advantage
                answers = np.clip(p_star - distance + rng.normal(0, 0.03, repeats), 0, 1)
                mean = float(answers.mean())
                items.append(
                    {
                        "instance_id": f"{latent}__repr_{representation}__parallel_primitives",
                        "latent_instance_id": latent,
                        "family": family,
                        "representation": representation,
                        "p_star": p_star,
                        "p_noul": mean,
                        "p_choice": mean,
                        "p_choice_swapped": None,
                        "mu_score": None,  # Score not asked: reported as not compared
                        "repeats": repeats,
                        "samples": [{"noul": float(a), "choice": float(a)} for a in answers],
                    }
                )
    return {
        "schema": "sys1cal-report/1",
        "model": {"name": name, "version": version, "source": "recorded", "server_model": None},
        "dataset": {"name": f"set-{sha[:4]}", "sha256": sha},
        "repeats": repeats,
        "seed": 0,
        "items": items,
    }


def public_report(seed: int, **kwargs: Any) -> dict[str, Any]:
    return synthetic(seed, PUBLIC_MIX, sha="a" * 64, **kwargs)


def fresh_report(seed: int, **kwargs: Any) -> dict[str, Any]:
    return synthetic(seed, FRESH_MIX, sha="b" * 64, **kwargs)


def check(public: dict[str, Any], fresh: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("stratify", "family")
    kwargs.setdefault("exclude", [])
    return check_contamination(public, fresh, **kwargs)


# ============================================================================================ statistics


@pytest.mark.slow
def test_no_difference_interval_covers_zero_about_95_percent_of_the_time() -> None:
    """100 seeded pairs of reports from the same model on sets with different family mixes: the reweighted
    95% interval covers the true difference 0 in about 95 of them. The raw difference is biased by the mix
    (the public set has fewer of the hard families) and its interval misses 0 far more often."""
    trials = 100
    covered = {"reweighted": 0, "raw": 0}
    for trial in range(trials):
        result = check(public_report(1000 + trial), fresh_report(5000 + trial), seed=trial, resamples=1000)
        choice = result["metrics"]["choice"]
        for key in covered:
            low, high = choice[key]["ci"]
            covered[key] += low <= 0 <= high
    assert 89 <= covered["reweighted"] <= 99, covered
    assert covered["raw"] < 60, covered


def test_an_advantage_of_005_on_the_public_set_is_detected() -> None:
    for trial in range(10):
        result = check(
            public_report(200 + trial, advantage=0.05), fresh_report(300 + trial), seed=trial, resamples=1000
        )
        choice = result["metrics"]["choice"]
        assert choice["verdict"] == SUSPICIOUS
        assert choice["reweighted"]["difference"] == pytest.approx(0.05, abs=0.015)
        low, high = choice["reweighted"]["ci"]
        assert low <= 0.05 <= high or abs(choice["reweighted"]["difference"] - 0.05) < 0.01
    assert result["verdict"] == SUSPICIOUS and result["suspicious"] == ["noul", "choice"]
    assert "suspiciously better on the public set" in format_check(result)


def test_reweighted_estimate_is_exact_standardisation_to_the_public_mix() -> None:
    public, fresh = public_report(1), fresh_report(2)
    result = check(public, fresh, resamples=200)
    noul = result["metrics"]["noul"]
    weights = {s["stratum"]: s["weight"] for s in noul["strata"]}
    assert weights == pytest.approx({f: PUBLIC_MIX[f] / sum(PUBLIC_MIX.values()) for f in PUBLIC_MIX})
    fresh_means = {s["stratum"]: s["fresh"]["mean_ovl"] for s in noul["strata"]}
    expected = sum(weights[f] * fresh_means[f] for f in weights)
    assert noul["fresh_reweighted"] == pytest.approx(expected)
    assert noul["public"] == pytest.approx(noul["public_shared_strata"])
    assert noul["reweighted"]["difference"] == pytest.approx(noul["public"] - expected)
    # With no stratification the verdict uses the raw difference, which equals the Table 1 means' difference.
    raw = check(public, fresh, stratify="none", resamples=200)
    assert raw["verdict_uses"] == "raw"
    ovl = [1 - abs(i["p_noul"] - i["p_star"]) for i in public["items"]]
    assert raw["metrics"]["noul"]["public"] == pytest.approx(np.mean(ovl))


def test_seeded_and_deterministic() -> None:
    public, fresh = public_report(3), fresh_report(4)
    first = check(public, fresh, seed=5, resamples=300)
    assert first == check(public, fresh, seed=5, resamples=300)
    assert first != check(public, fresh, seed=6, resamples=300)


def test_unmeasured_primitive_and_exclusions() -> None:
    public, fresh = public_report(5), fresh_report(6)
    result = check(public, fresh, exclude=["prose", "zeta", "alpha:table"], resamples=200)
    assert result["metrics"]["score"]["verdict"] is None
    assert "not asked" in result["metrics"]["score"]["reason"]
    n_public = sum(1 for i in public["items"] if i["representation"] != "prose" and i["family"] != "zeta") - 20
    assert result["public"]["compared_renderings"] == n_public
    assert "zeta" not in result["public"]["families"]
    with pytest.raises(ContaminationError, match="--exclude nope"):
        check(public, fresh, exclude=["nope"])


def test_bundled_public_set_leaks_are_left_out_by_default() -> None:
    from pytest_sys1cal.commands.contamination import bundled_public_sha

    sha = bundled_public_sha()
    assert sha is not None
    public, fresh = public_report(7), fresh_report(8)
    public["dataset"]["sha256"] = sha
    result = check_contamination(public, fresh, stratify="family", resamples=200, bundled_sha256=sha)
    assert result["excluded"] == ["prose", "sequential_bayes"] and "state p*" in result["exclusion_note"]
    assert result["public"]["compared_renderings"] == len(public["items"]) * 3 // 4  # prose is 1 of 4
    kept = check_contamination(public, fresh, stratify="family", resamples=200, exclude=["none"], bundled_sha256=sha)
    assert kept["excluded"] == [] and kept["public"]["compared_renderings"] == len(public["items"])


def test_band_strata_remove_a_p_star_mix_effect() -> None:
    """A model that is better near p* = 0 or 1 (as a logit-noise model is) looks worse on a set with more
    problems in the middle bands. Stratifying by p* band compares like with like."""

    def report(seed: int, sha: str, extreme_share: float) -> dict[str, Any]:
        rng = np.random.default_rng(seed)
        items = []
        for j in range(200):
            extreme = rng.random() < extreme_share
            p_star = rng.uniform(0.9, 0.99) if extreme else rng.uniform(0.45, 0.7)
            distance = (0.02 if extreme else 0.15) + rng.normal(0, 0.01)
            latent = f"fam__seed_{j:06d}"
            for representation in ("direct", "table"):
                p = p_star - distance + rng.normal(0, 0.01)
                items.append(
                    {
                        "instance_id": f"{latent}__repr_{representation}",
                        "latent_instance_id": latent,
                        "family": "fam",
                        "representation": representation,
                        "p_star": p_star,
                        "p_noul": p,
                        "repeats": 1,
                    }
                )
        return {
            "schema": "sys1cal-report/1",
            "model": {"name": "m", "version": "v"},
            "dataset": {"name": sha[:4], "sha256": sha},
            "repeats": 1,
            "items": items,
        }

    public, fresh = report(1, "a" * 64, 0.1), report(2, "b" * 64, 0.5)
    by_family = check(public, fresh, stratify="family", primitives=["noul"], resamples=500)["metrics"]["noul"]
    by_band = check(public, fresh, stratify="family+band", primitives=["noul"], resamples=500)["metrics"]["noul"]
    assert by_family["reweighted"]["ci"][1] < -0.03  # the mix alone makes the public set look much worse
    low, high = by_band["reweighted"]["ci"]
    assert low <= 0 <= high and abs(by_band["reweighted"]["difference"]) < 0.01


def test_band_cells_with_few_fresh_problems_are_left_out_and_said() -> None:
    public = public_report(13)
    tiny = synthetic(14, dict.fromkeys(DIFFICULTY, 4), sha="c" * 64)
    result = check(public, tiny, stratify="family+band", resamples=200)
    choice = result["metrics"]["choice"]
    assert choice["verdict"] is None and "generate at least 330 problems" in choice["reason"]
    assert any("fewer than 5 latent problems" in text for text in result["caveats"])
    assert "Choice: not compared: no stratum shared" in format_check(result)
    # A fresh set of 30 problems per family fills the cells (p* spans four bands here); same model, no gap.
    larger = check(public, fresh_report(15), stratify="family+band", resamples=200)["metrics"]["choice"]
    assert larger["verdict"] == NOT_SUSPICIOUS
    assert larger["reweighted"]["ci"][0] < 0.0 < larger["reweighted"]["ci"][1]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"dataset": {"name": "same", "sha256": "a" * 64}}, "same dataset"),
        ({"model": {"name": "other", "version": "s-1"}}, "different models"),
        ({"model": {"name": "synthetic", "version": "s-2"}}, "different models"),
        ({"repeats": 3}, "repeat"),
    ],
)
def test_refusals(change: dict[str, Any], message: str) -> None:
    public, fresh = public_report(9), fresh_report(10)
    fresh.update(change)
    with pytest.raises(ContaminationError, match=message):
        check(public, fresh)


def test_different_repeats_compare_with_a_caveat_when_asked() -> None:
    public, fresh = public_report(11), fresh_report(12, repeats=3)
    result = check(public, fresh, ignore_repeats=True, resamples=200)
    assert any("repeat counts differ" in c for c in result["caveats"])


# ============================================================================================ command line


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_sys1cal", "contamination", *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "public": public_report(20),
        "fresh": fresh_report(21),
        "contaminated": public_report(22, advantage=0.05),
        "other_model": fresh_report(23, name="other"),
    }
    out = {}
    for name, report in paths.items():
        out[name] = tmp_path / f"{name}.json"
        out[name].write_text(json.dumps(report))
    return out


@pytest.mark.e2e
def test_command_text_and_json(files: dict[str, Path]) -> None:
    clean = _run(str(files["public"]), str(files["fresh"]), "--stratify", "family")
    assert clean.returncode == 0, clean.stderr
    assert "Overall: not suspicious on any primitive" in clean.stdout
    assert "Choice: public" in clean.stdout and "reweighted to the public family mix" in clean.stdout
    flagged = _run(str(files["contaminated"]), str(files["fresh"]), "--stratify", "family", "--seed", "3", "--json")
    data = json.loads(flagged.stdout)
    assert flagged.returncode == 0 and data["verdict"] == SUSPICIOUS and data["seed"] == 3
    assert data["metrics"]["choice"]["verdict"] == SUSPICIOUS
    strict = _run(str(files["contaminated"]), str(files["fresh"]), "--fail-if-suspicious")
    assert strict.returncode == 1
    assert _run(str(files["public"]), str(files["fresh"]), "--fail-if-suspicious").returncode == 0
    assert NOT_SUSPICIOUS in json.loads(_run(str(files["public"]), str(files["fresh"]), "--json").stdout)["verdict"]


@pytest.mark.e2e
def test_command_refusals_exit_4_with_one_line(files: dict[str, Path], tmp_path: Path) -> None:
    same = _run(str(files["public"]), str(files["contaminated"]))  # both "public": the same sha256
    other = _run(str(files["public"]), str(files["other_model"]))
    missing = _run(str(tmp_path / "nope.json"), str(files["fresh"]))
    (tmp_path / "list.json").write_text("[]")
    not_report = _run(str(files["public"]), str(tmp_path / "list.json"))
    (tmp_path / "broken.json").write_text("{")
    broken = _run(str(tmp_path / "broken.json"), str(files["fresh"]))
    bad_strata = _run(str(files["public"]), str(files["fresh"]), "--stratify", "colour")
    # Exit 4: a mistake in the user's input, as in a pytest run and every other command.
    for done, message in [
        (same, "same dataset"),
        (other, "different models"),
        (missing, "cannot read it"),
        (not_report, "not a sys1cal report"),
        (broken, "not a JSON file"),
        (bad_strata, "--stratify colour"),
    ]:
        assert done.returncode == 4, (message, done.stderr)
        assert message in done.stderr and "Traceback" not in done.stderr and done.stdout == ""
        assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1
