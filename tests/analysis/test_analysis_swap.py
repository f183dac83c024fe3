"""Option-order and readout metrics on a hand-built run whose answers are worked out below."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_sys1cal.analysis import analyze
from pytest_sys1cal.analysis.readout import roc_auc

# (latent, rendering, p*, P(True) asked [False, True], P(True) asked [True, False]); binary fractions, so
# that sums and averages are exact and the tie below is a tie.
HAND_BUILT = [
    ("A", "r1", 0.8, 0.75, 0.5),
    ("A", "r2", 0.8, 0.875, 0.625),
    ("B", "r1", 0.2, 0.375, 0.25),
    ("B", "r2", 0.2, 0.875, 0.375),
]


def logit(p: float) -> float:
    return math.log(p / (1 - p))


@pytest.fixture
def swapped_run(make_item):
    return [
        make_item(f"bayes__{latent}", rendering, p_star, choice=plain, choice_swapped=swapped, mu=0.5)
        for latent, rendering, p_star, plain, swapped in HAND_BUILT
    ]


def test_order_effects(swapped_run):
    swap = analyze(swapped_run, bootstrap=0)["option_swap"]
    assert swap["n"] == 4
    # Shifts 0.25, 0.25, 0.125, 0.5.
    assert swap["mean_shift"] == 0.28125
    # Per rendering, ½·[1{False (shown first) wins} + 1{True (shown first) wins}], a tie counting ½:
    # A/r1: (0 + ½)/2, A/r2: (0 + 1)/2, B/r1: (1 + 0)/2, B/r2: (0 + 0)/2.
    assert swap["first_position_rate"] == (0.25 + 0.5 + 0.5 + 0.0) / 4
    # Only B/r2 changes its answer with the order.
    assert swap["swap_consistency"] == pytest.approx(0.75)
    # Per-latent mean shifts 0.25 and 0.3125: mean 0.28125, se 0.03125, t = 9 on 1 df, where Student's t
    # is the Cauchy distribution: p = 1 − 2·atan(t)/π.
    assert swap["statistic"] == pytest.approx(9.0)
    assert swap["p_value"] == pytest.approx(1 - 2 * math.atan(9) / math.pi)
    assert "per-latent" in swap["test"]


def test_readout_of_the_order_average(swapped_run):
    result = analyze(swapped_run, bootstrap=0)
    swap = result["option_swap"]
    # Order averages: A 0.625, 0.75 (gold True); B 0.3125, 0.625 (gold False).
    assert swap["recall_true"] == 1.0
    assert swap["recall_false"] == 0.5
    assert swap["balanced_accuracy"] == 0.75
    # Positive–negative pairs: (0.625, 0.3125) 1, (0.625, 0.625) ½, (0.75, 0.3125) 1, (0.75, 0.625) 1.
    assert swap["auc"] == 3.5 / 4
    m_pos = (logit(0.625) + logit(0.75)) / 2
    m_neg = (logit(0.3125) + logit(0.625)) / 2
    assert swap["offset"] == pytest.approx((m_pos + m_neg) / 2)
    assert swap["sep"] == pytest.approx((m_pos - m_neg) / 2)
    assert swap["collapsed"] is False
    readout = result["readout"]["choice"]
    assert {key: readout[key] for key in ("recall_true", "auc", "offset")} == {
        key: swap[key] for key in ("recall_true", "auc", "offset")
    }


def test_first_position_rate_reads_order_bias_not_accuracy(make_item):
    def rate(pairs):
        items = [
            make_item(f"bayes__{j}", "r", p_star, choice=plain, choice_swapped=swapped)
            for j, (p_star, plain, swapped) in enumerate(pairs)
        ]
        return analyze(items, bootstrap=0)["option_swap"]["first_position_rate"]

    # Order-blind models score 0.5 however wrong they are.
    assert rate([(0.9, 0.1, 0.1), (0.2, 0.9, 0.9), (0.5, 0.5, 0.5)]) == 0.5
    # A model that always favours the option shown first scores 1.
    assert rate([(0.9, 0.2, 0.8), (0.1, 0.3, 0.6)]) == 1.0


def test_collapsed_readout(make_item):
    """Both class means on the same side of 0: argmax sends everything to True."""
    items = [make_item(f"bayes__{j}", "r", p_star, choice=p) for j, (p_star, p) in enumerate([(0.9, 0.95), (0.1, 0.7)])]
    readout = analyze(items, bootstrap=0)["readout"]["choice"]
    assert readout["collapsed"] is True
    assert (readout["recall_true"], readout["recall_false"]) == (1.0, 0.0)


def test_auc_equals_pairwise_count():
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 6, size=60) / 5  # coarse values: many ties
    positive = rng.random(60) < 0.4
    pos, neg = scores[positive], scores[~positive]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    assert roc_auc(scores, positive) == pytest.approx(wins / (pos.size * neg.size))


def test_collapse_needs_both_class_means_on_one_side():
    """With the classes reversed (sep < 0) but the means on opposite sides of 0, nothing collapses: the
    condition is m₊·m₋ > 0, i.e. |offset| > |sep|, whatever the sign of sep."""
    from pytest_sys1cal.analysis.readout import readout

    p = np.array([0.3, 0.35, 0.7, 0.65])  # gold-True items answered below 0.5, gold-False above
    p_star = np.array([0.8, 0.8, 0.2, 0.2])
    out = readout(p, p_star)
    assert out["sep"] < 0 and abs(out["offset"]) < abs(out["sep"])
    assert out["collapsed"] is False
