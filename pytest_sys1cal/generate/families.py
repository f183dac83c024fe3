"""The six Sys1Cal families as exact latent problems: drawn into a target band, shown in several views.

A problem keeps its parameters as exact fractions and integers; `p_star` is computed from them with
`Fraction` arithmetic, and every view shows the same parameters (or exact multiples, exact ratios of
them), so all renderings of a latent have the same p* with no rounding anywhere.

A view is the family-specific body of one representation (the record layer adds the `representation`
tag and builds the distractor from `direct`); which views a family has is its row of the matrix in
`pytest_sys1cal.generate`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, Protocol

from .exact import (
    ALL_BANDS,
    INTERIOR_BANDS,
    Band,
    grid_point,
    json_number,
    odds_text,
    probability_on_grid,
    prose_number,
    ratio_text,
)

FINE = 10_000  # explicit and compound probabilities: up to four decimal places
COARSE = 100  # priors, likelihoods, trial probabilities: two places, so natural frequencies stay readable
TARGET = 10**6  # resolution of the target p* that constructions aim at before their own rounding

ALL_REPRESENTATIONS = ("direct", "counts", "scaled_counts", "ratio", "table", "prose", "nested", "distractor")


@dataclass(frozen=True)
class Scales:
    """The factors the counts and scaled_counts views multiply whole-number counts by (drawn per latent)."""

    counts: int
    scaled_counts: int


class Problem(Protocol):
    @property
    def question(self) -> str:
        """The family question, kept in metadata only: the model sees the state and the proposition."""
        ...

    @property
    def p_star(self) -> Fraction: ...

    def parameters(self) -> dict[str, Any]: ...

    def views(self, scales: Scales) -> dict[str, Any]: ...


def _on_grid(rng: random.Random, band: Band, denominator: int) -> Fraction:
    k = grid_point(rng, band, denominator)
    if k is None:
        raise ValueError(f"band {band.label} has no point on the 1/{denominator} grid")
    return Fraction(k, denominator)


def _field_table(statistics: dict[str, Any]) -> dict[str, Any]:
    return {"table": [{"field": key, "value": value} for key, value in statistics.items()]}


# ---------------------------------------------------------------------------------------------- explicit


@dataclass(frozen=True)
class ExplicitProbability:
    p_a: Fraction
    question: ClassVar[str] = "Given the fully specified state, what is the probability that event A occurs?"

    @property
    def p_star(self) -> Fraction:
        return self.p_a

    def parameters(self) -> dict[str, Any]:
        return {"p_A": json_number(self.p_a)}

    def views(self, scales: Scales) -> dict[str, Any]:
        p, q = self.p_a, 1 - self.p_a
        return {
            "direct": {"p_A": json_number(p), "p_not_A": json_number(q)},
            "ratio": {"probability_ratio_A_to_not_A": odds_text(p)},
            "table": {
                "table": [
                    {"outcome": "A", "probability": json_number(p)},
                    {"outcome": "not_A", "probability": json_number(q)},
                ]
            },
            "nested": {"outcomes": {"A": {"probability": json_number(p)}, "not_A": {"probability": json_number(q)}}},
            "prose": f"Event A occurs with probability {prose_number(p)}; "
            f"otherwise not_A occurs, with probability {prose_number(q)}.",
        }


def draw_explicit(rng: random.Random, band: Band, index: int) -> ExplicitProbability:
    return ExplicitProbability(_on_grid(rng, band, FINE))


# --------------------------------------------------------------------------------------------- frequency

DRAW_OBJECT = "one object drawn uniformly at random from the collection"


@dataclass(frozen=True)
class Frequency:
    zor: int
    nif: int
    question: ClassVar[str] = (
        "An item is sampled uniformly from the collection. What is the probability distribution over item labels?"
    )

    @property
    def p_star(self) -> Fraction:
        return Fraction(self.zor, self.zor + self.nif)

    def parameters(self) -> dict[str, Any]:
        return {"counts": {"zor": self.zor, "nif": self.nif}}

    def _counts(self, scale: int) -> dict[str, Any]:
        return {"counts": {"zor": self.zor * scale, "nif": self.nif * scale}, "sampling": DRAW_OBJECT}

    def views(self, scales: Scales) -> dict[str, Any]:
        return {
            "direct": self._counts(1),
            "counts": self._counts(scales.counts),
            "scaled_counts": self._counts(scales.scaled_counts),
            "ratio": {"probability_ratio_zor_to_nif": ratio_text(self.zor, self.nif)},
            "table": {
                "table": [{"label": "zor", "count": self.zor}, {"label": "nif", "count": self.nif}],
                "sampling": DRAW_OBJECT,
            },
            "nested": {"collection": {"zor": {"count": self.zor}, "nif": {"count": self.nif}}, "sampling": DRAW_OBJECT},
            "prose": f"A collection holds {self.zor} objects labelled zor and {self.nif} objects labelled nif. "
            "One object is drawn from it uniformly at random.",
        }


def draw_frequency(rng: random.Random, band: Band, index: int) -> Frequency:
    while True:
        total = rng.randint(10, 999)
        # Small totals have no count inside the narrow end bands (e.g. below 1 % needs more than 100 items).
        zor = grid_point(rng, band, total)
        if zor is not None:
            return Frequency(zor, total - zor)


# ---------------------------------------------------------------------------------------------- compound


@dataclass(frozen=True)
class Complement:
    p_a: Fraction
    question: ClassVar[str] = "Event A has the supplied probability. What is the probability that A does not occur?"

    @property
    def p_star(self) -> Fraction:
        return 1 - self.p_a

    def parameters(self) -> dict[str, Any]:
        return {"subtask": "complement", "p_A": json_number(self.p_a), "query": "not_A"}

    def views(self, scales: Scales) -> dict[str, Any]:
        statistics = self.parameters()
        return {
            "direct": statistics,
            "table": _field_table(statistics),
            "nested": {"events": {"A": {"probability": json_number(self.p_a)}}, "target": {"A": "does not occur"}},
            "prose": f"Event A occurs with probability {prose_number(self.p_a)}. "
            "The target event is that A does not occur.",
        }


@dataclass(frozen=True)
class TwoEvents:
    """Independent A and B; the target is both (intersection) or at least one (union)."""

    subtask: str
    p_a: Fraction
    p_b: Fraction

    @property
    def question(self) -> str:
        wanted = "both occur" if self.subtask == "intersection" else "at least one occurs"
        return f"Events A and B are independent. What is the probability that {wanted}?"

    @property
    def p_star(self) -> Fraction:
        both = self.p_a * self.p_b
        return both if self.subtask == "intersection" else self.p_a + self.p_b - both

    def parameters(self) -> dict[str, Any]:
        query = "A_and_B" if self.subtask == "intersection" else "A_or_B"
        return {
            "subtask": self.subtask,
            "p_A": json_number(self.p_a),
            "p_B": json_number(self.p_b),
            "independent": True,
            "query": query,
        }

    def views(self, scales: Scales) -> dict[str, Any]:
        statistics = self.parameters()
        if self.subtask == "intersection":
            target: dict[str, Any] = {"A": "occurs", "B": "occurs"}
            wanted = "both A and B occur"
        else:
            target = {"at_least_one_of": ["A", "B"]}
            wanted = "at least one of A and B occurs"
        return {
            "direct": statistics,
            "table": _field_table(statistics),
            "nested": {
                "events": {"A": {"probability": json_number(self.p_a)}, "B": {"probability": json_number(self.p_b)}},
                "dependence": "independent",
                "target": target,
            },
            "prose": f"Events A and B are independent. A occurs with probability {prose_number(self.p_a)} and B occurs "
            f"with probability {prose_number(self.p_b)}. The target event is that {wanted}.",
        }


@dataclass(frozen=True)
class RepeatedTrials:
    trials: int
    success: Fraction
    k: int
    at_least: bool

    @property
    def question(self) -> str:
        how = "at least" if self.at_least else "exactly"
        return (
            "Independent Bernoulli trials use the supplied success probability. "
            f"What is the probability of {how} k successes?"
        )

    @property
    def p_star(self) -> Fraction:
        counts = range(self.k, self.trials + 1) if self.at_least else (self.k,)
        p, q = self.success, 1 - self.success
        return sum((math.comb(self.trials, j) * p**j * q ** (self.trials - j) for j in counts), Fraction(0))

    def parameters(self) -> dict[str, Any]:
        query = "at_least_k_successes" if self.at_least else "exactly_k_successes"
        return {
            "subtask": "repeated_trials",
            "n": self.trials,
            "success_probability": json_number(self.success),
            "independent": True,
            "k": self.k,
            "query": query,
        }

    def views(self, scales: Scales) -> dict[str, Any]:
        statistics = self.parameters()
        how = "at_least" if self.at_least else "exactly"
        return {
            "direct": statistics,
            "table": _field_table(statistics),
            "nested": {
                "trials": {
                    "count": self.trials,
                    "success_probability": json_number(self.success),
                    "dependence": "independent",
                },
                "target": {"successes": {how: self.k}},
            },
            "prose": f"Each of {self.trials} independent trials succeeds with probability "
            f"{prose_number(self.success)}. "
            f"The target event is that the number of successes is {how.replace('_', ' ')} {self.k}.",
        }


@dataclass(frozen=True)
class Hypergeometric:
    good: int
    bad: int
    draws: int
    k: int
    at_least: bool

    @property
    def question(self) -> str:
        how = "at least" if self.at_least else "exactly"
        return f"A sample is drawn without replacement. What is the probability of {how} k good items?"

    @property
    def p_star(self) -> Fraction:
        counts = range(self.k, self.draws + 1) if self.at_least else (self.k,)
        ways = sum(math.comb(self.good, j) * math.comb(self.bad, self.draws - j) for j in counts)
        return Fraction(ways, math.comb(self.good + self.bad, self.draws))

    def parameters(self) -> dict[str, Any]:
        query = "at_least_k_good" if self.at_least else "exactly_k_good"
        return {
            "subtask": "hypergeometric",
            "good": self.good,
            "bad": self.bad,
            "draws_without_replacement": self.draws,
            "k_good": self.k,
            "query": query,
        }

    def views(self, scales: Scales) -> dict[str, Any]:
        statistics = self.parameters()
        how = "at_least" if self.at_least else "exactly"
        return {
            "direct": statistics,
            "table": _field_table(statistics),
            "nested": {
                "urn": {"good": self.good, "bad": self.bad},
                "draw": {"count": self.draws, "replacement": False},
                "target": {"good_items": {how: self.k}},
            },
            "prose": f"An urn holds {self.good} good items and {self.bad} bad items. A sample of {self.draws} "
            f"items is drawn without replacement. The target event is that the sample contains "
            f"{how.replace('_', ' ')} {self.k} good items.",
        }


COMPOUND_SUBTASKS = ("complement", "intersection", "union", "repeated_trials", "hypergeometric")


def _product_pair(rng: random.Random, product: Fraction) -> tuple[Fraction, Fraction] | None:
    """Two four-place probabilities whose product is close to `product` (None when rounding hits 0 or 1)."""
    lowest = math.ceil(product * FINE)
    if lowest >= FINE:
        return None
    x = Fraction(rng.randint(lowest, FINE - 1), FINE)
    y = Fraction(round(product / x * FINE), FINE)
    if not 0 < y < 1:
        return None
    return (x, y) if rng.random() < 0.5 else (y, x)


def _draw_two_events(rng: random.Random, band: Band, subtask: str) -> TwoEvents:
    while True:
        target = _on_grid(rng, band, TARGET)
        # A union's complement, "neither", is a product of complements, so both cases aim at a product.
        pair = _product_pair(rng, target if subtask == "intersection" else 1 - target)
        if pair is None:
            continue
        a, b = pair if subtask == "intersection" else (1 - pair[0], 1 - pair[1])
        problem = TwoEvents(subtask, a, b)
        if band.contains(problem.p_star):
            return problem


def _draw_repeated(rng: random.Random, band: Band) -> RepeatedTrials:
    # "Exactly k" never exceeds 0.45 for 3 or more trials, so "at least k" is needed for the upper bands.
    while True:
        trials = rng.randint(3, 10)
        at_least = rng.random() < 0.5
        k = rng.randint(1, trials) if at_least else rng.randint(1, trials - 1)
        problem = RepeatedTrials(trials, probability_on_grid(rng, COARSE), k, at_least)
        if band.contains(problem.p_star):
            return problem


def _draw_hypergeometric(rng: random.Random, band: Band) -> Hypergeometric:
    while True:
        good, bad = rng.randint(1, 30), rng.randint(1, 30)
        draws = rng.randint(1, min(8, good + bad - 1))
        at_least = rng.random() < 0.5
        k = rng.randint(1, min(draws, good)) if at_least else rng.randint(max(0, draws - bad), min(draws, good))
        problem = Hypergeometric(good, bad, draws, k, at_least)
        if band.contains(problem.p_star):
            return problem


def draw_compound(rng: random.Random, band: Band, index: int) -> Problem:
    # Subtasks rotate with the latent index, so every block of five latents has one of each.
    subtask = COMPOUND_SUBTASKS[index % len(COMPOUND_SUBTASKS)]
    if subtask == "complement":
        return Complement(1 - _on_grid(rng, band, FINE))
    if subtask == "repeated_trials":
        return _draw_repeated(rng, band)
    if subtask == "hypergeometric":
        return _draw_hypergeometric(rng, band)
    return _draw_two_events(rng, band, subtask)


# ------------------------------------------------------------------------------------------- conditional

DRAW_RECORD = "one record drawn uniformly at random from the records with B"


@dataclass(frozen=True)
class Conditional:
    a_b: int
    a_not_b: int
    not_a_b: int
    not_a_not_b: int
    question: ClassVar[str] = (
        "Using the specified conditioning population B, what is the probability distribution over A versus not_A?"
    )

    @property
    def p_star(self) -> Fraction:
        return Fraction(self.a_b, self.a_b + self.not_a_b)

    def _statistics(self, scale: int) -> dict[str, Any]:
        return {
            "contingency": {
                "A": {"B": self.a_b * scale, "not_B": self.a_not_b * scale},
                "not_A": {"B": self.not_a_b * scale, "not_B": self.not_a_not_b * scale},
            },
            "query": "P(A|B)",
            "sampling": DRAW_RECORD,
        }

    def parameters(self) -> dict[str, Any]:
        return self._statistics(1)

    def views(self, scales: Scales) -> dict[str, Any]:
        return {
            "direct": self._statistics(1),
            "counts": self._statistics(scales.counts),
            "scaled_counts": self._statistics(scales.scaled_counts),
            "table": {
                "table": [
                    {"row": "A", "B": self.a_b, "not_B": self.a_not_b},
                    {"row": "not_A", "B": self.not_a_b, "not_B": self.not_a_not_b},
                ],
                "query": "P(A|B)",
                "sampling": DRAW_RECORD,
            },
            # Grouped by the conditioning event first: the same counts, transposed.
            "nested": {
                "records": {
                    "B": {"A": self.a_b, "not_A": self.not_a_b},
                    "not_B": {"A": self.a_not_b, "not_A": self.not_a_not_b},
                },
                "query": "P(A|B)",
                "sampling": DRAW_RECORD,
            },
            "prose": f"Among the records, {self.a_b} have both A and B, {self.a_not_b} have A but not B, "
            f"{self.not_a_b} have B but not A, and {self.not_a_not_b} have neither A nor B. "
            "One record is drawn uniformly at random from the records that have B.",
        }


def draw_conditional(rng: random.Random, band: Band, index: int) -> Conditional:
    while True:
        with_b = rng.randint(10, 999)
        a_b = grid_point(rng, band, with_b)
        if a_b is not None:
            return Conditional(a_b, rng.randint(1, 999), with_b - a_b, rng.randint(1, 999))


# ------------------------------------------------------------------------------------ bayes (one and many)


def _posterior(prior: Fraction, steps: tuple[tuple[Fraction, Fraction], ...]) -> Fraction:
    h, not_h = prior, 1 - prior
    for like_h, like_not_h in steps:
        h, not_h = h * like_h, not_h * like_not_h
    return h / (h + not_h)


def _solve_likelihoods(rng: random.Random, band: Band, odds_before: Fraction) -> tuple[Fraction, Fraction] | None:
    """A two-place (P(E|H), P(E|not_H)) whose likelihood ratio moves `odds_before` close to a target in band."""
    target = _on_grid(rng, band, TARGET)
    needed = target / (1 - target) / odds_before
    like_h = probability_on_grid(rng, COARSE)
    like_not_h = Fraction(round(like_h / needed * COARSE), COARSE)
    if 0 < like_not_h < 1:
        return like_h, like_not_h
    like_not_h = probability_on_grid(rng, COARSE)
    like_h = Fraction(round(needed * like_not_h * COARSE), COARSE)
    return (like_h, like_not_h) if 0 < like_h < 1 else None


@dataclass(frozen=True)
class Bayes:
    prior: Fraction
    like_h: Fraction
    like_not_h: Fraction
    question: ClassVar[str] = (
        "Given the prior probabilities and likelihoods, what is the posterior distribution after observing the event?"
    )

    @property
    def p_star(self) -> Fraction:
        return _posterior(self.prior, ((self.like_h, self.like_not_h),))

    def parameters(self) -> dict[str, Any]:
        return {
            "priors": {"H": json_number(self.prior), "not_H": json_number(1 - self.prior)},
            "likelihood_event": {"H": json_number(self.like_h), "not_H": json_number(self.like_not_h)},
            "observed_event": True,
        }

    def _natural_frequencies(self, scale: int) -> dict[str, Any]:
        h, h_and_e, not_h_and_e = self.prior, self.prior * self.like_h, (1 - self.prior) * self.like_not_h
        # The smallest population in which every branch of the frequency tree is a whole number, times scale.
        cases = math.lcm(h.denominator, h_and_e.denominator, not_h_and_e.denominator) * scale
        with_h = int(h * cases)
        return {
            "cases": cases,
            "cases_with_H": with_h,
            "cases_with_H_and_E": int(h_and_e * cases),
            "cases_with_not_H": cases - with_h,
            "cases_with_not_H_and_E": int(not_h_and_e * cases),
            "observed_event": True,
        }

    def views(self, scales: Scales) -> dict[str, Any]:
        rows = [
            {"hypothesis": "H", "prior": json_number(self.prior), "P(E|hypothesis)": json_number(self.like_h)},
            {
                "hypothesis": "not_H",
                "prior": json_number(1 - self.prior),
                "P(E|hypothesis)": json_number(self.like_not_h),
            },
        ]
        return {
            "direct": self.parameters(),
            "counts": self._natural_frequencies(scales.counts),
            "scaled_counts": self._natural_frequencies(scales.scaled_counts),
            "ratio": {
                "prior_odds_H_to_not_H": odds_text(self.prior),
                "likelihood_ratio_H_to_not_H": ratio_text(self.like_h, self.like_not_h),
                "observed_event": True,
            },
            "table": {"table": rows, "observed_event": True},
            "nested": {
                "hypotheses": {row["hypothesis"]: {k: v for k, v in row.items() if k != "hypothesis"} for row in rows},
                "observed_event": True,
            },
            "prose": f"Before the evidence, hypothesis H has probability {prose_number(self.prior)} and not_H has "
            f"probability {prose_number(1 - self.prior)}. Event E has probability {prose_number(self.like_h)} "
            f"if H holds and {prose_number(self.like_not_h)} if not_H holds. E has been observed.",
        }


def draw_bayes(rng: random.Random, band: Band, index: int) -> Bayes:
    while True:
        prior = probability_on_grid(rng, COARSE)
        likelihoods = _solve_likelihoods(rng, band, prior / (1 - prior))
        if likelihoods is not None:
            problem = Bayes(prior, *likelihoods)
            if band.contains(problem.p_star):
                return problem


INDEPENDENCE = "Evidence items are conditionally independent given H or not_H."


@dataclass(frozen=True)
class SequentialBayes:
    prior: Fraction
    steps: tuple[tuple[Fraction, Fraction], ...]
    question: ClassVar[str] = (
        "After all listed conditionally independent evidence items are observed, "
        "what is the posterior distribution over H versus not_H?"
    )

    @property
    def p_star(self) -> Fraction:
        return _posterior(self.prior, self.steps)

    def _statistics(self) -> dict[str, Any]:
        return {
            "prior_H": json_number(self.prior),
            "evidence_sequence": [
                {"E_given_H": json_number(h), "E_given_not_H": json_number(n)} for h, n in self.steps
            ],
            "observed_prefix_length": len(self.steps),
            "conditional_independence": INDEPENDENCE,
        }

    def parameters(self) -> dict[str, Any]:
        # Metadata only: the trajectory ends in p*, so no view may carry it (Sys1Cal-v1's leak).
        trajectory = [_posterior(self.prior, self.steps[:n]) for n in range(len(self.steps) + 1)]
        return {**self._statistics(), "posterior_trajectory": [float(p) for p in trajectory]}

    def views(self, scales: Scales) -> dict[str, Any]:
        evidence = "; ".join(
            f"evidence {n} has probability {prose_number(h)} under H and {prose_number(not_h)} under not_H"
            for n, (h, not_h) in enumerate(self.steps, start=1)
        )
        return {
            "direct": self._statistics(),
            "ratio": {
                "prior_odds_H_to_not_H": odds_text(self.prior),
                "likelihood_ratios_H_to_not_H": [ratio_text(h, n) for h, n in self.steps],
                "observed_prefix_length": len(self.steps),
                "conditional_independence": INDEPENDENCE,
            },
            "table": {
                "table": [
                    {"step": n, "E_given_H": json_number(h), "E_given_not_H": json_number(not_h)}
                    for n, (h, not_h) in enumerate(self.steps, start=1)
                ],
                "prior_H": json_number(self.prior),
                "observed_prefix_length": len(self.steps),
                "conditional_independence": INDEPENDENCE,
            },
            "nested": {
                "hypotheses": {
                    "H": {
                        "prior": json_number(self.prior),
                        "evidence_likelihoods": [json_number(h) for h, _ in self.steps],
                    },
                    "not_H": {
                        "prior": json_number(1 - self.prior),
                        "evidence_likelihoods": [json_number(n) for _, n in self.steps],
                    },
                },
                "observed_prefix_length": len(self.steps),
                "conditional_independence": INDEPENDENCE,
            },
            "prose": f"Before any evidence, hypothesis H has probability {prose_number(self.prior)} and not_H has "
            f"probability {prose_number(1 - self.prior)}. Then {len(self.steps)} evidence items are observed, "
            f"conditionally independent given H or not_H: {evidence}.",
        }


def draw_sequential(rng: random.Random, band: Band, index: int) -> SequentialBayes:
    while True:
        prior = probability_on_grid(rng, COARSE)
        # 3 to 6 steps in all: the first ones at random, the last one chosen to land in the band.
        steps = tuple(
            (probability_on_grid(rng, COARSE), probability_on_grid(rng, COARSE)) for _ in range(rng.randint(2, 5))
        )
        before = _posterior(prior, steps)
        last = _solve_likelihoods(rng, band, before / (1 - before))
        if last is not None:
            problem = SequentialBayes(prior, (*steps, last))
            if band.contains(problem.p_star):
                return problem


# ---------------------------------------------------------------------------------------------- families


@dataclass(frozen=True)
class Family:
    name: str
    difficulty: int
    positive: str  # the source outcome whose probability is p*
    negative: str
    proposition: str
    representations: tuple[str, ...]
    bands: tuple[Band, ...]
    draw: Callable[[random.Random, Band, int], Problem]
    states_answer: bool = False  # explicit_probability shows p* by design; no other family may


FAMILIES: tuple[Family, ...] = (
    Family(
        name="explicit_probability",
        difficulty=1,
        positive="A",
        negative="not_A",
        proposition="Event A is true.",
        representations=("direct", "ratio", "table", "prose", "nested", "distractor"),
        bands=ALL_BANDS,
        draw=draw_explicit,
        states_answer=True,
    ),
    Family(
        name="frequency",
        difficulty=2,
        positive="zor",
        negative="nif",
        proposition="The sampled object is a zor.",
        representations=ALL_REPRESENTATIONS,
        bands=INTERIOR_BANDS,
        draw=draw_frequency,
    ),
    Family(
        name="compound",
        difficulty=3,
        positive="target",
        negative="not_target",
        proposition="The target compound event is true.",
        representations=("direct", "table", "prose", "nested", "distractor"),
        bands=INTERIOR_BANDS,
        draw=draw_compound,
    ),
    Family(
        name="conditional",
        difficulty=4,
        positive="A",
        negative="not_A",
        proposition="Event A is true.",
        representations=("direct", "counts", "scaled_counts", "table", "prose", "nested", "distractor"),
        bands=INTERIOR_BANDS,
        draw=draw_conditional,
    ),
    Family(
        name="bayes",
        difficulty=5,
        positive="H",
        negative="not_H",
        proposition="The latent hypothesis H is true.",
        representations=ALL_REPRESENTATIONS,
        bands=INTERIOR_BANDS,
        draw=draw_bayes,
    ),
    Family(
        name="sequential_bayes",
        difficulty=6,
        positive="H",
        negative="not_H",
        proposition="The latent hypothesis H is true.",
        representations=("direct", "ratio", "table", "prose", "nested", "distractor"),
        bands=INTERIOR_BANDS,
        draw=draw_sequential,
    ),
)
