"""The eleven probability bands of p* that Sys1Cal-v1 labels, with exact, possibly open, ends: the generator
draws each latent problem into one (generate/), the contamination check stratifies by them (analysis/). Pure:
no file, no numpy."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Band:
    """A probability band as Sys1Cal-v1 labels it, with exact, possibly open, ends."""

    label: str
    low: Fraction
    high: Fraction
    low_closed: bool
    high_closed: bool

    def contains(self, p: Fraction) -> bool:
        above = p >= self.low if self.low_closed else p > self.low
        below = p <= self.high if self.high_closed else p < self.high
        return above and below


def _make_band(label: str, low: str, high: str, low_closed: bool, high_closed: bool) -> Band:
    return Band(label, Fraction(low), Fraction(high), low_closed, high_closed)


# The eleven `probability_band` values of Sys1Cal-v1, in order (checked against all 365 public items).
ZERO = _make_band("0", "0", "0", True, True)
ONE = _make_band("1", "1", "1", True, True)
INTERIOR_BANDS: tuple[Band, ...] = (
    _make_band("(0,0.01)", "0", "0.01", False, False),
    _make_band("[0.01,0.10]", "0.01", "0.10", True, True),
    _make_band("(0.10,0.30]", "0.10", "0.30", False, True),
    _make_band("(0.30,0.45]", "0.30", "0.45", False, True),
    _make_band("(0.45,0.55]", "0.45", "0.55", False, True),
    _make_band("(0.55,0.70]", "0.55", "0.70", False, True),
    _make_band("(0.70,0.90]", "0.70", "0.90", False, True),
    _make_band("(0.90,0.99]", "0.90", "0.99", False, True),
    _make_band("(0.99,1)", "0.99", "1", False, False),
)
ALL_BANDS: tuple[Band, ...] = (ZERO, *INTERIOR_BANDS, ONE)


def band_of(p: Fraction) -> str:
    return next(band.label for band in ALL_BANDS if band.contains(p))
