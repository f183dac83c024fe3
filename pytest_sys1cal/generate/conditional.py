"""The conditional family: P(A|B) from a 2 × 2 contingency of record counts."""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from ..bands import INTERIOR_BANDS, Band
from .exact import grid_point
from .problem import Family, Scales

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


CONDITIONAL = Family(
    name="conditional",
    difficulty=4,
    positive="A",
    negative="not_A",
    proposition="Event A is true.",
    representations=("direct", "counts", "scaled_counts", "table", "prose", "nested", "distractor"),
    bands=INTERIOR_BANDS,
    draw=draw_conditional,
)
