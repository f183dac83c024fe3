"""The sequential upgrade comparison's statistics (issue 40; docs/statistics.md §7): the α-spending boundaries
against published figures and against an independent simulation of the look statistics, their monotonicity,
the last look equal to the fixed design, seeded reproducibility, replays of a recording stopped early, and
the size that decides an inconclusive comparison."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import numpy as np
import pytest

from pytest_sys1cal.analysis.decisive import decisive_size
from pytest_sys1cal.analysis.sequential import (
    CONTINUE,
    SequentialError,
    final_p_values,
    interim_looks,
    paired_from_reports,
    run_looks,
    sequential_compare,
)
from pytest_sys1cal.analysis.sequential_design import (
    OBRIEN_FLEMING,
    POCOCK,
    SPENDING,
    Design,
    boundaries,
    problem_order,
    rounds_of,
    spent,
)
from pytest_sys1cal.analysis.upgrade import Margin, compare_reports
from pytest_sys1cal.vocabulary import Verdict
from tests.runs import GOLDEN

FIVE = (0.2, 0.4, 0.6, 0.8, 1.0)
NORMAL = NormalDist()


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    return {
        name: json.loads((GOLDEN / f"{name}-report.json").read_text(encoding="utf-8"))
        for name in ("semif", "gemma", "typed-gguf")
    }


def only_problems(report: dict, latents: set[str]) -> dict:
    return {**report, "items": [item for item in report["items"] if item["latent_instance_id"] in latents]}


# ---------------------------------------------------------------------------------------------- the boundaries


def test_obrien_fleming_spending_at_standard_fractions_is_its_closed_form() -> None:
    # α(t) = 2 − 2Φ(z_{1−α/2}/√t), computed here with the standard library alone
    for t in (0.25, 0.5, 0.75):
        expected = 2 * (1 - NORMAL.cdf(NORMAL.inv_cdf(1 - 0.025 / 2) / math.sqrt(t)))
        assert spent(OBRIEN_FLEMING, 0.025, t) == pytest.approx(expected, rel=1e-9)
    assert spent(OBRIEN_FLEMING, 0.025, 0.5) == pytest.approx(0.001525, abs=2e-6)
    assert spent(POCOCK, 0.025, 0.5) == pytest.approx(0.025 * math.log(1 + (math.e - 1) / 2), rel=1e-12)
    for spending in SPENDING:
        assert spent(spending, 0.025, 1.0) == 0.025 and spent(spending, 0.025, 0.0) == 0.0


@pytest.mark.parametrize(
    ("spending", "published"),
    [
        # Lan–DeMets one-sided α = 0.025, five equally spaced looks (Reboussin et al. 2000's ld98; gsDesign's
        # sfLDOF and sfLDPocock print the same to three decimals)
        (OBRIEN_FLEMING, (4.877, 3.357, 2.680, 2.290, 2.031)),
        (POCOCK, (2.438, 2.427, 2.410, 2.397, 2.386)),
    ],
)
def test_boundaries_match_published_figures(spending: str, published: tuple[float, ...]) -> None:
    assert boundaries(FIVE, 0.025, spending) == pytest.approx(published, abs=6e-4)


@pytest.mark.parametrize("spending", SPENDING)
def test_boundaries_spend_what_the_function_says_in_an_independent_simulation(spending: str) -> None:
    """Brownian motion observed at unequal fractions (the canonical joint law of the look statistics), 200,000
    seeded paths: the share that has crossed by look k is α(t_k), within 4 Monte Carlo SE."""
    fractions = (0.15, 0.4, 0.55, 0.8, 1.0)
    bounds = np.asarray(boundaries(fractions, 0.05, spending))
    rng = np.random.default_rng(7)
    steps = np.diff((0.0, *fractions))
    paths = np.cumsum(rng.standard_normal((200_000, len(fractions))) * np.sqrt(steps), axis=1)
    z = paths / np.sqrt(fractions)
    crossed_by = np.maximum.accumulate(z >= bounds, axis=1).mean(axis=0)
    for k, t in enumerate(fractions):
        target = spent(spending, 0.05, t)
        assert abs(crossed_by[k] - target) <= 4 * math.sqrt(target * (1 - target) / 200_000) + 1e-5, (
            k,
            crossed_by[k],
            target,
        )


@pytest.mark.parametrize("spending", SPENDING)
def test_boundaries_fall_with_the_level_and_nominal_levels_rise_over_the_looks(spending: str) -> None:
    design = Design.of(92, 10, 0.05, spending)
    levels = (0.05 / 3, 0.05 / 2, 0.05)
    bounds = [np.asarray(design.critical(level)) for level in levels]
    for stricter, looser in zip(bounds, bounds[1:], strict=False):
        assert np.all(stricter >= looser) and np.any(stricter > looser)
    for level in levels:
        nominal = np.asarray(design.nominal(level))
        assert np.all(np.diff(nominal) >= 0) and nominal[-1] < level  # the last look pays for the earlier ones
        finite = np.asarray([c for c in design.critical(level) if math.isfinite(c)])
        if spending == OBRIEN_FLEMING:
            assert np.all(np.diff(finite) < 0)
        assert finite[-1] > NORMAL.inv_cdf(1 - level)
    spending_curve = [spent(spending, 0.05, t) for t in np.linspace(0, 1, 21)]
    assert np.all(np.diff(spending_curve) >= 0)


def test_one_look_is_the_fixed_test() -> None:
    design = Design.of(92, 1, 0.05)
    for level in (0.05 / 3, 0.025, 0.05):
        assert design.nominal(level) == (level,)
        assert design.critical(level)[0] == pytest.approx(NORMAL.inv_cdf(1 - level), abs=1e-12)


def test_a_design_refuses_what_it_cannot_be() -> None:
    with pytest.raises(ValueError, match="unknown spending function 'linear'"):
        Design.of(92, 10, 0.05, "linear")
    with pytest.raises(ValueError, match="information fractions must end at 1"):
        boundaries((0.5, 0.9), 0.05, POCOCK)
    with pytest.raises(ValueError, match="rounds must be at least 1"):
        Design.of(92, 0)
    assert Design.of(3, 10).ends == (1, 2, 3)  # at most a round per problem


# ---------------------------------------------------------------------------------------------- rounds and order


def test_the_order_is_seeded_and_the_rounds_partition_it() -> None:
    ids = [f"latent-{j:03d}" for j in range(92) for _ in range(4)]
    first, again, other = problem_order(ids, 5), problem_order(ids[::-1], 5), problem_order(ids, 6)
    assert first == again and first != other and sorted(first) == sorted(set(ids))
    design = Design.of(92, 10)
    rounds = rounds_of(first, design)
    assert [len(r) for r in rounds] == list(np.diff((0, *design.ends)))
    assert [latent for r in rounds for latent in r] == first
    assert max(map(len, rounds)) - min(map(len, rounds)) <= 1


# ---------------------------------------------------------------------------------------------- the comparison


@pytest.mark.parametrize(
    "pair", [("semif", "gemma"), ("gemma", "semif"), ("semif", "typed-gguf"), ("typed-gguf", "semif")]
)
@pytest.mark.parametrize("margin", [Margin(), Margin(0.05, 0.02), Margin(0.1, 0.0)])
def test_with_one_round_the_verdicts_are_the_fixed_designs(reports, pair, margin) -> None:
    new, base = (reports[name] for name in pair)
    margins = dict.fromkeys(("noul", "choice", "score"), margin)
    fixed = compare_reports(new, base, margins=margins, seed=3)
    sequential = sequential_compare(new, base, rounds=1, spending=OBRIEN_FLEMING, margins=margins, seed=3)
    assert sequential["stopped"] and sequential["look"] == 1
    assert {p: m["standing"] for p, m in sequential["metrics"].items()} == {
        p: m["verdict"] for p, m in fixed["metrics"].items()
    }
    for prim, metric in sequential["metrics"].items():
        assert metric["difference"] == pytest.approx(fixed["metrics"][prim]["difference"], abs=1e-15)


def test_it_stops_early_when_every_primitive_is_decided_and_a_replay_of_what_it_recorded_agrees(reports) -> None:
    new, base = reports["typed-gguf"], reports["semif"]
    full = sequential_compare(new, base, rounds=10, spending=OBRIEN_FLEMING, seed=3)
    assert full["stopped"] and full["look"] < 10, full  # a clear pass: Δ ≥ −0.013 on every primitive
    assert all(m["standing"] == Verdict.PASSED for m in full["metrics"].values())
    recorded = set(problem_order([i["latent_instance_id"] for i in base["items"]], 3)[: full["latent_problems"]])
    replay = sequential_compare(only_problems(new, recorded), base, rounds=10, spending=OBRIEN_FLEMING, seed=3)
    assert replay == full
    again = sequential_compare(new, base, rounds=10, spending=OBRIEN_FLEMING, seed=3)
    assert again == full


def test_a_partial_recording_goes_on_until_its_primitives_are_decided(reports) -> None:
    new, base = reports["semif"], reports["typed-gguf"]  # Choice drops by 0.11, Score by 0.013
    order = problem_order([i["latent_instance_id"] for i in base["items"]], 3)
    design = Design.of(92, 10)
    first = sequential_compare(
        only_problems(new, set(order[: design.ends[0]])), base, rounds=10, spending=OBRIEN_FLEMING, seed=3
    )
    assert first["look"] == 1 and not first["stopped"]
    assert {m["standing"] for m in first["metrics"].values()} == {CONTINUE}  # O'Brien–Fleming: nothing at 1/10
    whole = sequential_compare(new, base, rounds=10, spending=OBRIEN_FLEMING, seed=3)
    assert whole["metrics"]["choice"]["standing"] == Verdict.FAILED
    assert whole["stopped"] and all(m["standing"] != CONTINUE for m in whole["metrics"].values())
    assert whole["metrics"]["choice"]["decided_at"] <= whole["look"]


def test_a_recording_that_is_not_the_first_rounds_of_its_order_is_refused(reports) -> None:
    new, base = reports["semif"], reports["gemma"]
    order = problem_order([i["latent_instance_id"] for i in base["items"]], 3)
    wrong = only_problems(new, set(order[-9:]))
    with pytest.raises(
        SequentialError, match=r"not the first 9 of the order seeded 3 \(latent problem .+ comes later\)"
    ):
        sequential_compare(wrong, base, rounds=10, spending=OBRIEN_FLEMING, seed=3)
    half_round = only_problems(new, set(order[:5]))
    with pytest.raises(SequentialError, match="5 latent problems are recorded, which is not the end of a round"):
        sequential_compare(half_round, base, rounds=10, spending=OBRIEN_FLEMING, seed=3)


def test_each_look_is_the_same_computed_alone_or_with_all_and_handed_counts_are_the_seeds(reports) -> None:
    """run_looks computes every look's statistics at once and slices them, and takes the bootstrap's counts from
    a caller that drew them already (the simulation): both must be what look k alone and the seed give."""
    new, base = reports["semif"], reports["typed-gguf"]
    margins = dict.fromkeys(("noul", "choice", "score"), Margin())
    paired, recorded, problems = paired_from_reports(new, base, margins, 3)
    design = Design.of(problems, 10)
    every = interim_looks(paired, design, margins, design.rounds)
    for k in range(1, design.rounds + 1):
        alone = interim_looks(paired, design, margins, k)
        for field in ("difference", "se", "problems"):
            for prim, values in getattr(alone, field).items():
                np.testing.assert_array_equal(values, getattr(every, field)[prim][:k])
    counts = paired.clusters.resample_counts(np.random.default_rng(3), 2000)
    assert final_p_values(paired, margins, 3, 2000, counts) == final_p_values(paired, margins, 3, 2000)
    drawn = run_looks(paired, design, margins, recorded=recorded, alpha=0.05, seed=3, resamples=2000)
    handed = run_looks(paired, design, margins, recorded=recorded, alpha=0.05, seed=3, resamples=2000, counts=counts)
    assert (handed.look, handed.history) == (drawn.look, drawn.history) and drawn.stopped


# ---------------------------------------------------------------------------------------------- what would decide it


def test_the_decisive_size_leaves_the_worst_true_difference_undecided_one_time_in_five() -> None:
    margin, level, n, se = Margin(0.02, 0.01), 0.05, 365, 0.006
    size = decisive_size(n=n, se=se, latent_problems=92, margin=margin, level=level, repeats=10)
    se_new = se * math.sqrt(n / size["renderings"])
    z, gap = NORMAL.inv_cdf(1 - level), (margin.drop - margin.fail_drop) / 2
    undecided_at_middle = 2 * NORMAL.cdf(z - gap / se_new) - 1  # Δ̂' within (−δ₀ − z·se', −δ + z·se')
    assert 0.19 <= undecided_at_middle <= 0.2
    assert size["latent_problems"] == math.ceil(size["renderings"] * 92 / n)
    # anywhere else the chance to stay undecided is smaller
    for delta in (-0.012, -0.01, -0.02, 0.0):
        low, high = -margin.fail_drop - z * se_new, -margin.drop + z * se_new
        assert NORMAL.cdf((high - delta) / se_new) - NORMAL.cdf((low - delta) / se_new) < undecided_at_middle


def test_the_decisive_repeats_and_when_nothing_decides() -> None:
    margin, n, se, within, r = Margin(0.02, 0.01), 365, 0.0045, 0.02, 3
    size = decisive_size(n=n, se=se, latent_problems=92, margin=margin, level=0.05, repeats=r, within_sum=within)
    target = (0.005 / (NORMAL.inv_cdf(0.95) - NORMAL.inv_cdf(0.6))) ** 2
    shared = n * se**2 - within / r  # the part of n·se² that more repeats do not touch
    more = size["repeats"]
    assert shared + within / more <= n * target < shared + within / (more - 1)
    spread = decisive_size(n=n, se=0.012, latent_problems=92, margin=margin, level=0.05, repeats=r, within_sum=within)
    assert spread["repeats"] is None and spread["renderings"] is not None  # the shared part alone is too much
    unknown = decisive_size(n=n, se=se, latent_problems=92, margin=margin, level=0.05, repeats=1)
    assert unknown["repeats"] is None and unknown["renderings"] == size["renderings"]
    same = decisive_size(n=n, se=se, latent_problems=92, margin=Margin(0.02, 0.02), level=0.05, repeats=r)
    assert same["renderings"] is None and same["latent_problems"] is None
