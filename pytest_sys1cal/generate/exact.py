"""Exact numbers for generated problems: draws on a grid inside a probability band (bands.py), odds text.

Every probability a generated state shows is a decimal with at most four places (k / 10**4, or k / 100 for
the Bayes families), so the JSON literal Python writes for it (the shortest repr of the float) *is* that
decimal, and p* is an exact rational function of the literals the model sees.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

from ..bands import Band

FINE = 10_000  # explicit and compound probabilities: up to four decimal places
COARSE = 100  # priors, likelihoods, trial probabilities: two places, so natural frequencies stay readable
TARGET = 10**6  # resolution of the target p* that constructions aim at before their own rounding


def grid_point(rng: random.Random, band: Band, denominator: int) -> int | None:
    """A uniform k with k/denominator inside the band, or None when the grid has no point there."""
    low, high = band.low * denominator, band.high * denominator
    k_min = math.ceil(low) if band.low_closed else math.floor(low) + 1
    k_max = math.floor(high) if band.high_closed else math.ceil(high) - 1
    return rng.randint(k_min, k_max) if k_min <= k_max else None


def on_grid(rng: random.Random, band: Band, denominator: int) -> Fraction:
    """A uniform k/denominator inside the band; ValueError when the grid has no point there."""
    k = grid_point(rng, band, denominator)
    if k is None:
        raise ValueError(f"band {band.label} has no point on the 1/{denominator} grid")
    return Fraction(k, denominator)


def probability_on_grid(rng: random.Random, denominator: int) -> Fraction:
    """A uniform probability strictly between 0 and 1 on the grid 1/denominator."""
    return Fraction(rng.randint(1, denominator - 1), denominator)


def json_number(p: Fraction) -> float:
    """The JSON number for an exact decimal: its float, whose repr is the decimal itself."""
    return float(p)


def prose_number(p: Fraction) -> str:
    """The same decimal inside prose."""
    return repr(float(p))


def ratio_text(left: Fraction | int, right: Fraction | int) -> str:
    """left:right as coprime integers, e.g. 0.44 and 0.77 -> "4:7" (exact, never rounded)."""
    r = Fraction(left, right)
    return f"{r.numerator}:{r.denominator}"


def odds_text(p: Fraction) -> str:
    """p : (1 - p) as coprime integers; 0 -> "0:1", 1 -> "1:0"."""
    return f"{p.numerator}:{p.denominator - p.numerator}"
