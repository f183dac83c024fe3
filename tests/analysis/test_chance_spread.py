"""analysis/rendering_moves.chance_spreads: the scale of chance of one rendering's D_i (docs/statistics.md §6.7),
checked where it claims to hold: two recordings of one model (an A/A comparison) drawn with repeat noise."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest

from pytest_sys1cal.analysis.rendering_moves import chance_spreads, rendering_moves
from tests.analysis.test_compare import PRIMS, Model


def test_an_a_a_comparison_puts_about_5_percent_of_renderings_beyond_1_96_sd() -> None:
    model = Model()
    rng = np.random.default_rng(2026)
    base, again = model.record(rng), model.record(rng)
    spreads = chance_spreads(again, base, PRIMS)
    moves = rendering_moves(again, base, PRIMS)
    for prim in PRIMS:
        spread = spreads[prim]
        d = np.array([row["d"][prim] for row in moves])
        beyond = float(np.mean(np.abs(d) > 1.96 * spread["sd"]))
        assert spread["basis"] == "repeats"
        assert spread["n"] == d.size == model.n
        assert 0.02 <= beyond <= 0.09, (prim, beyond, spread)
        # The lowest of n: its median under the normal approximation, so the A/A's own minimum sits near it.
        q = -NormalDist().inv_cdf(1 - 0.5 ** (1 / model.n))  # 2.90 for n = 368
        assert spread["lowest"] == pytest.approx(-q * spread["sd"])
        assert spread["lowest"] * 1.6 < d.min() < spread["lowest"] * 0.6


def test_without_repeats_the_spread_is_the_within_problem_one() -> None:
    """Reports holding only repeat means (the bundled Jev set's kind): σ_w is unknown, so the spread is that of
    D_i about its latent problem's mean, which a shift of whole problems does not enter."""
    model = Model()
    rng = np.random.default_rng(7)
    base, again = model.record(rng), model.record(rng)
    for report in (base, again):
        for item in report["items"]:
            item["samples"] = []
    shifted = {**again, "items": [dict(item) for item in again["items"]]}
    for item in shifted["items"]:  # every rendering of a problem moved alike, problem by problem
        away = 0.06 * (int(item["latent_instance_id"].rsplit("_", 1)[1]) % 5)  # the same OVL lost by each
        item["p_noul"] = item["p_noul"] + away * (1 if item["p_noul"] >= item["p_star"] else -1)
    plain = chance_spreads(again, base, ["noul"])["noul"]
    moved = chance_spreads(shifted, base, ["noul"])["noul"]
    assert plain["basis"] == moved["basis"] == "within-problem"
    d = np.array([row["d"]["noul"] for row in rendering_moves(shifted, base, ["noul"])])
    assert 0 < moved["sd"] < 0.7 * d.std()  # the problems' own shifts left out
    assert moved["sd"] == pytest.approx(plain["sd"], rel=0.25)
