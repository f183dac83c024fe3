"""The explicit_probability family: P(A) stated outright (every view but the two count views)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from ..bands import ALL_BANDS, Band
from .exact import FINE, json_number, odds_text, on_grid, prose_number
from .problem import Family, Scales


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
    return ExplicitProbability(on_grid(rng, band, FINE))


EXPLICIT_PROBABILITY = Family(
    name="explicit_probability",
    difficulty=1,
    positive="A",
    negative="not_A",
    proposition="Event A is true.",
    representations=("direct", "ratio", "table", "prose", "nested", "distractor"),
    bands=ALL_BANDS,
    draw=draw_explicit,
    states_answer=True,
)
