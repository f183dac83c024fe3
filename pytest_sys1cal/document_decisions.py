"""The report's blocks on reading a probability out as a decision (document.py holds the rest of the report's
shape): the readout and its option swap, the readout recalibrated on held-out latent problems, and the paper's
decision rules. What each key means: docs/report.md."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class Readout(TypedDict):
    """How a probability reads out as a True/False decision (the readout block, and the option swap's part)."""

    n_true: int
    n_false: int
    auc: float | None
    balanced_accuracy: float | None
    recall_true: float | None
    recall_false: float | None
    offset: float | None
    sep: float | None
    collapsed: bool | None
    reason: NotRequired[str]


class OptionSwap(Readout):
    """Choice asked in both option orders (``option_swap``; null when no rendering was)."""

    n: int
    first_position_rate: float | None
    mean_shift: float | None
    statistic: float | None
    p_value: float | None
    test: str
    swap_consistency: float | None


class RuleOutcome(TypedDict):
    """What one decision rule did: its share of each action, its mean risk and regret against the oracle."""

    share: dict[str, float]
    mean_risk: float
    mean_regret: float


class WorkedExample(TypedDict):
    """The paper's illustration, computed: a μ_S at which the three rules choose three different actions
    (every value null, with ``reason``, when the costs give none)."""

    mu_score: float | None
    choice: float | None
    inverse: float | None
    interval: list[float] | None
    actions: dict[str, str] | None
    risks: dict[str, dict[str, float]] | None
    region: list[float] | None
    reason: NotRequired[str]


class Decisions(TypedDict):
    """Paper §5 (Table 4): what each reading of Choice is worth when a decision hangs on it."""

    error_cost: float
    defer_cost: float
    n: int
    rules: dict[str, RuleOutcome | None]
    agreement: dict[str, float | None]
    worked_example: WorkedExample | None
    reason: NotRequired[str]


class BinaryScores(TypedDict):
    recall_true: float
    recall_false: float
    balanced_accuracy: float


class Spread(TypedDict):
    """Mean, SD (null with one split), min and max of a score over the held-out splits."""

    mean: float
    sd: float | None
    min: float
    max: float


class HeldOut(TypedDict):
    """The cross-fitted scores of every split, summarised (each null when no split could be scored)."""

    seeds: list[int]
    scored: int
    balanced_accuracy: Spread | None
    recall_true: Spread | None
    recall_false: Spread | None


class Recalibrated(TypedDict):
    """One primitive's readout with its threshold fitted on held-out latent problems (docs/statistics.md §5.3),
    on the run's own split (split 0)."""

    method: str
    seed: int
    latent_problems: list[int]
    renderings: list[int]
    n: int
    n_true: int
    n_false: int
    threshold_logit: list[float] | None
    threshold: list[float] | None
    raw: BinaryScores | None
    recalibrated: BinaryScores | None
    auc: float | None
    reason: NotRequired[str]


class RecalibratedReadout(Recalibrated):
    """One primitive of ``readout_recalibrated``: split 0's numbers; ``held_out`` summarises every split."""

    splits: int
    held_out: HeldOut | None
