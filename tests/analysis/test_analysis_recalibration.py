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
    split_seeds,
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
    seed_0 = table.columns.index("recal. bal. acc., seed 0")
    assert choice[seed_0] == f"{block['recalibrated']['balanced_accuracy']:.3f}"
    # The mean ± SD over the splits sits right beside the seed-0 value.
    assert table.columns[seed_0 + 1] == "over 20 splits: mean ± SD"
    spread = block["held_out"]["balanced_accuracy"]
    assert choice[seed_0 + 1] == f"{spread['mean']:.3f} ± {spread['sd']:.3f}"
    assert "seed 0" in table.notes[0] and "46 / 46" in table.notes[0]
    assert "seeded 0 … 19" in table.notes[1]
    assert recalibration_table({"readout": {}}) is None  # a report from before the block existed


def test_a_report_from_before_repeated_splits_still_renders(published):
    """Saved reports written before `splits` and `held_out` existed redraw with a dash in the new column."""
    old = {
        **published,
        "readout_recalibrated": {
            name: {k: v for k, v in block.items() if k not in ("splits", "held_out")}
            for name, block in published["readout_recalibrated"].items()
        },
    }
    table = recalibration_table(old)
    assert table.columns[4] == "over splits: mean ± SD"
    assert {row[4] for row in table.rows} == {"—"}
    assert not any(note.startswith("Over ") for note in table.notes)


# ================================================================================ repeated splits


def test_split_zero_is_the_runs_own_split_whatever_the_number_of_splits(published_items):
    """Continuity: every key a single-split run reported keeps its value when more splits are drawn."""
    one = analyze(published_items, seed=7, bootstrap=0, recalibration_splits=1)["readout_recalibrated"]
    many = analyze(published_items, seed=7, bootstrap=0, recalibration_splits=20)["readout_recalibrated"]
    for name in one:
        kept = {k: v for k, v in many[name].items() if k not in ("splits", "held_out")}
        assert kept == {k: v for k, v in one[name].items() if k not in ("splits", "held_out")}
        assert (one[name]["splits"], many[name]["splits"]) == (1, 20)
        assert many[name]["held_out"]["seeds"] == [7, 26]


def test_held_out_is_the_mean_and_sd_of_single_split_runs_seeded_seed_plus_k():
    """The oracle: recalibrate() on split_by_latent(seed + k) for each k, summarised with numpy by hand."""
    ids, p_star = crafted(latents=50, renderings=3, seed=2)
    p = np.clip(p_star + np.random.default_rng(9).normal(0, 0.3, p_star.size), 0.01, 0.99)
    seed, splits = 11, 12
    assert split_seeds(seed, splits) == list(range(11, 23))
    singles = [
        recalibrate(p, p_star, ids, split_by_latent(ids, p_star >= 0.5, s), seed=s)["recalibrated"]
        for s in range(seed, seed + splits)
    ]
    out = recalibrated_readouts({"noul": p}, p_star, ids, seed=seed, splits=splits)["noul"]
    held = out["held_out"]
    assert (out["splits"], held["scored"], held["seeds"]) == (splits, splits, [11, 22])
    for key in ("balanced_accuracy", "recall_true", "recall_false"):
        values = np.array([single[key] for single in singles])
        assert held[key]["mean"] == pytest.approx(values.mean(), rel=1e-12)
        assert held[key]["sd"] == pytest.approx(values.std(ddof=1), rel=1e-12)
        assert (held[key]["min"], held[key]["max"]) == (values.min(), values.max())
    # The splits do differ (else the SD would say nothing), and split 0 is the block's own.
    assert held["balanced_accuracy"]["sd"] > 0
    assert out["recalibrated"] == singles[0]


def test_one_split_has_no_sd_and_its_mean_is_the_split(published_items):
    block = analyze(published_items, bootstrap=0, recalibration_splits=1)["readout_recalibrated"]["choice"]
    spread = block["held_out"]["balanced_accuracy"]
    assert spread["sd"] is None
    assert spread["mean"] == spread["min"] == spread["max"] == block["recalibrated"]["balanced_accuracy"]
    table = recalibration_table({"readout_recalibrated": {"choice": block}, "readout": {}})
    assert table.columns[4] == "over 1 split: mean ± SD"
    assert table.rows[0][4] == f"{spread['mean']:.3f}"
    assert any(note.startswith("Over 1 split: the split above (seed 0) alone, so no SD") for note in table.notes)


