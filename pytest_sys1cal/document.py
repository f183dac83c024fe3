"""The report document: the one home of the JSON report's shape. Its blocks are typed here (``TypedDict``s that
the type checker holds every reader to, so a mistyped key fails the suite, not a user's run), it is assembled
here (`report_document`, which run_report.py calls), turned into text here (`dumps`) and read back here
(`read_report`, for baselines and the offline commands). What each key means: docs/report.md.

Blocks whose keys depend on what could be measured are ``total=False``: a reader still gets a key it names
checked against the block's keys, and handles the absent ones as the report allows (``reason`` says why a
value is missing). No timestamps or timings: the same cassettes and seed give a byte-identical file."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

from . import __version__
from .document_why import CellTests, Decomposition, HeldOutMap, MapUsed, Reliability, RepeatNoise, Why
from .errors import InputError
from .vocabulary import REPORT_SCHEMA

# Per primitive, the item column holding its answer (the repeat mean; Score: its expectation μ_S).
ANSWER_COLUMNS = {"noul": "p_noul", "choice": "p_choice", "score": "mu_score"}


class ModelBlock(TypedDict):
    name: str
    version: str
    source: str  # of the cassettes: recorded, reconstructed, mixed
    server_model: str | None


class DatasetBlock(TypedDict):
    name: str
    sha256: str
    renderings: int
    latent_problems: int


class Counts(TypedDict):
    renderings: int
    measured: int
    failed: int
    latent_problems: int


class PrimitiveRow(TypedDict, total=False):
    n: int
    mean_tv: float | None
    mean_ovl: float | None
    median_ovl: float | None
    reason: str


class GroupRow(TypedDict, total=False):
    """One family or representation of by_family / by_representation."""

    renderings: int
    latent_problems: int
    primitives: dict[str, PrimitiveRow]


class SensitivityRow(TypedDict, total=False):
    latent_problems: int
    mean_pairwise_tv: float | None
    mean_max_tv: float | None
    reason: str


class LambdaTestBlock(TypedDict, total=False):
    name: str
    statistic: float | None
    p_value: float | None
    permutation_p_value: float | None
    df: int
    effect: float | None
    effect_ci: list[float] | None
    alternative: str
    latent_problems: int
    note: str
    reason: str


# Functional form: one of its keys, "lambda", is a Python keyword.
Uncertainty = TypedDict(
    "Uncertainty",
    {
        "n": int,
        "latent_problems": int,
        "alpha": float | None,
        "beta": float | None,
        "lambda": float | None,
        "r2": float | None,
        "r2_vs_identity": float | None,
        "u_max": float | None,
        "u_max_ci": list[float] | None,
        "u_peak_at": float | None,
        "lambda_ci": list[float] | None,
        "lambda_latent_mean": float | None,
        "lambda_latent_ci": list[float] | None,
        "lambda_latent_p": float | None,
        "lambda_latent_t": float | None,
        "share_choice_below_mu": float | None,
        "bootstrap_resamples": int,
        "improvement": dict[str, Any] | None,
        "test": LambdaTestBlock,
        "notes": list[str],
        "reason": str,
    },
    total=False,
)


class Reading(TypedDict, total=False):
    """One reading of Choice in Table 3 (raw, inverse, the T/U/F interval)."""

    mean_ovl: float | None
    median_ovl: float | None
    mean_width: float | None
    coverage: float | None


class ChoiceCalibration(TypedDict, total=False):
    n: int
    raw: Reading
    inverse: Reading
    tuf: Reading
    reason: str


class Readout(TypedDict, total=False):
    """How a probability reads out as a True/False decision (the readout block, and the option swap's part)."""

    n: int
    n_true: int
    n_false: int
    auc: float | None
    balanced_accuracy: float | None
    recall_true: float | None
    recall_false: float | None
    offset: float | None
    sep: float | None
    collapsed: bool | None
    reason: str


class OptionSwap(Readout, total=False):
    first_position_rate: float | None
    mean_shift: float | None
    statistic: float | None
    p_value: float | None
    test: str
    swap_consistency: float | None


class CalibrationRow(TypedDict, total=False):
    n: int
    ece: float | None
    ece_bins: int
    ece_equal_mass: float | None
    ece_equal_mass_bins: int
    brier: float | None
    reason: str


class Item(TypedDict, total=False):
    """One rendering as measured (``samples``: per repeat, the raw answers; absent keys were not asked)."""

    instance_id: str
    latent_instance_id: str
    family: str
    representation: str
    p_star: float
    p_noul: float | None
    p_choice: float | None
    p_choice_swapped: float | None
    mu_score: float | None
    score_probabilities: list[float] | None
    repeats: int
    samples: list[dict[str, Any]]
    error: str


class GateJSON(TypedDict, total=False):
    """A row of ``gates[]`` (gates/rows.py writes it); the upgrade gate's rows carry the comparison's details."""

    name: str
    metric: str
    observed: float | None
    limit: float | None
    passed: bool | None
    verdict: str
    explanation: str
    baseline: float | None
    new: float | None
    details: dict[str, Any]
    tolerated: bool


class Interrupted(TypedDict):
    reason: str
    selected: int
    measured: int


class ComparedSide(TypedDict):
    """One side of the upgrade comparison: the model, its version and its cassettes' source."""

    model: str
    version: str
    source: str | None


class BaselineSide(ComparedSide):
    """The baseline side, and where it came from: ``origin`` is "version folder" (another recorded version,
    replayed offline in the run), "saved report" (a JSON report) or "bundled reference" (the bundled jev-1.13.0
    cassettes); ``location`` the folder or file as the user would type it (relative to where pytest ran when
    inside it)."""

    origin: str
    location: str


class PrimitiveComparison(TypedDict, total=False):
    """The upgrade gate's row of one primitive, the numbers a reviewer reads: Δ̂ with its one-sided bounds (at
    their Holm levels) and the margins it was held to (``reason`` when it was not compared)."""

    verdict: str
    n: int
    baseline: float | None
    new: float | None
    difference: float | None
    lower: float
    lower_level: float
    upper: float
    upper_level: float
    margin: float
    fail_margin: float
    tolerated: bool
    why: Why
    reason: str


class AbsoluteGates(TypedDict):
    """The thresholds.yaml gates beside the upgrade verdict: how many, their verdicts, the run's line for them."""

    total: int
    verdicts: dict[str, int]
    outcome: str
    line: str


class MovedRendering(TypedDict):
    """One paired rendering: both answers per primitive, D_i = OVL new − OVL baseline, the node id that re-runs it."""

    instance_id: str
    family: str | None
    representation: str | None
    p_star: float
    node_id: str | None
    baseline: dict[str, float | None]
    new: dict[str, float | None]
    d: dict[str, float | None]
    worst: float | None
    worst_primitive: str | None


class Comparison(TypedDict):
    """The top-level ``comparison`` block: present only when a baseline was in force (gates/upgrade_verdict.py)."""

    headline: str
    summary: str
    verdict: str
    baseline: BaselineSide
    candidate: ComparedSide
    paired: int
    primitives: dict[str, PrimitiveComparison]
    absolute_gates: AbsoluteGates
    renderings: list[MovedRendering]
    cells: NotRequired[CellTests]  # absent from reports written before the cells were tested


class ReportDocument(TypedDict):
    schema: str
    generator: str
    model: ModelBlock
    dataset: DatasetBlock
    repeats: int
    repeats_per_answer: int
    seed: int
    counts: Counts
    primitives: dict[str, PrimitiveRow]
    by_family: dict[str, GroupRow]
    by_representation: dict[str, GroupRow]
    representation_sensitivity: dict[str, SensitivityRow]
    uncertainty: Uncertainty
    choice_calibration: ChoiceCalibration
    decisions: dict[str, Any]
    option_swap: OptionSwap | None
    readout: dict[str, Readout]
    readout_recalibrated: dict[str, dict[str, Any]]
    calibration: dict[str, CalibrationRow]
    # Absent from reports written before they existed (a saved baseline may be one): readers use .get().
    decomposition: NotRequired[dict[str, Decomposition]]
    reliability: NotRequired[dict[str, Reliability]]
    repeat_noise: NotRequired[dict[str, RepeatNoise]]
    recalibrated: NotRequired[dict[str, HeldOutMap]]
    recalibration: NotRequired[MapUsed]  # only in a run replayed through a map (--sys1cal-recalibration)
    gates: list[GateJSON]
    notices: list[str]
    items: list[Item]
    interrupted: NotRequired[Interrupted]
    comparison: NotRequired[Comparison]


def report_document(
    *,
    model: ModelBlock,
    dataset: DatasetBlock,
    repeats: int,
    seed: int,
    analysis: Mapping[str, Any],
    gates: Sequence[GateJSON] = (),
    repeats_per_answer: int = 1,
    notices: Sequence[str] = (),
) -> ReportDocument:
    """The document from its parts (run_report.py builds the run's; `analysis` is analysis.analyze()'s
    blocks). repeats: samples per rendering; repeats_per_answer: model repeats averaged into each sample (10
    for cassettes reconstructed from published means)."""
    return cast(
        ReportDocument,
        {
            "schema": REPORT_SCHEMA,
            "generator": f"pytest-sys1cal {__version__}",
            "model": dict(model),
            "dataset": dict(dataset),
            "repeats": repeats,
            "repeats_per_answer": repeats_per_answer,
            "seed": seed,
            **analysis,
            "gates": list(gates),
            "notices": list(notices),
        },
    )


def dumps(report: Mapping[str, Any]) -> str:
    """The document as the file holds it: sorted keys, no NaN, UTF-8 text."""
    return json.dumps(report, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------- reading


class ReportError(InputError):
    """A file that is not a readable sys1cal JSON report; the message names the file."""


def read_report(path: str | Path) -> ReportDocument:
    """Read and check a JSON report written by ``--sys1cal-report`` (`validate_report`). Raises ReportError."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: not a JSON file ({exc})") from None
    validate_report(data, str(path))
    return cast(ReportDocument, data)


def validate_report(data: Any, where: str = "the report") -> None:
    """Raise ReportError unless `data` is a sys1cal report whose items carry what its readers use."""
    found = data.get("schema") if isinstance(data, Mapping) else type(data).__name__
    if found != REPORT_SCHEMA:
        raise ReportError(
            f"{where}: not a sys1cal report (schema {found!r}, expected {REPORT_SCHEMA!r}; write one with --sys1cal-report)"
        )
    items = data.get("items")
    if not isinstance(items, list) or not items:
        raise ReportError(f"{where}: the report has no items[] (no rendering was measured)")
    for key in ("instance_id", "latent_instance_id", "family", "representation", "p_star"):
        if any(not isinstance(item, Mapping) or item.get(key) is None for item in items):
            raise ReportError(f"{where}: an item lacks {key!r}; was it written by an older pytest-sys1cal?")
    for index, item in enumerate(items):
        problem = _unusable(item)
        if problem:
            raise ReportError(
                f"{where}: items[{index}] ({item['instance_id']}): {problem}; a report with unusable values is "
                "refused rather than compared on what is left (write it again with --sys1cal-report)"
            )


def _unusable(item: Mapping[str, Any]) -> str | None:
    """Why an item's values cannot be compared (None when they can): probabilities must be numbers in
    [0, 1] (or null where not asked), repeats a whole number ≥ 1."""
    for key in ("p_star", "p_noul", "p_choice", "p_choice_swapped", "mu_score"):
        value = item.get(key)
        if value is None and key != "p_star":
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            return f"{key} is {json.dumps(value)}, not a probability"
    repeats = item.get("repeats")
    if repeats is not None and (isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1):
        return f"repeats is {json.dumps(repeats)}, not a whole number ≥ 1"
    return None


# ---------------------------------------------------------------------------------------------- reading parts


def dataset_sha(report: Mapping[str, Any]) -> str | None:
    return (report.get("dataset") or {}).get("sha256")


def model_source(report: Mapping[str, Any]) -> str | None:
    """How the report's answers were obtained: "recorded", or "reconstructed" from published outputs."""
    return (report.get("model") or {}).get("source")


def model_and_version(model: Mapping[str, Any]) -> str:
    """A report's `model` block as words, e.g. "jev jev-1.13.0"."""
    return f"{model.get('name')} {model.get('version')}"
