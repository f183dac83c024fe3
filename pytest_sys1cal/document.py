"""The report document: the one home of the JSON report's shape. Its blocks are typed here (``TypedDict``s that
the type checker holds every reader to, so a mistyped key fails the suite, not a user's run), it is assembled
here (`report_document`, which run_report.py calls), turned into text here (`dumps`) and read back here
(`read_report`, for baselines and the offline commands). What each key means: docs/report.md.

Blocks whose keys depend on what could be measured are ``total=False``: a reader still gets a key it names
checked against the block's keys, and handles the absent ones as the report allows (``reason`` says why a
value is missing). No timestamps or timings: the same cassettes and seed give a byte-identical file."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, cast

from . import __version__
from .document_decisions import Decisions, OptionSwap, Readout, RecalibratedReadout
from .document_sequential import SequentialBlock
from .document_upgrade import Comparison, UpgradeDetails
from .document_why import Decomposition, HeldOutMap, MapUsed, Reliability, RepeatNoise
from .errors import InputError
from .vocabulary import REPORT_SCHEMA, Verdict

# Per primitive, the item column holding its answer (the repeat mean; Score: its expectation μ_S). Literal keys:
# a reader that takes a column from here is held to Item's keys like one that names it.
AnswerColumn = Literal["p_noul", "p_choice", "mu_score"]
ANSWER_COLUMNS: dict[str, AnswerColumn] = {"noul": "p_noul", "choice": "p_choice", "score": "mu_score"}


class ModelBlock(TypedDict):
    name: str
    version: str
    source: str  # of the cassettes: recorded, reconstructed, mixed
    server_model: str | None
    # The model id sent to the server, where it is not the version (--sys1cal-model-id): absent otherwise.
    model_id: NotRequired[str]


class DatasetBlock(TypedDict):
    name: str
    sha256: str
    renderings: int
    latent_problems: int


class Reasoned(TypedDict, total=False):
    """What every block shares: why some of its values are None (absent when everything was computed)."""

    reason: str


class Counts(TypedDict):
    renderings: int
    measured: int
    failed: int
    latent_problems: int


class OvlSummary(TypedDict):
    """Mean and median OVL = 1 − distance to p* (null with no items)."""

    mean_ovl: float | None
    median_ovl: float | None


class CallReading(TypedDict):
    """The report's ``calls`` (analysis/calls.py): whether the cassettes hold every call, so that each primitive
    has a per-call reading beside the repeat mean, how many calls, and why not (each answer a published mean)."""

    measured: bool
    calls: int
    reason: NotRequired[str]


class CallSummary(OvlSummary):
    """Table 1 per call (``primitives.<p>.per_call``): over each rendering's calls, then over renderings."""

    calls: int
    mean_tv: float | None
    reason: NotRequired[str]


class CallCell(TypedDict):
    """A by-family or by-representation cell per call (``…primitives.<p>.per_call``)."""

    mean_tv: float | None
    mean_ovl: float | None


class CallCalibration(TypedDict):
    """``calibration.<p>.per_call``: ECE with every call a point (weighing 1/r_i) and the per-call Brier."""

    ece: float | None
    brier: float | None
    reason: NotRequired[str]


class PrimitiveRow(OvlSummary):
    """One primitive of Table 1 (``primitives``): the repeat means' reading, and ``per_call`` beside it."""

    n: int
    mean_tv: float | None
    reason: NotRequired[str]
    per_call: NotRequired[CallSummary]  # absent in a report written before the per-call reading


class GroupCell(TypedDict):
    """One primitive of a family or representation: Table 1 on its renderings where the primitive was asked."""

    n: int
    latent_problems: int
    mean_tv: float | None
    mean_ovl: float | None
    per_call: NotRequired[CallCell]


class GroupRow(TypedDict):
    """One family or representation of by_family / by_representation."""

    renderings: int
    latent_problems: int
    primitives: dict[str, GroupCell]


class SensitivityRow(TypedDict):
    """One primitive of Table 6 (``representation_sensitivity``)."""

    latent_problems: int
    mean_pairwise_tv: float | None
    mean_max_tv: float | None
    reason: NotRequired[str]


class LambdaTestBlock(TypedDict):
    """The valid test of λ = 0 (``uncertainty.test``)."""

    name: str
    statistic: float | None
    p_value: float | None
    permutation_p_value: float | None
    df: int | None
    effect: float | None
    effect_ci: list[float] | None
    alternative: str
    latent_problems: int
    note: str
    reason: NotRequired[str]


