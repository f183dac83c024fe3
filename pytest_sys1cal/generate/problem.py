"""What every family module provides and shares: the `Family` record, the `Problem` protocol its draws
return, the `Scales` of the count views, and the field table view."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from ..bands import Band

ALL_REPRESENTATIONS = ("direct", "counts", "scaled_counts", "ratio", "table", "prose", "nested", "distractor")


@dataclass(frozen=True)
class Scales:
    """The factors the counts and scaled_counts views multiply whole-number counts by (drawn per latent)."""

    counts: int
    scaled_counts: int


class Problem(Protocol):
    """A latent problem: exact parameters, the p* they determine, and the family-specific body of each view
    (the record layer adds the `representation` tag and builds the distractor from `direct`)."""

    @property
    def question(self) -> str:
        """The family question, kept in metadata only: the model sees the state and the proposition."""
        ...

    @property
    def p_star(self) -> Fraction: ...

    def parameters(self) -> dict[str, Any]: ...

    def views(self, scales: Scales) -> dict[str, Any]: ...


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


def field_table(statistics: dict[str, Any]) -> dict[str, Any]:
    """The table view of flat statistics: one {field, value} row per entry."""
    return {"table": [{"field": key, "value": value} for key, value in statistics.items()]}
