"""The schema of thresholds.yaml: which gate keys exist, what each reads from the report and which way it
bounds it, and the resolved configuration of one model and version. See docs/thresholds.md."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..errors import InputError
from ..vocabulary import PRIMITIVES

SECTIONS = (*PRIMITIVES, "uncertainty", "decisions", "regression")
DEFAULT_ALPHA = 0.05
DEFAULT_DROP = 0.02
DEFAULT_RESAMPLES = 2000


class ThresholdsError(InputError):
    """A mistake in thresholds.yaml (or in a baseline), as one user-facing line."""


@dataclass(frozen=True)
class GateKind:
    """One gate key: what it reads from the report, which way it bounds it, and its valid range."""

    key: str
    bound: str  # "min" (observed ≥ limit passes) or "max" (observed ≤ limit passes)
    paths: tuple[tuple[str, ...], ...]  # report paths tried in order; "{p}" is the primitive
    what: str  # "mean OVL", for explanations
    metric: str  # the metric as shown in rows, "{p}" is the primitive
    high: float = 1.0
    transform: Callable[[float], float] | None = None


def _abs_half(x: float) -> float:
    return abs(x - 0.5)


PRIMITIVE_GATES: dict[str, GateKind] = {
    g.key: g
    for g in (
        GateKind("min_mean_ovl", "min", (("primitives", "{p}", "mean_ovl"),), "mean OVL", "primitives.{p}.mean_ovl"),
        GateKind(
            "min_median_ovl", "min", (("primitives", "{p}", "median_ovl"),), "median OVL", "primitives.{p}.median_ovl"
        ),
        GateKind(
            "max_mean_pairwise_tv",
            "max",
            (("representation_sensitivity", "{p}", "mean_pairwise_tv"),),
            "mean pairwise TV between renderings",
            "representation_sensitivity.{p}.mean_pairwise_tv",
        ),
        GateKind(
            "max_mean_max_tv",
            "max",
            (("representation_sensitivity", "{p}", "mean_max_tv"),),
            "mean max TV between renderings",
            "representation_sensitivity.{p}.mean_max_tv",
        ),
        GateKind(
            "max_ece",
            "max",
            (("calibration", "{p}", "ece"), ("calibration", "{p}", "ece_equal_width")),
            "ECE (15 equal-width bins, target p*)",
            "calibration.{p}.ece",
        ),
        GateKind(
            "max_brier", "max", (("calibration", "{p}", "brier"),), "Brier (mean (p − p*)²)", "calibration.{p}.brier"
        ),
    )
}
CHOICE_GATES: dict[str, GateKind] = {
    g.key: g
    for g in (
        GateKind(
            "max_swap_shift",
            "max",
            (("option_swap", "mean_shift"),),
            "option-swap shift |mean_shift|",
            "abs(option_swap.mean_shift)",
            transform=abs,
        ),
        GateKind(
            "max_first_position_bias",
            "max",
            (("option_swap", "first_position_rate"),),
            "first-position bias |first_position_rate − 0.5|",
            "abs(option_swap.first_position_rate - 0.5)",
            high=0.5,
            transform=_abs_half,
        ),
    )
}
GATE_ORDER = (*PRIMITIVE_GATES, *CHOICE_GATES)
UNCERTAINTY_KEYS = ("require_lambda_positive", "require_lambda_zero", "alpha")
LAMBDA_FLAGS = ("require_lambda_positive", "require_lambda_zero")
DECISION_KEYS = ("error_cost", "deferral_cost")
REGRESSION_MARGIN_KEYS = ("max_drop_mean_ovl", "fail_drop_mean_ovl")
REGRESSION_KEYS = ("alpha", *REGRESSION_MARGIN_KEYS, "primitives", "resamples", *PRIMITIVES)


def allowed_keys(section: str) -> tuple[str, ...]:
    if section == "choice":
        return GATE_ORDER
    if section in PRIMITIVES:
        return tuple(PRIMITIVE_GATES)
    return {"uncertainty": UNCERTAINTY_KEYS, "decisions": DECISION_KEYS, "regression": REGRESSION_KEYS}[section]


@dataclass(frozen=True)
class Gate:
    """One configured gate: name as in the report ("choice.min_mean_ovl"), its limit and where it is set."""

    name: str
    key: str
    primitive: str | None
    limit: float
    line: int


@dataclass(frozen=True)
class RegressionConfig:
    alpha: float = DEFAULT_ALPHA
    resamples: int = DEFAULT_RESAMPLES
    primitives: tuple[str, ...] = PRIMITIVES
    drop: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(PRIMITIVES, DEFAULT_DROP))
    fail_drop: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(PRIMITIVES, DEFAULT_DROP / 2))


@dataclass(frozen=True)
class Thresholds:
    """The gates that apply to one model (and version), after merging the version's overrides."""

    path: str
    model: str
    version: str | None
    layers: tuple[str, ...]  # what was applied: ("jev",) or ("jev", "jev[jev-1.14.0]"); () when none
    gates: tuple[Gate, ...]
    decisions: Mapping[str, float]
    regression: RegressionConfig
    versions: tuple[str, ...] = ()  # version keys present under this model
    notice: str | None = None  # why nothing applies (no section for this model), for the summary

    def analysis_options(self) -> dict[str, float]:
        """Keyword arguments for analysis.analyze (its name for deferral_cost is defer_cost)."""
        names = {"error_cost": "error_cost", "deferral_cost": "defer_cost"}
        return {names[k]: v for k, v in self.decisions.items()}

    def describe(self) -> str:
        if not self.layers:
            return f"{self.path}: {self.notice or 'no gates'}"
        return f"{self.path}: {' + '.join(self.layers)} ({len(self.gates)} gates)"
