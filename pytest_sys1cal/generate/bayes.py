"""The two Bayes families: bayes (a posterior after one piece of evidence) and sequential_bayes (after 3 to 6
conditionally independent ones), which share the posterior and the likelihood solver."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from ..bands import INTERIOR_BANDS, Band
from .exact import (
    COARSE,
    TARGET,
    json_number,
    odds_text,
    on_grid,
    probability_on_grid,
    prose_number,
    ratio_text,
)
from .problem import ALL_REPRESENTATIONS, Family, Scales


def _posterior(prior: Fraction, steps: tuple[tuple[Fraction, Fraction], ...]) -> Fraction:
    h, not_h = prior, 1 - prior
    for like_h, like_not_h in steps:
        h, not_h = h * like_h, not_h * like_not_h
    return h / (h + not_h)


def _solve_likelihoods(rng: random.Random, band: Band, odds_before: Fraction) -> tuple[Fraction, Fraction] | None:
    """A two-place (P(E|H), P(E|not_H)) whose likelihood ratio moves `odds_before` close to a target in band."""
    target = on_grid(rng, band, TARGET)
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


BAYES = Family(
    name="bayes",
    difficulty=5,
    positive="H",
    negative="not_H",
    proposition="The latent hypothesis H is true.",
    representations=ALL_REPRESENTATIONS,
    bands=INTERIOR_BANDS,
    draw=draw_bayes,
)

SEQUENTIAL_BAYES = Family(
    name="sequential_bayes",
    difficulty=6,
    positive="H",
    negative="not_H",
    proposition="The latent hypothesis H is true.",
    representations=("direct", "ratio", "table", "prose", "nested", "distractor"),
    bands=INTERIOR_BANDS,
    draw=draw_sequential,
)
