"""The readout with its threshold fitted on held-out latent problems, on crafted data whose answer is known."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_sys1cal.analysis import analyze
from pytest_sys1cal.analysis.recalibration import (
    fit_threshold,
    logit,
    recalibrate,
    recalibrated_readouts,
    split_by_latent,
)
from pytest_sys1cal.report.paper_tables import build_tables
from pytest_sys1cal.report.recalibration_table import TITLE, recalibration_table


def crafted(latents: int = 60, renderings: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(latent ids, p*) of `latents` problems with `renderings` each; p* spread over (0, 1), constant
    within a problem, half of the problems on each side of 0.5."""
    rng = np.random.default_rng(seed)
    p_latent = rng.permutation(np.linspace(0.02, 0.98, latents))
    ids = np.repeat([f"bayes__seed_{j:06d}" for j in range(latents)], renderings)
    return ids, np.repeat(p_latent, renderings)


def collapsed_but_ranked(p_star: np.ndarray) -> np.ndarray:
    """Every P(True) in (0.9, 1.0), strictly increasing in p*: argmax says True to everything, yet the
    ranking is perfect."""
    return 0.9 + 0.0999 * p_star


def test_collapsed_readout_with_perfect_ranking_is_recovered_on_the_held_out_half():
    ids, p_star = crafted()
    out = recalibrated_readouts({"choice": collapsed_but_ranked(p_star)}, p_star, ids, seed=3)["choice"]
    assert out["raw"] == {"recall_true": 1.0, "recall_false": 0.0, "balanced_accuracy": 0.5}
    assert out["auc"] == 1.0
    assert out["recalibrated"]["balanced_accuracy"] == pytest.approx(1.0, abs=0.05)
    assert out["recalibrated"]["balanced_accuracy"] > 0.95
    # Both fitted thresholds sit among the collapsed answers, far from the raw logit 0.
    assert all(t > logit(np.array(0.9)) for t in out["threshold_logit"])
    assert "reason" not in out


def test_saturated_collapsed_readout_is_recovered_too():
    """Answers crowded against 1 (logits up to the 1e-12 clip): a threshold at the class-mean midpoint
    would be dragged by the largest logits; the rank-based fit is not."""
    ids, p_star = crafted(latents=80)
    p = 1 - 10.0 ** (-2 - 10 * p_star)  # P(True) from 0.99 to 1 − 1e-12, increasing in p*
    out = recalibrated_readouts({"noul": p}, p_star, ids, seed=0)["noul"]
    assert out["raw"]["balanced_accuracy"] == 0.5
    assert out["recalibrated"]["balanced_accuracy"] > 0.95


@pytest.mark.parametrize("seed", range(5))
def test_no_ranking_stays_at_one_half(seed):
    ids, p_star = crafted(latents=200, renderings=3, seed=seed)
    rng = np.random.default_rng(100 + seed)
    p = 0.9 + 0.1 * rng.random(p_star.size)  # collapsed and unrelated to p*
    out = recalibrated_readouts({"score": p}, p_star, ids, seed=seed)["score"]
    assert out["raw"]["balanced_accuracy"] == 0.5
    assert out["recalibrated"]["balanced_accuracy"] == pytest.approx(0.5, abs=0.08)
    assert out["auc"] == pytest.approx(0.5, abs=0.08)


def test_a_threshold_fitted_in_sample_would_flatter_a_readout_with_no_ranking():
    """Why the halves: on pure noise the best in-sample threshold beats 0.5, the held-out one does not."""
    ids, p_star = crafted(latents=40, renderings=2, seed=1)
    gaps = []
    for seed in range(30):
        p = np.random.default_rng(seed).random(p_star.size)
        positive = p_star >= 0.5
        t = fit_threshold(logit(p), positive)
        in_sample = ((logit(p) >= t)[positive].mean() + (logit(p) < t)[~positive].mean()) / 2
        held_out = recalibrated_readouts({"noul": p}, p_star, ids, seed=seed)["noul"]
        gaps.append(in_sample - held_out["recalibrated"]["balanced_accuracy"])
    assert np.mean(gaps) > 0.05


@pytest.mark.parametrize("latents", [2, 3, 7, 60, 91])
def test_the_split_never_puts_a_latent_problem_on_both_sides(latents):
    ids, p_star = crafted(latents=latents, renderings=5)
    positive = p_star >= 0.5
    for seed in range(200):
        first = split_by_latent(ids, positive, seed)
        assert not set(ids[first]) & set(ids[~first])
        assert set(ids[first]) | set(ids[~first]) == set(ids)
        # Balanced by latent problem, overall and within each gold class.
        sizes = [len(set(ids[half])) for half in (first, ~first)]
        assert abs(sizes[0] - sizes[1]) <= 1
        for side in (True, False):
            counts = [len(set(ids[half & (positive == side)])) for half in (first, ~first)]
            assert abs(counts[0] - counts[1]) <= 1


def test_the_split_is_seeded_and_ignores_the_order_of_the_items():
    ids, p_star = crafted(latents=30, renderings=3)
    positive = p_star >= 0.5
    first = split_by_latent(ids, positive, 11)
    assert np.array_equal(first, split_by_latent(ids, positive, 11))
    order = np.random.default_rng(5).permutation(ids.size)
    assert np.array_equal(split_by_latent(ids[order], positive[order], 11), first[order])
    assert any(not np.array_equal(first, split_by_latent(ids, positive, seed)) for seed in range(12, 20))