class PaperSummary(TypedDict):
    """The paper's summary of per-latent values (``uncertainty.improvement``): mean ± 1.96·se, t, two-sided p."""

    mean: float
    ci: list[float] | None
    t: float | None
    p: float | None


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
        "improvement": PaperSummary | None,
        "test": LambdaTestBlock,
        "notes": list[str],
        "reason": NotRequired[str],
    },
)


class Reading(OvlSummary):
    """One reading of Choice in Table 3 (raw, inverse, the T/U/F interval: only it has a width and coverage)."""

    mean_width: NotRequired[float | None]
    coverage: NotRequired[float | None]
    note: NotRequired[str]


class ChoiceCalibration(TypedDict):
    """Table 3 (``choice_calibration``)."""

    n: int
    raw: Reading
    inverse: Reading
    tuf: Reading
    reason: NotRequired[str]


class CalibrationRow(TypedDict):
    """One primitive's soft-target calibration (``calibration``)."""

    n: int
    ece: float | None
    ece_bins: int | None
    ece_equal_mass: float | None
    ece_equal_mass_bins: int | None
    brier: float | None
    reason: NotRequired[str]
    per_call: NotRequired[CallCalibration]


# One repeat's raw answers as the adapter gave them: ``noul``, ``choice``, ``choice_swapped`` (P(True)) and
# ``score`` (10 levels), each absent when not asked.
Sample = dict[str, Any]


class Measured(TypedDict):
    """One rendering as the analysis takes it (results.analysis_rows): its identity, p* and samples, or the
    ``error`` that left it unmeasured."""

    instance_id: str
    latent_instance_id: str
    family: str
    representation: str
    p_star: float
    samples: list[Sample]
    error: NotRequired[str]
    server_model: NotRequired[str | None]
    recorded: NotRequired[bool]


class Item(TypedDict):
    """One rendering as measured, a row of ``items[]``. The analysis writes every key; a report read back is
    checked for the first five (validate_report), so readers take the others as possibly absent."""

    instance_id: str
    latent_instance_id: str
    family: str
    representation: str
    p_star: float
    p_noul: NotRequired[float | None]
    p_choice: NotRequired[float | None]
    p_choice_swapped: NotRequired[float | None]
    mu_score: NotRequired[float | None]
    score_probabilities: NotRequired[list[float] | None]
    repeats: NotRequired[int]
    samples: NotRequired[list[Sample]]


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
    details: UpgradeDetails
    tolerated: bool


class Interrupted(TypedDict):
    reason: str
    selected: int
    measured: int


class ShardBlock(TypedDict):
    """A run of one shard (--sys1cal-shard=I/N): which, and its share of the dataset."""

    index: int
    count: int
    latent_problems: int
    renderings: int
    of_latent_problems: int


class Failure(TypedDict):
    """A rendering that could not be measured, and why (the line its failed item gave, redacted)."""

    instance_id: str
    error: str


class Analysis(TypedDict):
    """What analysis.analyze() computes from the measured renderings: the report's blocks, as it writes them."""

    counts: Counts
    failures: NotRequired[list[Failure]]  # only where a rendering failed: a complete report is unchanged
    calls: NotRequired[CallReading]  # absent in a report written before the per-call reading
    primitives: dict[str, PrimitiveRow]
    by_family: dict[str, GroupRow]
    by_representation: dict[str, GroupRow]
    representation_sensitivity: dict[str, SensitivityRow]
    uncertainty: Uncertainty
    choice_calibration: ChoiceCalibration
    decisions: Decisions
    option_swap: OptionSwap | None
    readout: dict[str, Readout]
    readout_recalibrated: dict[str, RecalibratedReadout]
    calibration: dict[str, CalibrationRow]
    # Why it reads so (docs/statistics.md §8). Absent from reports written before they existed (a saved baseline may
    # be one): readers use .get().
    decomposition: NotRequired[dict[str, Decomposition]]
    reliability: NotRequired[dict[str, Reliability]]
    repeat_noise: NotRequired[dict[str, RepeatNoise]]
    recalibrated: NotRequired[dict[str, HeldOutMap]]
    items: list[Item]


