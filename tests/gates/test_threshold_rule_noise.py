"""What one recording cannot see (issue 24): the thresholds rule's repeat-noise term, estimated from one
recording's repeats, equals the spread of the statistic across independent recordings of the same model; a
statistic whose measured spread is zero gets the stated minimum slack, so a second recording with a little
noise still passes; and the margin is the largest of the three distances, said by name.

Synthetic items stand in for recordings here (many recordings are needed to know the true spread); the same
rule on real recordings of a loopback server is tests/commands/test_aa_thresholds.py."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from pytest_sys1cal.gates.thresholds_rule import MIN_SLACK, REPEAT_Z, SES, slack_for, threshold_rule


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def score_for(mu: float) -> list[float]:
    """A 10-level Score distribution whose expectation is exactly mu (mass on the two levels around it)."""
    position = mu * 9
    low = min(int(math.floor(position)), 8)
    q = [0.0] * 10
    q[low], q[low + 1] = 1 - (position - low), position - low
    return q


def recording(seed: int, noise: float, repeats: int, problems: int = 40, renderings: int = 4) -> list[dict[str, Any]]:
    """Items of one recording of a model answering σ(logit p* + ε) everywhere, ε ~ N(0, noise²) per answer,
    with no position effect; the same p* whatever the seed (the renderings stay, the noise is drawn anew)."""
    fixed = np.random.default_rng(0)
    p_star = np.clip(fixed.beta(2, 2, size=problems), 0.02, 0.98)
    rng = np.random.default_rng(seed)
    items = []
    for j in range(problems):
        base = math.log(p_star[j] / (1 - p_star[j])) + fixed.normal(0, 0.3, size=renderings)  # per rendering
        for r in range(renderings):
            draws = sigmoid(base[r] + rng.normal(0, noise, size=(repeats, 4)))
            samples = [
                {"noul": float(d[0]), "choice": float(d[1]), "choice_swapped": float(d[2]), "score": score_for(d[3])}
                for d in draws
            ]
            items.append(
                {
                    "instance_id": f"p{j:03d}-r{r}",
                    "latent_instance_id": f"p{j:03d}",
                    "family": "f",
                    "representation": f"r{r}",
                    "p_star": float(p_star[j]),
                    "samples": samples,
                }
            )
    return items


KEYS = [
    ("noul", "min_mean_ovl"),
    ("noul", "max_ece"),
    ("noul", "max_mean_pairwise_tv"),
    ("choice", "max_swap_shift"),
    ("choice", "max_brier"),
    ("score", "min_median_ovl"),
]


@pytest.mark.slow  # 120 simulated recordings
def test_the_repeat_se_of_one_recording_is_the_spread_across_recordings() -> None:
    first = {(lim.primitive, lim.key): lim for lim in threshold_rule(recording(0, 0.4, 4)).limits}
    values: dict[tuple[str, str], list[float]] = {key: [] for key in KEYS}
    for seed in range(1, 121):
        limits = threshold_rule(recording(seed, 0.4, 4), resamples=20, repeat_resamples=0).limits
        for lim in limits:
            if (lim.primitive, lim.key) in values:
                values[lim.primitive, lim.key].append(lim.value)
    for key in KEYS:
        estimated, true = first[key].repeat_se, float(np.std(values[key], ddof=1))
        assert estimated is not None and 0.7 < estimated / true < 1.4, (key, estimated, true)


@pytest.mark.slow  # 60 simulated recordings
def test_every_limit_holds_on_independent_recordings_of_the_same_model() -> None:
    """The A/A promise on synthetic recordings: with the repeat term the printed limits hold on all of 60
    re-recordings; with problem SEs alone (the old rule) the swap shift and first-position limits do not."""
    first = recording(0, 0.4, 4)
    rule, old = threshold_rule(first), threshold_rule(first, min_slack=0.0, repeat_resamples=0)
    failures = {"rule": 0, "old": 0}
    for seed in range(1, 61):
        values = {(lim.primitive, lim.key): lim.value for lim in threshold_rule(recording(seed, 0.4, 4), resamples=20, repeat_resamples=0).limits}  # fmt: skip
        for name, result in (("rule", rule), ("old", old)):
            for lim in result.limits:
                if lim.limit is not None:
                    value = values[lim.primitive, lim.key]
                    failures[name] += value < lim.limit if lim.bound == "min" else value > lim.limit
    assert failures["rule"] == 0
    assert failures["old"] > 0  # the experiment can see the bug it guards against


def test_a_spread_measured_as_zero_gets_the_minimum_slack() -> None:
    """An order-blind server that answers every repeat alike: swap shift and first-position bias measure 0 with
    bootstrap SE 0. The old rule printed limits of 0.0, which the next recording with a little noise failed."""
    deterministic = recording(0, 0.0, 3)
    for item in deterministic:
        for sample in item["samples"]:
            sample["choice_swapped"] = sample["choice"]
    limits = {(lim.primitive, lim.key): lim for lim in threshold_rule(deterministic).limits}
    for key in ("max_swap_shift", "max_first_position_bias"):
        lim = limits["choice", key]
        assert (lim.value, lim.se, lim.repeat_se) == (0.0, 0.0, 0.0)
        assert (lim.limit, lim.set_by, lim.margin) == (MIN_SLACK, "minimum", MIN_SLACK)
    old = {(lim.primitive, lim.key): lim.limit for lim in threshold_rule(deterministic, min_slack=0.0).limits}
    assert old["choice", "max_swap_shift"] == 0.0
    noisy = {(lim.primitive, lim.key): lim.value for lim in threshold_rule(recording(1, 0.1, 3), resamples=20).limits}
    assert 0 < noisy["choice", "max_swap_shift"] <= MIN_SLACK  # passes the slack, fails the old limit
    assert noisy["choice", "max_first_position_bias"] <= MIN_SLACK


def test_the_margin_is_the_largest_distance_and_says_which() -> None:
    for lim in threshold_rule(recording(0, 0.4, 4)).limits:
        if lim.limit is None:
            continue
        distances = {
            "problems": SES * lim.se,
            "repeats": REPEAT_Z * math.sqrt(2) * lim.repeat_se,
            "minimum": slack_for(lim.key, lim.value, MIN_SLACK),
        }
        assert lim.margin == pytest.approx(max(distances.values()))
        assert distances[lim.set_by] == pytest.approx(lim.margin)
        assert (
            (lim.limit <= lim.value - lim.margin + 1e-12)
            if lim.bound == "min"
            else (lim.limit >= lim.value + lim.margin - 1e-12)
        )


def test_one_repeat_shows_no_repeat_noise() -> None:
    result = threshold_rule(recording(0, 0.4, 1))
    assert (result.repeats, result.repeat_resamples) == (1, 0)
    assert all(lim.repeat_se is None for lim in result.limits)
    assert {lim.set_by for lim in result.limits if lim.limit is not None} <= {"problems", "minimum"}


@pytest.mark.parametrize(("brier", "expected"), [(0.0, 0.0001), (0.0225, 2 * 0.15 * 0.01 + 0.0001)])
def test_brier_takes_the_slack_through_its_square(brier: float, expected: float) -> None:
    assert slack_for("max_brier", brier, 0.01) == pytest.approx(expected)
    assert slack_for("min_mean_ovl", brier, 0.01) == 0.01


def test_a_negative_slack_is_refused() -> None:
    with pytest.raises(ValueError, match="minimum slack"):
        threshold_rule(recording(0, 0.4, 2), min_slack=-0.01)
