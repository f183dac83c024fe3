"""The kinds of threshold gate, each an object that reads its value from thresholds.yaml and evaluates
itself against a run's report. A new kind of gate is one class (or one more instance) and one entry in
KINDS: the reader (config.py) and the schema (schema.py) take their keys from here."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..defaults import ALPHA
from ..document import ReportDocument
from ..vocabulary import CALL_READING, LABELS, MEAN_READING, PRIMITIVES, Verdict
from .rows import GateRow

if TYPE_CHECKING:
    import yaml


class Reader(Protocol):
    """What a kind asks of thresholds.yaml's reader (config.py) to read its value."""

    def number(self, node: yaml.Node, path: str, low: float, high: float) -> float: ...

    def boolean(self, node: yaml.Node, path: str) -> bool: ...


@dataclass(frozen=True)
class Gate:
    """One configured gate: its name as in the report ("choice.min_mean_ovl"), its kind, the section it is
    set in (a primitive, or "uncertainty"), its limit, and the line of thresholds.yaml that sets it."""

    name: str
    kind: GateKind
    section: str
    limit: float
    line: int

    @property
    def key(self) -> str:
        return self.kind.key

    def evaluate(self, report: ReportDocument, reading: str = MEAN_READING) -> GateRow:
        return self.kind.evaluate(self, report, reading)


class GateKind(ABC):
    """One key of thresholds.yaml that configures a gate: where it may appear, how its value is read, and how
    a configured gate of this kind is judged."""

    key: str
    sections: tuple[str, ...]

    @abstractmethod
    def read(self, reader: Reader, node: yaml.Node, path: str) -> Any:
        """The key's value, validated (raising the reader's error naming the file, line and key)."""

    @abstractmethod
    def limit(self, value: Any, section: Mapping[str, Any]) -> float | None:
        """The gate's limit from the key's value and the other keys of its section; None: no gate."""

    @abstractmethod
    def evaluate(self, gate: Gate, report: ReportDocument, reading: str = MEAN_READING) -> GateRow:
        """The gate judged on this run's report ("not measured" when what it reads is absent), under the
        reading thresholds.yaml says decides (a kind without a per-call value reads the repeat means)."""

    def per_call(self) -> bool:
        """Whether the reading changes what this kind reads (it has a per-call value)."""
        return False


@dataclass(frozen=True)
class Bound(GateKind):
    """A floor (``min``: observed ≥ limit passes) or a ceiling (``max``: observed ≤ limit) on a number of the
    report, per primitive."""

    key: str
    bound: str
    paths: tuple[tuple[str, ...], ...]  # report paths tried in order; "{p}" is the primitive
    what: str  # "mean OVL", for explanations
    metric: str  # the metric as shown in rows; "{p}" is the primitive
    sections: tuple[str, ...] = PRIMITIVES
    high: float = 1.0
    transform: Callable[[float], float] | None = None
    explain_failure: Callable[[float], str] | None = None  # more words for a failure, from the raw value
    call_path: tuple[str, ...] | None = None  # the per-call value read under `reading: call` (analysis/calls.py)

    def read(self, reader: Reader, node: yaml.Node, path: str) -> Any:
        return reader.number(node, path, 0.0, self.high)

    def limit(self, value: Any, section: Mapping[str, Any]) -> float | None:
        return value

    def per_call(self) -> bool:
        return self.call_path is not None

    def evaluate(self, gate: Gate, report: ReportDocument, reading: str = MEAN_READING) -> GateRow:
        prim = gate.section
        label, metric = f"{LABELS[prim]} {self.what}", self.metric.format(p=prim)
        paths = self.paths
        if reading == CALL_READING and self.call_path is not None:
            # Never the repeat means read as calls: a report with no single call leaves it not measured.
            label, paths = f"{label} per call", (self.call_path,)
            metric = ".".join(part.format(p=prim) for part in self.call_path)
        raw, reason = None, ""
        for path in paths:
            raw, reason = lookup(report, tuple(part.format(p=prim) for part in path))
            if raw is not None:
                metric = ".".join(part.format(p=prim) for part in path) if self.transform is None else metric
                break
        if raw is None:
            text = f"{label} was not measured in this run ({reason})."
            return GateRow(gate.name, metric, None, gate.limit, Verdict.NOT_MEASURED, text)
        observed = self.transform(raw) if self.transform else raw
        shown, limit = _pair(observed, gate.limit)
        if self.bound == "min":
            passed = observed >= gate.limit
            text = f"{label} {shown} {'meets' if passed else 'is below'} the floor {limit}."
        else:
            passed = observed <= gate.limit
            text = f"{label} {shown} {'is within' if passed else 'exceeds'} the ceiling {limit}."
        if not passed and self.explain_failure:
            text += f" {self.explain_failure(raw)}"
        verdict = Verdict.PASSED if passed else Verdict.FAILED
        return GateRow(gate.name, metric, observed, gate.limit, verdict, text)


