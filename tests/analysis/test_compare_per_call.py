"""The upgrade comparison read per call (docs/statistics.md §6.1): D_i from each side's per-call OVL, paired by
rendering and bootstrapped by latent problem as the repeat-mean reading is; recordings with different repeats
compare, reports of published means do not; under the null (the same per-call distribution, 3 calls against 10)
it shows the candidate worse no more often than α."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_sys1cal.analysis import analyze
from pytest_sys1cal.analysis.paired import PairingError, pair_reports
from pytest_sys1cal.analysis.upgrade import Margin, compare_reports
from pytest_sys1cal.vocabulary import Verdict


def recording(seed: int, calls: int, *, noise: float, problems: int = 30, hashed: bool = False) -> dict:
    """A report of `problems` latent problems × 4 renderings, each answered σ(x + ε) per call, ε ~ N(0, noise²),
    x = logit p*, or (`hashed`) a logit in [−3, 3] unrelated to p*, as the jevcompat mock answers; p* and x from
    one stream (the same dataset and model whatever the seed), the noise from the seed."""
    truth, rng = np.random.default_rng(0), np.random.default_rng(seed)
    items = []
    for problem in range(problems):
        p_star = float(truth.uniform(0.05, 0.95))
        for name in ("a", "b", "c", "d"):
            x = truth.uniform(-3, 3) if hashed else np.log(p_star / (1 - p_star))
            logits = x + rng.normal(0, noise, size=calls)
            samples = [{"noul": float(p)} for p in 1 / (1 + np.exp(-logits))]
            items.append(
                {
                    "instance_id": f"frequency__{problem}__repr_{name}",
                    "latent_instance_id": f"frequency__{problem}",
                    "family": "frequency",
                    "representation": name,
                    "p_star": p_star,
                    "samples": samples,
                }
            )
    analysis = analyze(items, bootstrap=0)
    return {**analysis, "repeats": calls, "repeats_per_answer": 1, "model": {}, "dataset": {}}


def compare(new: dict, base: dict, reading: str, *, fail_drop: float = 0.01, resamples: int = 400) -> dict:
    return compare_reports(
        new,
        base,
        margins={"noul": Margin(0.02, fail_drop)},
        primitives=["noul"],
        resamples=resamples,
        reading=reading,
    )["metrics"]["noul"]


def test_per_call_the_difference_is_that_of_the_reports_per_call_ovl_and_the_label_says_so() -> None:
    base, new = recording(1, 10, noise=3.0, hashed=True), recording(2, 10, noise=0.0, hashed=True)
    metric = compare(new, base, "call")
    per_call = [report["primitives"]["noul"]["per_call"]["mean_ovl"] for report in (new, base)]
    assert metric["new"] == pytest.approx(per_call[0], abs=1e-12) and metric["baseline"] == pytest.approx(
        per_call[1], abs=1e-12
    )
    assert metric["label"] == "Noul mean OVL per call" and metric["metric"] == "noul.per_call.mean_ovl"
    # The deterministic candidate is better on every call, and worse against the noisy one's hedged means.
    assert metric["difference"] > 0.02 and metric["verdict"] == Verdict.PASSED
    assert compare(new, base, "mean")["verdict"] == Verdict.FAILED


def test_different_repeats_compare_per_call_and_are_refused_as_means() -> None:
    base, new = recording(1, 10, noise=1.0), recording(2, 3, noise=1.0)
    paired = pair_reports(new, base, "call")
    assert (paired.new_r, paired.base_r, paired.repeats) == (3, 10, 3)
    with pytest.raises(PairingError, match="the OVL of a repeat mean depends on the number of repeats"):
        pair_reports(new, base, "mean")


def test_published_means_are_never_compared_per_call() -> None:
    base, new = recording(1, 1, noise=1.0), recording(2, 10, noise=1.0)
    base["repeats_per_answer"] = 10  # each sample the mean of 10 calls, as the bundled Jev set
    with pytest.raises(PairingError, match="the baseline holds 10-call means .* cannot be compared per call"):
        pair_reports(new, base, "call")


def test_unequal_repeat_noise_is_each_sides_own() -> None:
    """σ_w pooled, and what repeat noise adds to Var(D) taken with each side's own calls: w/3 + w/10."""
    base, new = recording(1, 10, noise=1.0), recording(2, 3, noise=1.0)
    metric = compare(new, base, "call")
    sigma_w, sd_d, sigma_delta = metric["sigma_w"], metric["sd_d"], metric["sigma_delta"]
    assert sigma_w is not None and sigma_delta is not None
    noise = sigma_w**2 * 2 * (1 / 3 + 1 / 10) / 2  # both sides' variances near σ_w²: w/3 + w/10
    assert sigma_delta**2 == pytest.approx(max(sd_d**2 - noise, 0.0), rel=0.25)


@pytest.mark.slow  # an error-rate simulation: 200 comparisons
def test_under_the_null_a_candidate_is_shown_worse_no_more_often_than_alpha() -> None:
    """200 pairs of recordings of one model (logit noise 1.5), the candidate with 3 calls, the baseline with 10:
    with δ₀ = 0 a FAILED verdict is the one-sided test of Δ ≥ 0 at α = 0.05. Read per call it stays near α (200
    draws: ≤ 0.09 is within 1.9 SEs of 0.05). Read as means the two would not estimate the same thing: the 10-call
    means sit closer to p* than the 3-call ones of the same model, which is why that reading refuses them."""
    failed = 0
    for k in range(200):
        base, new = recording(2 * k + 11, 10, noise=1.5, problems=20), recording(2 * k + 12, 3, noise=1.5, problems=20)
        failed += compare(new, base, "call", fail_drop=0.0, resamples=200)["verdict"] == Verdict.FAILED
    assert failed / 200 <= 0.09
    assert new["primitives"]["noul"]["mean_ovl"] < base["primitives"]["noul"]["mean_ovl"] - 0.01
