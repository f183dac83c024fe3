"""The documents of the offline commands, typed as the report is (document.py): the power plan
(``python -m pytest_sys1cal power``, analysis/power.py), the contamination check (``contamination``,
analysis/contamination.py) and the trend across versions (``trend``, versions/trend.py). Each is what the
command's ``--json`` prints and what its text, Markdown and HTML renderers read; docs/power.md,
docs/contamination.md and docs/trend.md say what the keys mean."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from .document import Counts, DatasetBlock, ModelBlock

# ---------------------------------------------------------------------------------------------- power


class PowerEstimates(TypedDict):
    """What one report says about one primitive's noise and clustering (analysis.power.Estimates)."""

    primitive: str
    renderings: int
    latent_problems: int
    repeats: int
    per_problem: float
    per_problem_weighted: float
    sigma_w: float | None
    answer_sd: float | None
    sd_ovl: float
    sigma_between: float
    rho: float
    mean_ovl: float


class PowerRow(TypedDict):
    """One line of the plan's table: what a dataset with `repeats` repeats needs, and what the report's size detects."""

    repeats: int
    variance: float
    design_effect: float
    t_corrected: bool
    renderings: int | None
    latent_problems: int | None
    requests: int | None
    mde_at_report_size: float
    mde_unlimited_fresh: NotRequired[float]


class FromBaseline(TypedDict):
    """σ_Δ, σ_w and ρ_Δ measured from the paired differences with ``--baseline``."""

    sigma_delta: float
    sigma_delta_source: str
    sigma_w: float | None
    rho_delta: float
    difference: float
    matched: int


class OwnDesign(TypedDict):
    renderings: int
    latent_problems: int
    repeats: int
    design_effect: float
    mde: float


class WhatIf(TypedDict):
    """Latent problems needed at `repeats` repeats if σ_Δ were each of a few values."""

    repeats: int
    latent_problems: dict[str, int | None]


class PlanNumbers(TypedDict):
    """The numbers of a power plan (analysis/power.py computes them)."""

    model: ModelBlock
    dataset: DatasetBlock
    primitive: str
    label: str
    design: str
    drop: float
    alpha: float
    power: float
    z: float
    estimates: PowerEstimates
    sigma_w: float
    spread: float  # σ_Δ (paired) or σ_B (unpaired)
    rho: float
    renderings_per_problem: float
    renderings_per_problem_deff: float
    table: list[PowerRow]
    own_design: OwnDesign


class PowerPlan(PlanNumbers):
    """The plan: its numbers, where σ_w and the spread came from, and what was assumed."""

    sigma_w_source: str
    spread_source: str
    baseline: FromBaseline | None
    assumptions: list[str]
    notes: list[str]
    what_if: NotRequired[WhatIf]


# ---------------------------------------------------------------------------------------------- contamination


class CheckedSide(TypedDict):
    """One report of the check: its dataset, the renderings compared, latent problems per family."""

    dataset: str | None
    sha256: str | None
    renderings: int
    compared_renderings: int
    latent_problems: int
    families: dict[str, int]


class BySide(TypedDict):
    public: int | None
    fresh: int | None


class Difference(TypedDict):
    """Public − fresh, with its bootstrap interval and SE."""

    difference: float
    ci: list[float]
    se: float


class StratumSide(TypedDict):
    n: int
    mean_ovl: float | None


class Stratum(TypedDict):
    stratum: str
    weight: float
    public: StratumSide
    fresh: StratumSide


class ContaminationMetric(TypedDict):
    """One primitive of the check: means, both differences, the p-value, the verdict and the strata; or the
    ``reason`` it was not compared (then ``verdict`` is null)."""

    label: str
    n: BySide
    verdict: str | None
    reason: NotRequired[str]
    public: NotRequired[float]
    fresh: NotRequired[float]
    public_shared_strata: NotRequired[float]
    fresh_reweighted: NotRequired[float]
    raw: NotRequired[Difference]
    reweighted: NotRequired[Difference]
    p_value: NotRequired[float]
    p_value_holm: NotRequired[float]
    finding: NotRequired[str]
    strata: NotRequired[list[Stratum]]
    public_renderings_without_fresh_counterpart: NotRequired[int]


class ContaminationCheck(TypedDict):
    model: ModelBlock
    repeats: BySide
    public: CheckedSide
    fresh: CheckedSide
    excluded: list[str]
    exclusion_note: str | None
    stratify: str
    verdict_uses: str
    level: float
    margin: float
    resamples: int
    seed: int
    bootstrap: str
    caveats: list[str]
    metrics: dict[str, ContaminationMetric]
    suspicious: list[str]
    verdict: str


# ---------------------------------------------------------------------------------------------- trend


class TrendDataset(TypedDict):
    name: str
    sha256: str
    renderings: int


class RecordedDataset(TypedDict):
    name: str
    sha256: str


class MeanOvl(TypedDict):
    """Mean OVL of one primitive with its latent-problem bootstrap interval (analysis/trend.py)."""

    n: int
    latent_problems: int
    mean: float | None
    lower: float | None
    upper: float | None
    level: float
    resamples: int


class SwapShift(TypedDict):
    mean_shift: float | None
    p_value: float | None


class LambdaTest(TypedDict):
    p_value: float | None
    statistic: float | None
    effect: float | None


class VersionGates(TypedDict):
    """The version's gates as its own run ends them."""

    outcome: str
    count: int
    failed: list[str]
    not_applicable: int


class TrendVersion(TypedDict):
    """One version's row: why it could not be replayed (``reason``), or what its replay measured."""

    version: str
    replayed: bool
    reason: str | None
    source: NotRequired[str]
    repeats: NotRequired[int]
    repeats_per_answer: NotRequired[int]
    averaged_repeats: NotRequired[int]
    dataset: NotRequired[RecordedDataset]
    counts: NotRequired[Counts]
    mean_ovl: NotRequired[dict[str, MeanOvl]]
    swap_shift: NotRequired[SwapShift | None]
    lambda_test: NotRequired[LambdaTest | None]
    gates: NotRequired[VersionGates]
    thresholds: NotRequired[str | None]
    first_failure: NotRequired[str | None]


class StepPrimitive(TypedDict):
    """One primitive of a step's upgrade comparison."""

    n: int | None
    baseline: float | None
    new: float | None
    difference: float | None
    lower: float | None
    lower_level: float | None
    upper: float | None
    upper_level: float | None
    se: float | None
    verdict: str
    tolerated: bool
    margin: float | None
    fail_margin: float | None
    margins: str | None
    advice: str | None
    explanation: str


# Functional form: one of its keys, "from", is a Python keyword.
TrendStep = TypedDict(
    "TrendStep",
    {
        "from": str,
        "to": str,
        "compared": bool,
        "reason": str | None,
        "outcome": NotRequired[str],
        "primitives": NotRequired[dict[str, StepPrimitive]],
    },
)


class TrendDocument(TypedDict):
    schema: str
    model: str
    cassettes: str
    dataset: TrendDataset
    seed: int
    thresholds: str | None
    versions: list[TrendVersion]
    steps: list[TrendStep]