@dataclass(frozen=True)
class LambdaTest(GateKind):
    """The valid one-sided test of λ = 0 (docs/statistics.md §2), required to reject it (λ > 0, Jev's
    dropped "I don't know" mass) or not to (λ = 0). Its value is true/false; its limit is the section's
    ``alpha``."""

    key: str
    rejects: bool  # passes when the test rejects λ = 0 (True) or when it does not (False)
    sections: tuple[str, ...] = ("uncertainty",)

    def read(self, reader: Reader, node: yaml.Node, path: str) -> Any:
        return reader.boolean(node, path)

    def limit(self, value: Any, section: Mapping[str, Any]) -> float | None:
        alpha = section.get("alpha")
        return (ALPHA if alpha is None else alpha) if value is True else None

    def evaluate(self, gate: Gate, report: ReportDocument, reading: str = MEAN_READING) -> GateRow:
        p, reason = lookup(report, ("uncertainty", "test", "p_value"))
        metric, alpha = "uncertainty.test.p_value", f"{gate.limit:g}"
        if p is None:
            text = f"The test of λ = 0 could not be run ({reason})."
            return GateRow(gate.name, metric, None, gate.limit, Verdict.NOT_MEASURED, text)
        rejected, shown = p < gate.limit, f"p = {p:.2g}"
        if rejected:
            text = f"The one-sided test of λ = 0 rejects it ({shown} < α = {alpha})"
            text += (
                ": Choice sits above the Score expectation, as the latent uncertainty model requires."
                if self.rejects
                else ": Choice sits significantly above the Score expectation, but this gate requires λ = 0."
            )
        else:
            text = f"The one-sided test of λ = 0 does not reject it ({shown} ≥ α = {alpha})"
            text += (
                ", but this gate requires λ > 0."
                if self.rejects
                else ", as this gate requires (no evidence that Choice sits above the Score expectation)."
            )
        verdict = Verdict.PASSED if rejected == self.rejects else Verdict.FAILED
        return GateRow(gate.name, metric, p, gate.limit, verdict, text)


def _abs_half(x: float) -> float:
    return abs(x - 0.5)


def _swap_side(raw: float) -> str:
    return f"P(True) is higher when True is shown {'second' if raw > 0 else 'first'} (mean shift {raw:+.3f})."


def _first_wins(raw: float) -> str:
    return f"The option shown first wins {raw:.1%} of the time (0.5 is order-blind)."