class ReportDocument(Analysis):
    schema: str
    generator: str
    model: ModelBlock
    dataset: DatasetBlock
    repeats: int
    repeats_per_answer: int
    seed: int
    gates: list[GateJSON]
    notices: list[str]
    interrupted: NotRequired[Interrupted]
    shard: NotRequired[ShardBlock]
    comparison: NotRequired[Comparison]
    sequential: NotRequired[SequentialBlock]
    recalibration: NotRequired[MapUsed]  # only in a run replayed through a map (--sys1cal-recalibration)


def report_document(
    *,
    model: ModelBlock,
    dataset: DatasetBlock,
    repeats: int,
    seed: int,
    analysis: Analysis,
    gates: Sequence[GateJSON] = (),
    repeats_per_answer: int = 1,
    notices: Sequence[str] = (),
) -> ReportDocument:
    """The document from its parts (run_report.py builds the run's; `analysis` is analysis.analyze()'s
    blocks). repeats: samples per rendering; repeats_per_answer: model repeats averaged into each sample (10
    for cassettes reconstructed from published means)."""
    return {
        "schema": REPORT_SCHEMA,
        "generator": f"pytest-sys1cal {__version__}",
        "model": model.copy(),
        "dataset": dataset.copy(),
        "repeats": repeats,
        "repeats_per_answer": repeats_per_answer,
        "seed": seed,
        **analysis,
        "gates": list(gates),
        "notices": list(notices),
    }


def dumps(document: Mapping[str, object]) -> str:
    """A document (a report, or an offline command's: document_commands.py) as the file holds it: sorted keys,
    no NaN, UTF-8 text."""
    return json.dumps(document, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------- reading


VERDICTS = tuple(str(verdict) for verdict in Verdict)


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
    return _document(data)


def reparsed(
    report: ReportDocument, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None
) -> ReportDocument:
    """`report` as its file reads back: dumped, then parsed (`object_pairs_hook` builds each mapping, e.g. in an
    order of its own), so that what is drawn from a run's report and from its saved file is the same."""
    return _document(json.loads(dumps(report), object_pairs_hook=object_pairs_hook))


def _document(data: Any) -> ReportDocument:
    """The one unchecked step from parsed JSON to the typed document. read_report's JSON was checked for what every
    reader relies on (validate_report: the schema, the model and dataset blocks, each item's identity and values,
    each gate row's name and verdict), the rest is as the run wrote it; reparsed's is a typed document's own text."""
    return cast(ReportDocument, data)


def validate_report(data: Any, where: str = "the report") -> None:
    """Raise ReportError unless `data` is a sys1cal report whose items carry what its readers use."""
    found = data.get("schema") if isinstance(data, Mapping) else type(data).__name__
    if found != REPORT_SCHEMA:
        raise ReportError(
            f"{where}: not a sys1cal report (schema {found!r}, expected {REPORT_SCHEMA!r}; write one with --sys1cal-report)"
        )
    for block in ("model", "dataset"):
        if not isinstance(data.get(block), Mapping):
            raise ReportError(f"{where}: the report has no {block!r} block; was it written by --sys1cal-report?")
    items = data.get("items")
    if not isinstance(items, list) or not items:
        raise ReportError(f"{where}: the report has no items[] (no rendering was measured)")
    for key in ("instance_id", "latent_instance_id", "family", "representation", "p_star"):
        if any(not isinstance(item, Mapping) or item.get(key) is None for item in items):
            raise ReportError(f"{where}: an item lacks {key!r}; was it written by an older pytest-sys1cal?")
    gates = data.get("gates") or []
    for index, gate in enumerate(gates if isinstance(gates, list) else [None]):
        if (
            not isinstance(gate, Mapping)
            or not isinstance(gate.get("name"), str)
            or gate.get("verdict") not in VERDICTS
        ):
            raise ReportError(
                f"{where}: gates[{index}] is not a gate row (a name and one of the verdicts {', '.join(VERDICTS)}); "
                "write the report again with --sys1cal-report"
            )
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


def dataset_sha(report: ReportDocument) -> str | None:
    return report["dataset"].get("sha256")


def model_source(report: ReportDocument) -> str | None:
    """How the report's answers were obtained: "recorded", or "reconstructed" from published outputs."""
    return report["model"].get("source")


def averaged_calls(report: ReportDocument) -> int:
    """How many calls each rendering's value in a report averages: samples × calls averaged into each sample."""
    return int(report.get("repeats") or 1) * int(report.get("repeats_per_answer") or 1)


def model_and_version(model: ModelBlock) -> str:
    """A report's `model` block as words, e.g. "jev jev-1.13.0"."""
    return f"{model.get('name')} {model.get('version')}"