def test_splits_that_leave_a_half_without_a_gold_class_are_left_out_and_counted():
    """Noul asked on two gold-True problems only (among many): a split that deals both to one half cannot
    fit that half, so it is not scored; the count says how many were, and the table says so. Here the run's
    own split (seed 0) is one of them: its keys are null with the reason, the other splits still count."""
    ids, p_star = crafted(latents=40, renderings=2, seed=4)
    true_latents = sorted(set(ids[p_star >= 0.5]))[:2]
    asked = (p_star < 0.5) | np.isin(ids, true_latents)
    p = np.where(asked, np.clip(p_star, 0.05, 0.95), np.nan)
    seed, splits = 0, 30
    firsts = [split_by_latent(ids, p_star >= 0.5, s) for s in split_seeds(seed, splits)]
    # Scoreable: the two asked gold-True problems on different sides (each side then has both classes).
    scoreable = [len({bool(f) for f in first[np.isin(ids, true_latents)]}) == 2 for first in firsts]
    assert not scoreable[0] and 0 < sum(scoreable) < splits, "the crafted data must leave some splits unscoreable"
    out = recalibrated_readouts({"noul": p}, p_star, ids, seed=seed, splits=splits)["noul"]
    assert out["recalibrated"] is None and "the first half has no gold-True item" in out["reason"]
    assert out["held_out"]["scored"] == sum(scoreable)
    singles = [
        recalibrate(p[asked], p_star[asked], ids[asked], first[asked], seed=0)["recalibrated"]["balanced_accuracy"]
        for first, ok in zip(firsts, scoreable, strict=True)
        if ok
    ]
    assert out["held_out"]["balanced_accuracy"]["mean"] == pytest.approx(np.mean(singles), rel=1e-12)
    table = recalibration_table({"readout_recalibrated": {"noul": out}, "readout": {}})
    assert f"Noul: {sum(scoreable)} of {splits} splits scored" in " ".join(table.notes)
    assert table.rows[0][3] == "—" and table.rows[0][4] != "—"


def test_zero_splits_is_refused():
    ids, p_star = crafted(latents=10)
    with pytest.raises(ValueError, match="splits must be at least 1, not 0"):
        recalibrated_readouts({"noul": p_star}, p_star, ids, seed=0, splits=0)


def test_no_summary_without_both_gold_classes():
    out = recalibrated_readouts({"noul": np.full(4, 0.6)}, np.full(4, 0.9), np.arange(4).astype(str), seed=0)
    assert out["noul"]["held_out"] is None and out["noul"]["splits"] == 20
    empty = analyze([], bootstrap=0)["readout_recalibrated"]
    assert all(block["held_out"] is None for block in empty.values())


def test_repeated_splits_are_seeded_and_ignore_the_order_of_the_items(published_items):
    first = analyze(published_items, seed=2, bootstrap=0, recalibration_splits=5)["readout_recalibrated"]
    again = analyze(list(reversed(published_items)), seed=2, bootstrap=0, recalibration_splits=5)
    assert json.dumps(first) == json.dumps(again["readout_recalibrated"])
    # Seeds 3 … 7 share four splits with seeds 2 … 6, so the summaries differ only through the splits.
    shifted = analyze(published_items, seed=3, bootstrap=0, recalibration_splits=5)["readout_recalibrated"]
    assert shifted["choice"]["held_out"]["seeds"] == [3, 7]
    assert shifted["choice"]["held_out"] != first["choice"]["held_out"]


def unsorted_fit_threshold(margin: np.ndarray, positive: np.ndarray) -> float:
    """fit_threshold as it was before it sorted once per primitive: np.unique and a sort per class."""
    values = np.unique(margin)
    candidates = np.concatenate([[values[0] - 1.0], (values[:-1] + values[1:]) / 2, [values[-1] + 1.0]])
    pos, neg = np.sort(margin[positive]), np.sort(margin[~positive])
    recall_true = 1 - np.searchsorted(pos, candidates, side="left") / pos.size
    recall_false = np.searchsorted(neg, candidates, side="left") / neg.size
    accuracy = (recall_true + recall_false) / 2
    best = np.flatnonzero(accuracy >= accuracy.max() - 1e-12)
    return float(candidates[best[(best.size - 1) // 2]])


def test_fit_threshold_on_one_sort_equals_the_unsorted_fit_on_ties_and_infinities():
    rng = np.random.default_rng(0)
    checked = 0
    for k in range(1000):
        n = int(rng.integers(2, 60))
        margin = np.round(rng.normal(size=n), int(rng.integers(0, 3)))  # rounding makes ties
        margin[rng.integers(0, n)] = (np.inf, -np.inf, 0.0)[k % 3]  # logit of P(True) 1, 0 and one half
        positive = rng.random(n) < 0.5
        if positive.all() or not positive.any():
            continue
        assert fit_threshold(margin, positive) == unsorted_fit_threshold(margin, positive)
        checked += 1
    assert checked > 900