def test_no_rendering_is_scored_by_a_threshold_fitted_on_its_own_latent_problem():
    """Each half separates perfectly at its own threshold, but the two thresholds differ: scored in-sample
    the readout would be perfect; scored by the other half's threshold it is at chance, exactly."""
    ids, p_star = crafted(latents=20, renderings=2)
    positive = p_star >= 0.5
    first = split_by_latent(ids, positive, 0)
    # First half: False 0.6, True 0.8 (t between logits 0.41 and 1.39); second: False 0.2, True 0.4.
    p = np.where(first, np.where(positive, 0.8, 0.6), np.where(positive, 0.4, 0.2))
    out = recalibrate(p, p_star, ids, first, seed=0)
    t_first, t_second = out["threshold_logit"]
    assert logit(np.array(0.6)) < t_first < logit(np.array(0.8))
    assert logit(np.array(0.2)) < t_second < logit(np.array(0.4))
    # The first half, scored by t_second, is all True; the second, scored by t_first, all False.
    assert out["recalibrated"] == {"recall_true": 0.5, "recall_false": 0.5, "balanced_accuracy": 0.5}
    assert out["latent_problems"] == [10, 10]


def test_fit_threshold_on_ties_and_one_value():
    positive = np.array([True, True, False, False])
    # All answers equal: no threshold separates anything; balanced accuracy 0.5 whatever is chosen.
    t = fit_threshold(np.zeros(4), positive)
    assert np.isfinite(t)
    # Tied values are never split, and a plateau of best thresholds gives its middle.
    assert fit_threshold(np.array([3.0, 3.0, 1.0, 1.0]), positive) == 2.0
    assert fit_threshold(np.array([4.0, 3.0, 1.0, 0.0]), positive) == 2.0


def test_deterministic_for_a_seed(published_items):
    first = analyze(published_items, seed=4, bootstrap=0)["readout_recalibrated"]
    again = analyze(list(reversed(published_items)), seed=4, bootstrap=0)["readout_recalibrated"]
    assert json.dumps(first) == json.dumps(again)
    assert first["choice"]["seed"] == 4
    other = analyze(published_items, seed=5, bootstrap=0)["readout_recalibrated"]
    assert other["choice"]["threshold_logit"] != first["choice"]["threshold_logit"]


def test_raw_numbers_are_the_readouts_on_the_same_renderings(published):
    for name, block in published["readout_recalibrated"].items():
        readout = published["readout"][name]
        assert block["raw"]["balanced_accuracy"] == readout["balanced_accuracy"]
        assert block["auc"] == readout["auc"]
        assert block["n"] == readout["n_true"] + readout["n_false"] == sum(block["renderings"])
        assert sum(block["latent_problems"]) == published["counts"]["latent_problems"]


@pytest.mark.parametrize(
    ("p_star", "reason"),
    [
        ([0.7, 0.8, 0.9, 0.6], "no item whose gold answer is False"),
        ([0.1, 0.2, 0.3, 0.4], "no item whose gold answer is True"),
        ([0.9, 0.1, 0.2, 0.3], "half has no gold-True item"),  # one True problem: one half lacks it
    ],
)
def test_degenerate_inputs_give_none_and_a_reason(p_star, reason):
    ids = np.array([f"bayes__{j}" for j in range(4)])
    p_star = np.array(p_star)
    out = recalibrated_readouts({"noul": np.full(4, 0.6)}, p_star, ids, seed=0)["noul"]
    assert out["recalibrated"] is None and out["threshold_logit"] is None and out["auc"] is None
    assert reason in out["reason"]
    json.dumps(out, allow_nan=False)


def test_tiny_and_empty_runs(make_item):
    one = [make_item("bayes__seed_000001", f"r{r}", 0.2 + 0.6 * (r % 2), noul=0.5 + 0.1 * r) for r in range(4)]
    out = analyze(one, bootstrap=0)["readout_recalibrated"]
    assert "no rendering in the second half" in out["noul"]["reason"]
    assert out["noul"]["latent_problems"] == [1, 0]
    assert out["choice"]["reason"] == "not enough data: no answers"
    empty = analyze([], bootstrap=0)["readout_recalibrated"]
    assert all(block["recalibrated"] is None and block["reason"] for block in empty.values())
    json.dumps(empty, allow_nan=False)


def test_the_table_shows_raw_and_recalibrated_side_by_side(published):
    table = recalibration_table(published)
    assert table.title == TITLE and table in build_tables(published)
    choice = next(row for row in table.rows if row[0] == "Choice")
    block = published["readout_recalibrated"]["choice"]
    assert choice[table.columns.index("raw bal. acc.")] == f"{block['raw']['balanced_accuracy']:.3f}"
    assert choice[table.columns.index("recal. bal. acc.")] == f"{block['recalibrated']['balanced_accuracy']:.3f}"
    assert "seed 0" in table.notes[0] and "46 / 46" in table.notes[0]
    assert recalibration_table({"readout": {}}) is None  # a report from before the block existed
