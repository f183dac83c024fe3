"""The schema of thresholds.yaml: its sections and the keys each allows (gate keys from kinds.py, and the
sections' parameters), and the resolved configuration of one model and version. See docs/thresholds.md."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..defaults import ALPHA, DEFAULT_ROUNDS, DEFAULT_SPENDING, UPGRADE_DROP, UPGRADE_FAIL_DROP, UPGRADE_RESAMPLES
from ..errors import InputError
from ..vocabulary import CALL_READING, MEAN_READING, PRIMITIVES
from .kinds import KINDS, Gate, LambdaTest, kinds_in

SECTIONS = (*PRIMITIVES, "uncertainty", "decisions", "regression")
# A model's section (and a version's block) holds its sections and one setting that is not a section: which
# reading of the answers decides its gates (vocabulary.READINGS; docs/thresholds.md, "The reading").
READING_KEY = "reading"
MODEL_KEYS = (*SECTIONS, READING_KEY)


class ThresholdsError(InputError):
    """A mistake in thresholds.yaml (or in a baseline), as one user-facing line."""


# The section parameters that are not gates themselves (a gate kind's keys come from kinds.KINDS).
UNCERTAINTY_PARAMETERS = ("alpha",)
DECISION_KEYS = ("error_cost", "deferral_cost")
REGRESSION_MARGIN_KEYS = ("max_drop_mean_ovl", "fail_drop_mean_ovl")
# `regression.sequential`: the design of the upgrade gate recorded in rounds (--sys1cal-sequential).
SEQUENTIAL = "sequential"
SEQUENTIAL_KEYS = ("spending", "rounds")
MAX_ROUNDS = 100
REGRESSION_KEYS = (
    "alpha",
    *REGRESSION_MARGIN_KEYS,
    "primitives",
    "resamples",
    "inconclusive",
    SEQUENTIAL,
    *PRIMITIVES,
)
# What an inconclusive upgrade comparison does to the run: fail it (the default: a drop within the margin was
# not shown), or let it pass, still shown as inconclusive with its advice and a notice.
INCONCLUSIVE_CHOICES = ("fail", "pass")
PARAMETERS = {"uncertainty": UNCERTAINTY_PARAMETERS, "decisions": DECISION_KEYS, "regression": REGRESSION_KEYS}
# Every gate key, in the order gates are listed (within a section): the table's order.
GATE_KEYS = tuple(KINDS)
# The λ gates exclude each other: a version that sets one clears the other, and both true is a mistake.
LAMBDA_FLAGS = tuple(key for key, kind in KINDS.items() if isinstance(kind, LambdaTest))


def allowed_keys(section: str) -> tuple[str, ...]:
    """The keys a section of thresholds.yaml may hold: its gate kinds, then its parameters."""
    return tuple(kind.key for kind in kinds_in(section)) + PARAMETERS.get(section, ())


@dataclass(frozen=True)
class UpgradeConfig:
    """The upgrade gate's settings for one model and version, and where each came from: `set_by` maps a
    setting (``alpha``, ``resamples``, ``primitives``, ``inconclusive``, ``<p>.max_drop_mean_ovl``,
    ``<p>.fail_drop_mean_ovl``, ``sequential.spending``, ``sequential.rounds``) to the key path and line of `file` that set it; a setting not in it is the
    plugin's default. `file` is None when the run has no thresholds file."""

    alpha: float = ALPHA
    resamples: int = UPGRADE_RESAMPLES
    primitives: tuple[str, ...] = PRIMITIVES
    drop: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(PRIMITIVES, UPGRADE_DROP))
    fail_drop: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(PRIMITIVES, UPGRADE_FAIL_DROP))
    inconclusive: str = INCONCLUSIVE_CHOICES[0]
    spending: str = DEFAULT_SPENDING  # regression.sequential.spending
    rounds: int = DEFAULT_ROUNDS  # regression.sequential.rounds
    # Where the settings came from, not what they are: two configs with equal settings compare equal.
    file: str | None = field(default=None, compare=False)
    set_by: Mapping[str, tuple[str, int]] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Reading:
    """Which reading of the answers decides the gates of one model and version (``reading: call`` or ``mean``),
    and the key path and line that set it; `path` None: no key sets it, the default (mean) is in force."""

    value: str = MEAN_READING
    path: str | None = None
    line: int = 0
    file: str | None = None  # the thresholds file; None: the run has none

    def said(self) -> str:
        """Where the reading comes from, for messages: "thresholds.yaml:3 systemone.reading: call"."""
        if self.path is None:
            return (
                f"{self.file} sets no reading: the default, {self.value}"
                if self.file
                else f"the default reading, {self.value}"
            )
        return f"{self.file}:{self.line} {self.path}: {self.value}"

    def refusal(self, holder: str, per_answer: int) -> str | None:
        """Why `holder` (a cassette folder, a baseline) cannot be read under this reading, as one line; None when
        it can. Cassettes whose answers are means of several calls hold no single call to read per call."""
        if self.value != CALL_READING or per_answer <= 1:
            return None
        return (
            f"{self.said()}, but {holder} holds {per_answer}-call means (each answer rebuilt from a published "
            "mean), not single calls, so nothing in it can be read per call: set reading: mean for this model or "
            'version (python -m pytest_sys1cal docs thresholds, "The reading"), or record the version afresh'
        )


@dataclass(frozen=True)
class Thresholds:
    """The gates that apply to one model (and version), after merging the version's overrides."""

    path: str
    model: str
    version: str | None
    layers: tuple[str, ...]  # what was applied: ("jev",) or ("jev", "jev[jev-1.14.0]"); () when none
    gates: tuple[Gate, ...]
    decisions: Mapping[str, float]
    regression: UpgradeConfig
    versions: tuple[str, ...] = ()  # version keys present under this model
    notice: str | None = None  # why nothing applies (no section for this model), for the summary
    lines: Mapping[str, int] = field(default_factory=dict)  # each layer's key line in the file
    reading: Reading = field(default_factory=Reading)

    @property
    def inherited(self) -> bool:
        """The run's version has no block of its own: it is held to the model's section as it is."""
        return self.version is not None and len(self.layers) == 1

    def provenance(self) -> str:
        """Where the gates in force come from, in words: the model's section (inherited by a version without a
        block of its own), or the model's section with the version's block laid over it."""
        if not self.layers:
            return self.notice or "no gates"
        model = f"{self.model}'s section (line {self.lines.get(self.model, '?')})"
        if len(self.layers) == 2:
            block = self.layers[1]
            return f"{model} with {block}'s block (line {self.lines.get(block, '?')}) laid over it"
        if self.inherited:
            return f"{model}, inherited: {self.version} has no block of its own"
        return model

    def analysis_options(self) -> dict[str, float]:
        """Keyword arguments for analysis.analyze (its name for deferral_cost is defer_cost)."""
        names = {"error_cost": "error_cost", "deferral_cost": "defer_cost"}
        return {names[k]: v for k, v in self.decisions.items()}

    def describe(self, shown: str | None = None) -> str:
        """The file (as `shown`, e.g. relative to where pytest ran; else its path), its sections and gates."""
        path = self.path if shown is None else shown
        if not self.layers:
            return f"{path}: {self.notice or 'no gates'}"
        if not self.gates:
            return f"{path}: {' + '.join(self.layers)} (no gates)"
        inherited = f"; {self.version} has no block of its own and inherits them" if self.inherited else ""
        return f"{path}: {' + '.join(self.layers)} ({len(self.gates)} gates{inherited})"
