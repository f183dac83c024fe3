"""The report document's blocks that say why a version moved (docs/statistics.md §8, docs/report.md): the Brier
score's parts against p*, the bin-free reliability curve, repeat noise apart from bias, the held-out recalibrated
OVL and, in an upgrade, the comparison's diagnosis. Typed here beside document.py (which assembles and reads the
whole report), so that its readers are held to these keys by the type checker like every other block's."""

from __future__ import annotations

from typing import TypedDict


class Decomposition(TypedDict, total=False):
    """The Brier score against p* split into its parts (docs/statistics.md §8.1): S = MCB − DSC + UNC."""

    n: int
    latent_problems: int
    distinct_answers: int
    score: float | None
    mcb: float | None
    dsc: float | None
    unc: float | None
    score_ci: list[float]
    mcb_ci: list[float]
    dsc_ci: list[float]
    unc_ci: list[float]
    resamples: int
    level: float
    reason: str


class Curve(TypedDict):
    """A monotone map as knots: linear between them, constant beyond the ends."""

    x: list[float]
    y: list[float]


class Band(TypedDict):
    """The consistency band of a reliability curve, pointwise at `x` (statistics.md §8.2)."""

    x: list[float]
    lower: list[float]
    upper: list[float]
    level: float


class Reliability(TypedDict, total=False):
    """The bin-free reliability curve (the isotonic fit of p* on the answers) and its own calibration error."""

    n: int
    ece: float | None
    ece_ci: list[float] | None
    curve: Curve | None
    band: Band | None
    reason: str


class RepeatNoise(TypedDict, total=False):
    """Repeat noise apart from bias (statistics.md §8.3): brier = bias + noise, over renderings with ≥ 2 repeats."""

    n: int
    repeats: int | None
    brier: float | None
    noise: float | None
    bias: float | None
    reason: str


class Spread(TypedDict):
    """Mean, SD (n − 1; None for one value), min and max over the splits."""

    mean: float
    sd: float | None
    min: float
    max: float


class HeldOutMap(TypedDict, total=False):
    """Mean OVL through a monotone map fitted on held-out latent problems (statistics.md §8.4)."""

    n: int
    method: str
    splits: int
    seeds: list[int]
    scored: int
    raw: float | None
    in_sample: float | None
    held_out: Spread | None
    gain: float | None
    inverse: HeldOutMap
    reason: str


class PartChange(TypedDict):
    """A decomposition part of both versions in an upgrade and its paired change, with a percentile interval."""

    baseline: float
    new: float
    difference: float
    ci: list[float]
    level: float
    resamples: int


class RecalibratedChange(TypedDict, total=False):
    """Both versions' held-out recalibrated mean OVL and their paired Δ with one-sided bounds (statistics.md §8.5)."""

    baseline: float
    new: float
    difference: float
    lower: float
    upper: float
    level: float
    splits: int
    inverse: RecalibratedChange
    reason: str


class Why(TypedDict, total=False):
    """Why a compared primitive moved: ΔMCB, ΔDSC, the recalibrated Δ, and the diagnosis of a FAILED or
    inconclusive verdict (`cause` and `line`, None for a primitive that passed)."""

    mcb: PartChange
    dsc: PartChange
    recalibrated: RecalibratedChange
    cause: str | None
    line: str | None


class WorstRendering(TypedDict):
    """One of a Δ cell's renderings with the lowest D."""

    instance_id: str
    d: float


class CellTests(TypedDict):
    """How the Δ cells by family and by representation were marked: Benjamini–Hochberg at `q` over `tested` cells."""

    q: float
    tested: int
    regressed: int


class MapUsed(TypedDict):
    """The report's ``recalibration`` block: the map the answers were replayed through (--sys1cal-recalibration)."""

    file: str
    sha256: str
    model: str
    version: str
    primitives: list[str]
    held_out: dict[str, float | None]
