"""The baseline of the upgrade gate (``--sys1cal-baseline=VALUE``), resolved and checked here before any item
runs, so a baseline that cannot be compared stops the run at once. VALUE is, in this order:

- an existing file: an earlier JSON report (``--sys1cal-report``), read as saved;
- the name of another recorded version of this model (``<cassette root>/<model>/<VALUE>/manifest.json``):
  replayed offline now (replay.py: read-only, record mode none, the run's seed), its report built by the same
  pure `build_report` without thresholds, so it is compared exactly as a saved report of it would be;
- neither: one usage error listing the versions that exist.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..dataset import Dataset, line_ending_hint
from ..document import ReportDocument, ReportError, averaged_calls, read_report
from ..errors import MeasurementError
from ..gates.schema import Reading
from ..gates.upgrade import UpgradeError, check_baseline
from ..models.base import ModelAdapter
from ..run_report import Baseline
from ..store.folder import reference_root
from ..vocabulary import CALL_READING
from .replay import (
    is_version_name,
    open_version,
    recorded_dataset,
    recorded_versions,
    replay_folder,
    version_report,
)

OPTION = "--sys1cal-baseline"


@dataclass(frozen=True)
class BaselineRequest:
    """What resolving a baseline needs of the run, as plain values (not the pytest session's): the option's
    raw value, the model, where its versions are recorded (and whether that is the default cassette root),
    and how the run's analysis is seeded and sized."""

    value: str
    model: str
    cassettes: Path
    default_cassettes: bool
    seed: int
    bootstrap: int
    recalibration_splits: int


def load_baseline(path: str | Path) -> ReportDocument:
    """Read a JSON report written by --sys1cal-report. Raises UpgradeError naming the file."""
    try:
        return read_report(path)
    except ReportError as exc:
        raise UpgradeError(f"baseline {exc}") from None


def averaged_repeats(report: ReportDocument) -> int:
    """How many model repeats each rendering's value in a report averages."""
    return averaged_calls(report)


def resolve_baseline(
    request: BaselineRequest,
    *,
    version: str,
    dataset: Dataset,
    adapter_for: Callable[[str], ModelAdapter],
    invocation_dir: Path,
) -> Baseline:
    """This run's baseline from the raw option value (see the module's docstring). `version` is this run's
    model version; `adapter_for(v)` makes the adapter of version v; a relative path is read from
    `invocation_dir`. Raises UpgradeError (a usage error) when the baseline cannot be compared."""
    value = request.value
    path = Path(value).expanduser()
    path = path if path.is_absolute() else invocation_dir / path
    if path.is_file():
        return saved_baseline(path, dataset.sha256, request.model, shown_path(path, invocation_dir))
    model = request.model
    # The bundled reference set stands in for a project's missing jev-1.13.0 folder here too (store/folder.py).
    reference = reference_root(request.cassettes, model, value, "none", default_root=request.default_cassettes)
    root = reference or request.cassettes
    versions = recorded_versions(root, model)
    if not is_version_name(value) or value not in versions:
        folder_note = f"{path} is a folder, not a saved report; " if path.is_dir() else ""
        # A value that is not a plain name is never looked up as a folder (names.py): it would be a path.
        named = f"no recorded version {value!r}" if is_version_name(value) else f"{value!r} is not a version name"
        listed = ", ".join(versions) or "none"
        raise UpgradeError(
            f"{OPTION}={value}: {folder_note}no file {path}, and {named} of model {model} "
            f"under {root / model} (versions recorded there: {listed}). Give the path of a saved JSON report "
            f"(--sys1cal-report), which must exist, or one of those versions"
        )
    if value == version:
        others = ", ".join(v for v in versions if v != version) or "none"
        raise UpgradeError(
            f"{OPTION}={value} is this run's own version: a version compared with itself shows nothing. Name "
            f"another recorded version of {model} (recorded: {others}) or a saved JSON report"
        )
    baseline = version_baseline(value, request, dataset, adapter_for(value), root)
    if reference is not None:
        return replace(baseline, origin="bundled reference", location=f"{model}/{value}")
    return replace(baseline, location=shown_path(root / model / value, invocation_dir))


def shown_path(path: Path, base: Path) -> str:
    """`path` as a reader types it: relative to `base` (where pytest ran) when inside it, else as it is; no
    machine's absolute checkout path in a job summary or a pull-request comment."""
    for inside, root in ((Path(os.path.abspath(path)), Path(os.path.abspath(base))), (path.resolve(), base.resolve())):
        if inside.is_relative_to(root):  # as given first (a symlinked folder stays where the user put it)
            return inside.relative_to(root).as_posix()
    return path.as_posix()


def saved_baseline(path: Path, dataset_sha256: str, model: str | None = None, location: str | None = None) -> Baseline:
    """The saved report at `path` as this run's baseline: a complete run's report (not an interrupted one, which
    describes part of its selection) of this run's `model`, on the same dataset."""
    name = f"{OPTION} {path}"
    report = load_baseline(path)
    check_baseline(report, dataset_sha256, name)
    stopped = report.get("interrupted")
    if stopped:
        raise UpgradeError(
            f"{name}: the report of an interrupted run ({stopped.get('reason')}: {stopped.get('measured')} of "
            f"{stopped.get('selected')} selected renderings measured), which describes only part of its run; "
            "compare with a complete run's report (one written beside it, e.g. report.json beside "
            "report.interrupted.json) or a recorded version"
        )
    rounds = report.get("sequential")
    if rounds and rounds["latent_problems"] < rounds["design"]["latent_problems"]:
        raise UpgradeError(
            f"{name}: the report of a recording in rounds that holds {rounds['latent_problems']} of "
            f"{rounds['design']['latent_problems']} latent problems, which describes only part of the dataset; "
            "resume that recording to the full dataset (record mode once without --sys1cal-sequential) and compare "
            "with its report, or with its version folder"
        )
    theirs = (report.get("model") or {}).get("name")
    if model is not None and theirs != model:
        raise UpgradeError(
            f"{name}: a report of model {theirs!r}, and this run measures {model!r}; the upgrade gate compares two "
            f"versions of one model: give a report of {model}, or a recorded version of it"
        )
    return Baseline(report, str(path), origin="saved report", location=location or str(path))


def version_baseline(
    version: str, request: BaselineRequest, dataset: Dataset, adapter: ModelAdapter, root: Path
) -> Baseline:
    """Another recorded version (under the cassette `root`) replayed offline over the whole dataset, with this
    run's seed, into the report a run of it would write; refused when it was recorded on another dataset or
    does not replay completely."""
    folder = open_version(root, request.model, version, adapter)
    name, sha256 = recorded_dataset(folder)
    if sha256 != dataset.sha256:
        raise UpgradeError(
            f"{OPTION}={version}: its cassettes ({folder.path}) were recorded for dataset {name} sha256 {sha256}, "
            f"this run's dataset {dataset.name} has sha256 {dataset.sha256}"
            f"{line_ending_hint(dataset.path, sha256)}; a paired comparison needs the same "
            "renderings: run on the dataset it was recorded for (--sys1cal-dataset), or name another baseline"
        )
    try:
        rows = replay_folder(folder, dataset, adapter)
    except MeasurementError as exc:
        raise UpgradeError(f"{OPTION}={version}: replaying {folder.path} stopped: {exc}") from None
    failed = [row for row in rows if row.error is not None]
    if failed:
        raise UpgradeError(
            f"{OPTION}={version}: {len(failed)} of {len(rows)} renderings could not be replayed from {folder.path} "
            f"(first, {failed[0].instance_id}: {failed[0].error}); a baseline must replay the whole dataset, "
            "as a saved report of it would cover it"
        )
    report = version_report(
        folder,
        rows,
        dataset,
        None,
        seed=request.seed,
        bootstrap=request.bootstrap,
        recalibration_splits=request.recalibration_splits,
    )
    check_baseline(report.data, dataset.sha256, f"{OPTION}={version}")
    return Baseline(report.data, version, origin="version folder", location=folder.path.as_posix())


def check_repeats(baseline: Baseline, repeats: int, repeats_per_answer: int, reading: Reading | None = None) -> None:
    """Per-item OVL of a repeat mean depends on the number of repeats averaged: compare like with like. Read per
    call (`reading` call) the expected OVL of one call does not, so any repeats compare, but both sides must hold
    single calls."""
    if reading is not None and reading.value == CALL_READING:
        per_answer = int(baseline.report.get("repeats_per_answer") or 1)
        refused = reading.refusal(f"the baseline {baseline.name}", per_answer)
        if refused:
            raise UpgradeError(f"{OPTION} {baseline.name}: {refused}")
        return
    theirs, ours = averaged_repeats(baseline.report), repeats * repeats_per_answer
    if theirs != ours:
        raise UpgradeError(
            f"{OPTION} {baseline.name}: each of its answers averages {theirs} model repeat(s), "
            f"this run's {ours}; the OVL of a mean depends on how many repeats it averages, so record both with "
            f"as many repeats (--sys1cal-repeats={theirs // repeats_per_answer or 1})"
        )
