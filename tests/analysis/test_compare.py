"""analysis/upgrade.py: pairing, Holm, the three-way verdict and its behaviour under repeat noise."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import numpy as np
import pytest

from pytest_sys1cal.analysis.decisive import decisive_size
from pytest_sys1cal.analysis.paired import PairingError, holm
from pytest_sys1cal.analysis.upgrade import Margin, compare_reports
from pytest_sys1cal.gates.schema import UpgradeConfig
from pytest_sys1cal.gates.upgrade import evaluate_upgrade
from pytest_sys1cal.vocabulary import Verdict

FAIL, PASS, INCONCLUSIVE, NOT_MEASURED = Verdict.FAILED, Verdict.PASSED, Verdict.INCONCLUSIVE, Verdict.NOT_MEASURED

PRIMS = ("noul", "choice", "score")
LEVELS = np.arange(10) / 9


# ============================================================================================ simulation
#
# A fixed "model": 92 latent problems × 4 renderings, each rendering with its own true mean answer m_i
# (p* plus a per-problem bias and a per-rendering effect). A recording draws r = 3 repeats per rendering
# with independent noise σ_w = 0.1 on the probability scale (clipped to [0, 1]). Reports carry what the
# plugin's items carry: the repeat means and the per-repeat samples (Score as a 10-level distribution).

J, K, R, SIGMA_W = 92, 4, 3, 0.1


class Model:
    def __init__(self, seed: int = 12345):
        rng = np.random.default_rng(seed)
        self.n = J * K
        self.latent = np.repeat(np.arange(J), K)
        self.p_star = np.repeat(rng.uniform(0.05, 0.95, J), K)
        self.mean = {}
        for prim, bias in zip(PRIMS, (0.06, 0.15, 0.09), strict=True):
            problem = np.repeat(rng.normal(0, bias, J), K)
            rendering = rng.normal(0, bias / 2, self.n)
            self.mean[prim] = np.clip(self.p_star + problem + rendering, 0.01, 0.99)
        self.ids = [f"fam__seed_{j:06d}__repr_{k}" for j in range(J) for k in range(K)]

    def worse(self, prim: str, drop: float, sigma_w: float = SIGMA_W) -> Model:
        """The same model with `prim` moved away from p* so that its expected mean OVL (of the repeat mean
        of R noisy repeats, as the report computes it) is lower by exactly `drop`."""
        noise = np.random.default_rng(99).normal(0, sigma_w, (400, R, self.n))  # common random numbers

        def expected_ovl(mean: np.ndarray) -> float:
            p = np.clip(mean + noise, 0, 1).mean(axis=1)
            return float(1 - np.abs(p - self.p_star).mean())

        away = np.where(self.mean[prim] >= self.p_star, 1.0, -1.0)
        target = expected_ovl(self.mean[prim]) - drop
        low, high = 0.0, 0.3
        for _ in range(40):
            shift = (low + high) / 2
            low, high = (
                (shift, high) if expected_ovl(np.clip(self.mean[prim] + away * shift, 0, 1)) > target else (low, shift)
            )
        other = copy.copy(self)
        other.mean = {**self.mean, prim: np.clip(self.mean[prim] + away * (low + high) / 2, 0, 1)}
        other.achieved_drop = expected_ovl(self.mean[prim]) - expected_ovl(other.mean[prim])
        return other

    def record(self, rng: np.random.Generator, sigma_w: float = SIGMA_W) -> dict[str, Any]:
        draws = {p: np.clip(self.mean[p][:, None] + rng.normal(0, sigma_w, (self.n, R)), 0, 1) for p in PRIMS}
        # Score: a distribution on the two levels around each draw, so that its expectation is the draw.
        s = draws["score"] * 9
        lower = np.minimum(np.floor(s).astype(int), 8)
        q = np.zeros((self.n, R, 10))
        np.put_along_axis(q, lower[..., None], (lower + 1 - s)[..., None], axis=2)
        np.put_along_axis(q, (lower + 1)[..., None], (s - lower)[..., None], axis=2)
        noul, choice, score = draws["noul"].tolist(), draws["choice"].tolist(), q.tolist()
        mean = {p: draws[p].mean(axis=1).tolist() for p in ("noul", "choice")}
        mu = (q.mean(axis=1) @ LEVELS).tolist()
        items = [
            {
                "instance_id": self.ids[i],
                "latent_instance_id": f"fam__seed_{self.latent[i]:06d}",
                "p_star": float(self.p_star[i]),
                "p_noul": mean["noul"][i],
                "p_choice": mean["choice"][i],
                "mu_score": mu[i],
                "repeats": R,
                "samples": [{"noul": noul[i][k], "choice": choice[i][k], "score": score[i][k]} for k in range(R)],
            }
            for i in range(self.n)
        ]
        return {"schema": "sys1cal-report/1", "dataset": {"sha256": "d" * 64}, "repeats": R, "items": items}


@pytest.fixture(scope="module")
def model() -> Model:
    return Model()


@pytest.mark.slow
def test_noise_cannot_flip_ci_but_a_real_drop_fails(model: Model) -> None:
    """100 seeded trials, each: a baseline recording, a second recording of the same model, and a recording
    of a model whose Choice mean OVL is 0.03 lower. Default gate: δ = 0.02, δ₀ = 0.01, α = 0.05, Holm over 3."""
    worse = model.worse("choice", 0.03)
    assert worse.achieved_drop == pytest.approx(0.03, abs=5e-4)
    config = UpgradeConfig()
    strict = UpgradeConfig(fail_drop=dict.fromkeys(PRIMS, 0.0))  # δ₀ = 0: fail on any significant drop
    same = {"pass": 0, "inconclusive": 0, "failed": 0}
    strict_false_fail = 0
    drop = {"choice_failed": 0, "others_failed": 0}
    started = time.perf_counter()
    for trial in range(100):
        rng = np.random.default_rng(1000 + trial)
        base, again, dropped = model.record(rng), model.record(rng), worse.record(rng)
        # explain=False: the verdicts alone (the diagnosis never changes one, and would cost most of the time)
        verdicts = [row.verdict for row in evaluate_upgrade(config, again, base, trial, explain=False)]
        if "FAILED" in verdicts:
            same["failed"] += 1
        elif "inconclusive" in verdicts:
            same["inconclusive"] += 1
        else:
            same["pass"] += 1
        strict_rows = evaluate_upgrade(strict, again, base, trial, explain=False)
        strict_false_fail += any(row.verdict == "FAILED" for row in strict_rows)
        rows = {row.name: row.verdict for row in evaluate_upgrade(config, dropped, base, trial, explain=False)}
        drop["choice_failed"] += rows.pop("regression.choice.mean_ovl") == "FAILED"
        drop["others_failed"] += "FAILED" in rows.values()
    elapsed = time.perf_counter() - started
    report = (
        f"same model: PASS {same['pass']}%, INCONCLUSIVE {same['inconclusive']}%, FAILED {same['failed']}%; "
        f"same model with δ₀ = 0: FAILED {strict_false_fail}%; Choice −0.03: FAILED {drop['choice_failed']}%, "
        f"other primitives FAILED in {drop['others_failed']}% ({elapsed:.1f} s for 300 comparisons)"
    )
    print(report)
    assert same["pass"] + same["inconclusive"] >= 95, report
    assert drop["choice_failed"] >= 80, report
    assert drop["others_failed"] <= 5, report
    assert strict_false_fail <= 10, report  # Holm: family-wise false FAILs near α = 0.05 even at δ₀ = 0


# ============================================================================================ verdicts


def synthetic(change: dict[str, np.ndarray], seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """(new, baseline) reports on 92 × 4 renderings whose per-rendering OVL changes by exactly −change[p]
    (answers sit 0.25 from p* on the roomier side, so moves in (−0.25, 0.2) never cross p* or leave [0, 1])."""
    rng = np.random.default_rng(seed)
    p_star = np.repeat(rng.uniform(0.05, 0.95, J), K)
    side = np.where(p_star < 0.5, 1.0, -1.0)
    reports = []
    for drop in (change, {}):
        items = []
        for i in range(J * K):
            answers = {
                column: float(p_star[i] + side[i] * (0.25 + drop.get(prim, np.zeros(J * K))[i]))
                for prim, column in (("noul", "p_noul"), ("choice", "p_choice"), ("score", "mu_score"))
            }
            items.append(
                {
                    "instance_id": f"fam__seed_{i // K:06d}__repr_{i % K}",
                    "latent_instance_id": f"fam__seed_{i // K:06d}",
                    "p_star": float(p_star[i]),
                    "repeats": R,
                    **answers,
                }
            )
        reports.append({"schema": "sys1cal-report/1", "dataset": {"sha256": "d" * 64}, "repeats": R, "items": items})
    return reports[0], reports[1]


def centred(mean: float, spread: float, seed: int) -> np.ndarray:
    """J·K changes mean ± spread, half each way in random places: exactly this mean and SD `spread`."""
    signs = np.random.default_rng(seed).permutation(np.repeat([-1.0, 1.0], J * K // 2))
    return mean + spread * signs


def test_three_way_verdicts_and_fail_precedence() -> None:
    margins = {p: Margin(0.02, 0.01) for p in PRIMS}
    cases = {
        "no change": (np.zeros(J * K), PASS),
        "a drop well inside the margin": (centred(0.004, 0.01, 1), PASS),
        # Δ = −0.015, tightly: shown better than −δ = −0.02 and shown worse than −δ₀ = −0.01: FAIL wins.
        "a drop inside (−δ, −δ₀)": (centred(0.015, 0.005, 2), FAIL),
        "a large drop": (centred(0.05, 0.02, 3), FAIL),
        # Δ = −0.015 with a wide spread: neither bound clears its margin.
        "a noisy drop between the margins": (centred(0.015, 0.12, 4), INCONCLUSIVE),
        "an improvement": (centred(-0.03, 0.05, 5), PASS),
    }
    for name, (change, expected) in cases.items():
        new, base = synthetic({"choice": change})
        result = compare_reports(new, base, margins=margins, seed=0)
        m = result["metrics"]["choice"]
        assert m["difference"] == pytest.approx(-change.mean(), abs=1e-12), name
        assert m["verdict"] == expected, (name, m)
        assert result["metrics"]["noul"]["verdict"] == PASS
        if expected == PASS:
            assert m["lower"] > -0.02
        elif expected == FAIL:
            assert m["upper"] < -0.01
        else:
            assert m["lower"] <= -0.02 and m["upper"] >= -0.01
            assert m["advice"]["renderings"] > m["n"] and m["advice"]["power"] == 0.8
        json.dumps(result, allow_nan=False)


def with_samples(report: dict[str, Any], spread: float) -> dict[str, Any]:
    """Give every rendering R = 3 repeats m − spread, m, m + spread around its answer m (per-repeat SD
    exactly `spread`); Score as two-level distributions with that expectation."""
    for item in report["items"]:
        samples: list[dict[str, Any]] = [{}, {}, {}]
        for prim, column in (("noul", "p_noul"), ("choice", "p_choice"), ("score", "mu_score")):
            for sample, value in zip(
                samples, (item[column] - spread, item[column], item[column] + spread), strict=True
            ):
                if prim == "score":
                    level = min(int(value * 9), 8)
                    q = [0.0] * 10
                    q[level], q[level + 1] = level + 1 - value * 9, value * 9 - level
                    sample[prim] = q
                else:
                    sample[prim] = value
        item["samples"] = samples
    return report


def test_inconclusive_says_what_would_decide_it() -> None:
    """With repeats, σ_w is measured; when the change varies from rendering to rendering far more than
    repeat noise does, more repeats cannot decide it, and more renderings can."""
    new, base = synthetic({"choice": centred(0.015, 0.12, 6)})
    new, base = with_samples(new, 0.08), with_samples(base, 0.08)
    result = compare_reports(new, base, seed=0)
    m = result["metrics"]["choice"]
    assert m["verdict"] == INCONCLUSIVE, m
    assert m["sigma_w"] == pytest.approx(0.08)
    assert m["sigma_delta"] == pytest.approx(np.sqrt(0.12**2 * J * K / (J * K - 1) - 2 * 0.08**2 / R))
    advice = m["advice"]
    assert advice["renderings"] > m["n"]
    assert advice["repeats"] is None and "more repeats alone would not do it" in advice["text"]
    assert advice["text"].startswith(
        f"at its spread, about {advice['renderings']} paired renderings, {advice['latent_problems']} latent problems "
        f"(now {m['n']}, {m['latent_problems']}) would decide it, passed or FAILED"
    )
    # the size is decisive_size's at the stricter Holm level, whatever Δ̂ (§7.5)
    level = min(1 - m["lower_level"], 1 - m["upper_level"])
    size = decisive_size(
        n=m["n"], se=m["se"], latent_problems=m["latent_problems"], margin=Margin(), level=level, repeats=R,
        within_sum=2 * m["sigma_w"] ** 2,
    )  # fmt: skip
    assert advice["renderings"] == size["renderings"] and advice["latent_problems"] == size["latent_problems"]
    rows = {r.name: r.to_json() for r in evaluate_upgrade(UpgradeConfig(), new, base, 0)}
    row = rows["regression.choice.mean_ovl"]
    assert row["verdict"] == "inconclusive" and row["passed"] is None
    assert "neither shown within the margin" in row["explanation"]
    assert f"latent problems (now {J * K}, {J})" in row["explanation"]


def test_inconclusive_advice_with_repeat_noise_dominating() -> None:
    """A uniform change on few renderings with noisy repeats: more repeats are the cheap lever. Every answer
    sits well above p*, so OVL never folds at p* and the shift lowers every rendering's OVL alike (σ_Δ = 0):
    all the spread of D is repeat noise."""
    rng = np.random.default_rng(0)
    small = Model(seed=3)
    small.n, small.latent = 40, small.latent[:40]  # 10 latent problems only: too few to decide
    small.p_star = np.repeat(np.linspace(0.1, 0.5, 10), 4)
    small.mean = dict.fromkeys(PRIMS, small.p_star + 0.35)
    small.ids = small.ids[:40]
    worse = small.worse("noul", 0.012)
    result = compare_reports(worse.record(rng), small.record(rng), seed=0, primitives=["noul"])
    m = result["metrics"]["noul"]
    assert m["verdict"] == INCONCLUSIVE, m
    assert m["advice"]["repeats"] is not None and m["advice"]["repeats"] > R
    assert f"about {m['advice']['repeats']} repeats per rendering in both recordings (now {R})" in m["advice"]["text"]


# ============================================================================================ Holm


def test_holm_by_hand() -> None:
    # Sorted: 0.01 ≤ 0.05/3 → reject; 0.03 > 0.05/2 → stop, so 0.04 is kept too although 0.04 ≤ 0.05.
    reject, level, adjusted = holm([0.04, 0.01, 0.03], 0.05)
    assert reject.tolist() == [False, True, False]
    assert level.tolist() == pytest.approx([0.05, 0.05 / 3, 0.025])
    assert adjusted.tolist() == pytest.approx([0.06, 0.03, 0.06])
    # All within their step-down levels.
    reject, _, adjusted = holm([0.012, 0.02, 0.045], 0.05)
    assert reject.tolist() == [True, True, True]
    assert adjusted.tolist() == pytest.approx([0.036, 0.04, 0.045])
    # One hypothesis: plain α.
    assert holm([0.049], 0.05)[0].tolist() == [True]


def test_holm_in_the_gate() -> None:
    """Three primitives each 0.010 worse (noisy): alone, each is shown non-inferior at α = 0.05; gated
    together, the first is tested at α/3, is not shown, and Holm stops, so all three are inconclusive.
    A primitive with no change is certain and does not cost the others anything (it is ranked first)."""
    change = centred(0.010, 0.1, 7)
    new, base = synthetic(dict.fromkeys(PRIMS, change))
    alone = compare_reports(new, base, seed=0, primitives=["choice"])["metrics"]["choice"]
    three = compare_reports(new, base, seed=0)["metrics"]
    assert alone["verdict"] == PASS and alone["lower_level"] == pytest.approx(0.95)
    assert [three[p]["verdict"] for p in PRIMS] == [INCONCLUSIVE] * 3
    assert three["noul"]["lower_level"] == pytest.approx(1 - 0.05 / 3)  # ties rank in primitive order
    assert three["choice"]["lower"] < alone["lower"]
    assert three["choice"]["p_noninferior_holm"] == pytest.approx(3 * three["choice"]["p_noninferior"])

    new, base = synthetic({"choice": change})  # Noul and Score unchanged: certain passes
    mixed = compare_reports(new, base, seed=0)["metrics"]
    assert [mixed[p]["verdict"] for p in PRIMS] == [PASS, PASS, PASS]
    assert mixed["choice"]["lower_level"] == pytest.approx(0.95)


# ============================================================================================ pairing


def test_pairing_counts_and_side_by_side_values(model: Model) -> None:
    base = model.record(np.random.default_rng(0))
    new = model.record(np.random.default_rng(1))
    new["items"] = new["items"][5:] + [{**new["items"][0], "instance_id": "extra__seed_1__repr_x"}]
    base["items"] = base["items"][:-2]
    result = compare_reports(new, base, seed=0)
    assert (result["matched"], result["only_in_new"], result["only_in_baseline"]) == (
        361,
        3,
        5,
    )  # new: 5..367 + 1 extra; baseline: 0..365
    m = result["metrics"]["noul"]
    assert m["n"] == 361 and m["new"] - m["baseline"] == pytest.approx(m["difference"])


def test_primitive_missing_in_one_report_is_not_measured(model: Model) -> None:
    base = model.record(np.random.default_rng(0))
    new = copy.deepcopy(base)
    for item in new["items"]:
        item["mu_score"] = None
        for sample in item["samples"]:
            del sample["score"]
    result = compare_reports(new, base, seed=0)
    assert result["metrics"]["score"]["verdict"] == NOT_MEASURED
    assert result["metrics"]["score"]["reason"] == "Score was not asked in this run"
    assert result["correction"].startswith("Holm over 2 metrics")
    rows = {r.name: r.to_json() for r in evaluate_upgrade(None, new, base, 0)}
    assert rows["regression.score.mean_ovl"]["verdict"] == "not measured"
    assert rows["regression.score.mean_ovl"]["passed"] is None


def test_refuses_different_repeat_counts_and_disjoint_reports(model: Model) -> None:
    base = model.record(np.random.default_rng(0))
    new = copy.deepcopy(base)
    for item in new["items"]:
        item["repeats"] = 10
    with pytest.raises(PairingError, match="the baseline averages 3 repeats per rendering and this run 10"):
        compare_reports(new, base)
    other = copy.deepcopy(base)
    for item in other["items"]:
        item["instance_id"] += "_other"
    with pytest.raises(
        PairingError, match=r"no rendering is in both reports \(368 in the new one, 368 in the baseline\)"
    ):
        compare_reports(other, base)


def test_same_seed_same_result_and_fast(model: Model) -> None:
    base, new = model.record(np.random.default_rng(0)), model.record(np.random.default_rng(1))
    started = time.perf_counter()
    first = compare_reports(new, base, seed=7)
    elapsed = time.perf_counter() - started
    assert json.dumps(first, sort_keys=True) == json.dumps(compare_reports(new, base, seed=7), sort_keys=True)
    assert first["metrics"]["choice"]["lower"] != compare_reports(new, base, seed=8)["metrics"]["choice"]["lower"]
    assert elapsed < 0.5, f"one comparison of 368 renderings took {elapsed:.3f} s"