KINDS: dict[str, GateKind] = {
    kind.key: kind
    for kind in (
        Bound(
            "min_mean_ovl",
            "min",
            (("primitives", "{p}", "mean_ovl"),),
            "mean OVL",
            "primitives.{p}.mean_ovl",
            call_path=("primitives", "{p}", "per_call", "mean_ovl"),
        ),
        Bound(
            "min_median_ovl",
            "min",
            (("primitives", "{p}", "median_ovl"),),
            "median OVL",
            "primitives.{p}.median_ovl",
            call_path=("primitives", "{p}", "per_call", "median_ovl"),
        ),
        Bound(
            "max_mean_pairwise_tv",
            "max",
            (("representation_sensitivity", "{p}", "mean_pairwise_tv"),),
            "mean pairwise TV between renderings",
            "representation_sensitivity.{p}.mean_pairwise_tv",
        ),
        Bound(
            "max_mean_max_tv",
            "max",
            (("representation_sensitivity", "{p}", "mean_max_tv"),),
            "mean max TV between renderings",
            "representation_sensitivity.{p}.mean_max_tv",
        ),
        Bound(
            "max_ece",
            "max",
            (("calibration", "{p}", "ece"), ("calibration", "{p}", "ece_equal_width")),
            "ECE (15 equal-width bins, target p*)",
            "calibration.{p}.ece",
            call_path=("calibration", "{p}", "per_call", "ece"),
        ),
        Bound(
            "max_brier",
            "max",
            (("calibration", "{p}", "brier"),),
            "Brier (mean (p − p*)²)",
            "calibration.{p}.brier",
            call_path=("calibration", "{p}", "per_call", "brier"),
        ),
        # Optional: the Brier decomposition's parts against p* (docs/statistics.md §8.1), which the shipped file
        # does not set; `python -m pytest_sys1cal thresholds` writes them by the same rule as the others.
        Bound(
            "max_mcb",
            "max",
            (("decomposition", "{p}", "mcb"),),
            "miscalibration MCB (Brier decomposition against p*)",
            "decomposition.{p}.mcb",
        ),
        Bound(
            "min_dsc",
            "min",
            (("decomposition", "{p}", "dsc"),),
            "discrimination DSC (Brier decomposition against p*)",
            "decomposition.{p}.dsc",
        ),
        Bound(
            "max_swap_shift",
            "max",
            (("option_swap", "mean_shift"),),
            "option-swap shift |mean_shift|",
            "abs(option_swap.mean_shift)",
            sections=("choice",),
            transform=abs,
            explain_failure=_swap_side,
        ),
        Bound(
            "max_first_position_bias",
            "max",
            (("option_swap", "first_position_rate"),),
            "first-position bias |first_position_rate − 0.5|",
            "abs(option_swap.first_position_rate - 0.5)",
            sections=("choice",),
            high=0.5,
            transform=_abs_half,
            explain_failure=_first_wins,
        ),
        LambdaTest("require_lambda_positive", rejects=True),
        LambdaTest("require_lambda_zero", rejects=False),
    )
}


def kinds_in(section: str) -> tuple[GateKind, ...]:
    return tuple(kind for kind in KINDS.values() if section in kind.sections)


def lookup(report: ReportDocument, path: tuple[str, ...]) -> tuple[float | None, str]:
    """The number at `path`, or None and why: the innermost block's own `reason` when it gives one."""
    node: Any = report
    reason = None
    for depth, part in enumerate(path):
        dotted = ".".join(path[: depth + 1])
        if not isinstance(node, Mapping):
            return None, f"{'.'.join(path[:depth])} is not a block"
        if isinstance(node.get("reason"), str):
            reason = node["reason"]
        if part not in node:
            return None, reason or f"the report has no {dotted}"
        if node[part] is None:
            if dotted == "option_swap":
                return None, "no rendering was asked the swapped Choice, so option_swap is null"
            return None, reason or f"{dotted} is null"
        node = node[part]
    if isinstance(node, bool) or not isinstance(node, int | float) or not math.isfinite(node):
        return None, f"{'.'.join(path)} is not a number"
    return float(node), ""


def _pair(observed: float, limit: float) -> tuple[str, str]:
    """observed with enough significant digits that it never reads as equal to a limit it differs from."""
    shown_limit = f"{limit:g}"
    for digits in range(3, 12):
        shown = f"{observed:.{digits}g}"
        if observed == limit or float(shown) != limit:
            return shown, shown_limit
    return repr(observed), shown_limit
