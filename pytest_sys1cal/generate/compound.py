"""The compound family: five subtasks that combine given probabilities (complement, intersection and union
of independent events, repeated trials, draws without replacement), rotating with the latent index."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from ..bands import INTERIOR_BANDS, Band
from .exact import COARSE, FINE, TARGET, json_number, on_grid, probability_on_grid, prose_number
from .problem import Family, Problem, Scales, field_table


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
            "table": field_table(statistics),
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
            "table": field_table(statistics),
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
            "table": field_table(statistics),
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
            "table": field_table(statistics),
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
        target = on_grid(rng, band, TARGET)
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
        return Complement(1 - on_grid(rng, band, FINE))
    if subtask == "repeated_trials":
        return _draw_repeated(rng, band)
    if subtask == "hypergeometric":
        return _draw_hypergeometric(rng, band)
    return _draw_two_events(rng, band, subtask)


COMPOUND = Family(
    name="compound",
    difficulty=3,
    positive="target",
    negative="not_target",
    proposition="The target compound event is true.",
    representations=("direct", "table", "prose", "nested", "distractor"),
    bands=INTERIOR_BANDS,
    draw=draw_compound,
)
