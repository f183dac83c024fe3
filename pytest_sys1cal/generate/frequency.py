"""The frequency family: one object drawn from a collection of zor and nif objects."""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from ..bands import INTERIOR_BANDS, Band
from .exact import grid_point, ratio_text
from .problem import ALL_REPRESENTATIONS, Family, Scales

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


FREQUENCY = Family(
    name="frequency",
    difficulty=2,
    positive="zor",
    negative="nif",
    proposition="The sampled object is a zor.",
    representations=ALL_REPRESENTATIONS,
    bands=INTERIOR_BANDS,
    draw=draw_frequency,
)
