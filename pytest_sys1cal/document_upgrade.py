"""The upgrade gate's part of the report document (document.py holds the rest): what the paired comparison
of a run with its baseline computes per primitive (analysis/upgrade.py), the ``details`` an upgrade-gate row
of ``gates[]`` carries (gates/upgrade.py adds where its margins came from), and the top-level ``comparison``
block (gates/upgrade_verdict.py). Typed here so that every reader is held to the keys: what each means is
docs/report.md's."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from .document_sequential import SequentialStanding
from .document_why import CellTests, Why, WorstRendering


class Design(TypedDict):
    """Whether the comparison can decide at its margin at all (docs/statistics.md §6.6)."""

    mde: float
    margin: float
    level: float
    power: float
    enough: bool
    renderings: int | None
    repeats: int | None
    repeats_alone: bool | None


class Advice(TypedDict):
    """What would decide an inconclusive comparison (docs/statistics.md §7.5): a recording made afresh of this
    many paired renderings (latent problems), or with this many repeats per rendering in both recordings,
    decides it, passed or FAILED, with probability `power` whatever the true Δ, at the observed spread."""

    renderings: int | None
    latent_problems: int | None
    repeats: int | None
    power: float
    text: str


class GroupDifference(TypedDict):
    """Δ of one family or representation (docs/statistics.md §6.5): its interval descriptive, its mark a
    Benjamini–Hochberg discovery (analysis/cells.py; absent from reports written before the cells were tested)."""

    n: int
    latent_problems: int
    baseline: float
    new: float
    difference: float
    se: float | None
    ci: list[float] | None
    level: float
    resamples: int
    rest: NotRequired[float | None]
    p_value: NotRequired[float | None]
    q_value: NotRequired[float | None]
    regressed: NotRequired[bool]
    worst: NotRequired[list[WorstRendering]]


class UpgradeMetric(TypedDict):
    """One primitive of the paired comparison. A primitive not measured in both reports has ``reason`` and
    none of the statistics; a measured one has ``se`` … ``by_family``; a decided one its bounds at their Holm
    levels, its noise and ``design``; an inconclusive one ``advice``."""

    metric: str
    label: str
    n: int
    latent_problems: int
    baseline: float | None
    new: float | None
    difference: float | None
    margin: float
    fail_margin: float
    verdict: str
    reason: NotRequired[str]
    se: NotRequired[float]
    sd_d: NotRequired[float]
    p_noninferior: NotRequired[float]
    p_worse: NotRequired[float]
    by_family: NotRequired[dict[str, GroupDifference] | None]
    by_representation: NotRequired[dict[str, GroupDifference] | None]
    lower: NotRequired[float]
    lower_level: NotRequired[float]
    upper: NotRequired[float]
    upper_level: NotRequired[float]
    p_noninferior_holm: NotRequired[float]
    p_worse_holm: NotRequired[float]
    design_effect: NotRequired[float | None]
    sigma_w: NotRequired[float | None]
    sigma_delta: NotRequired[float | None]
    design: NotRequired[Design]
    advice: NotRequired[Advice]
    why: NotRequired[Why]
    sequential: NotRequired[SequentialStanding]  # a row judged in rounds (gates/upgrade_sequential.py)


class UpgradeResult(TypedDict):
    """analysis.upgrade.compare_reports: the comparison of every gated primitive, and how it was made."""

    matched: int
    only_in_new: int
    only_in_baseline: int
    latent_problems: int
    repeats: int
    reading: str  # "mean" or "call": what each rendering's OVL was read from (docs/statistics.md §6.1)
    alpha: float
    correction: str
    resamples: int
    seed: int
    power: float
    cells: CellTests
    metrics: dict[str, UpgradeMetric]


class SetBy(TypedDict):
    """Where a thresholds file set a setting: its key path and line."""

    path: str
    line: int


class Margins(TypedDict):
    """``details.margins``: the settings in force and where each came from (null: the plugin's default)."""

    source: str
    file: str | None
    sections: list[str]
    max_drop_mean_ovl: float
    fail_drop_mean_ovl: float
    alpha: float
    inconclusive: str
    set_by: dict[str, SetBy | None]
    text: str


class UpgradeDetails(UpgradeMetric):
    """An upgrade-gate row's ``details``: its primitive's comparison, its margins and the comparison's design."""

    margins: Margins
    matched: int
    only_in_new: int
    only_in_baseline: int
    repeats: int
    reading: NotRequired[str]  # absent in a report written before the per-call reading: "mean"
    resamples: int
    seed: int
    cells: NotRequired[CellTests]


# ---------------------------------------------------------------------------------------------- the comparison block


class ComparedSide(TypedDict):
    """One side of the upgrade comparison: the model, its version and its cassettes' source; ``model_id`` the id
    sent to the server, where the version was recorded under one of its own (``--sys1cal-model-id``)."""

    model: str
    version: str
    source: str | None
    model_id: NotRequired[str]


class BaselineSide(ComparedSide):
    """The baseline side, and where it came from: ``origin`` is "version folder" (another recorded version,
    replayed offline in the run), "saved report" (a JSON report) or "bundled reference" (the bundled jev-1.13.0
    cassettes); ``location`` the folder or file as the user would type it (relative to where pytest ran when
    inside it)."""

    origin: str
    location: str


class ChanceSpread(TypedDict):
    """How large one rendering's D_i gets by chance alone (analysis/rendering_moves.py, docs/statistics.md §6.7)."""

    sd: float
    lowest: float
    n: int
    basis: str


class PrimitiveComparison(TypedDict, total=False):
    """The upgrade gate's row of one primitive, the numbers a reviewer reads: Δ̂ with its one-sided bounds (at
    their Holm levels), the bootstrap p-values Holm's step-down read, the margins it was held to (``reason``
    when it was not compared) and the scale of chance of one rendering's D_i."""

    verdict: str
    n: int
    baseline: float | None
    new: float | None
    difference: float | None
    lower: float
    lower_level: float
    upper: float
    upper_level: float
    p_noninferior: float
    p_worse: float
    margin: float
    fail_margin: float
    tolerated: bool
    why: Why
    reason: str
    chance: ChanceSpread


class AbsoluteGates(TypedDict):
    """The thresholds.yaml gates beside the upgrade verdict: how many, their verdicts, the run's line for them."""

    total: int
    verdicts: dict[str, int]
    outcome: str
    line: str


class RenderingMove(TypedDict):
    """One paired rendering: both answers per primitive, D_i = OVL new − OVL baseline (analysis/rendering_moves.py)."""

    instance_id: str
    family: str | None
    representation: str | None
    p_star: float
    baseline: dict[str, float | None]
    new: dict[str, float | None]
    d: dict[str, float | None]
    worst: float | None
    worst_primitive: str | None


class MovedRendering(RenderingMove):
    """A paired rendering as the report lists it, with the node id that re-runs it (null: not known)."""

    node_id: str | None


class ReadingVerdict(TypedDict):
    """The upgrade comparison under the reading that did not decide (``comparison.other_reading``): its verdict
    and each primitive's, or ``reason`` when it could not be made (means of another number of calls)."""

    reading: str
    label: str
    verdict: str
    summary: str
    primitives: NotRequired[dict[str, PrimitiveComparison]]
    reason: NotRequired[str]


class Comparison(TypedDict):
    """The top-level ``comparison`` block: present only when a baseline was in force (gates/upgrade_verdict.py)."""

    headline: str
    reading: NotRequired[str]  # the reading that decided, "mean" or "call" (absent: written before it, "mean")
    reading_label: NotRequired[str]  # as the headline names it: "per call", "10-call mean"
    other_reading: NotRequired[ReadingVerdict]
    summary: str
    verdict: str
    baseline: BaselineSide
    candidate: ComparedSide
    paired: int
    primitives: dict[str, PrimitiveComparison]
    absolute_gates: AbsoluteGates
    renderings: list[MovedRendering]
    cells: NotRequired[CellTests]  # absent from reports written before the cells were tested
