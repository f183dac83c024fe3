"""Replaying one recorded version folder offline, outside a pytest run: the version folder as the upgrade
gate's baseline (upgrade_baseline.py) and every version of a model side by side (trend.py) both come through here.

Pure of the run's glue: it imports no pytest, options or advice, and replays through the `Measurer` exactly
as a run does (the fast byte-equal path first; vcrpy's matchers, imported lazily inside measure.py, only for
a request that is not byte-equal to a recording), but without the replay cache: every cassette is read. The folder is opened read-only in record mode ``none``, so
nothing is ever recorded into it, and its report is built by the run's own pure `build_report`: a version
replayed here gives the numbers a ``pytest --sys1cal`` run of it gives.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Callable
from pathlib import Path

from ..codec import Codec
from ..dataset import Dataset, Rendering
from ..errors import InputError, MeasurementError
from ..gates.schema import Thresholds
from ..measure import Measurer
from ..models.base import ModelAdapter
from ..names import ALLOWED, is_plain_name
from ..redact import Redactor
from ..results import ResultRow
from ..run_report import Report, RunFacts, build_report
from ..store.folder import CassetteFolder, model_id_of, restore_from_git
from ..store.lfs import ADVICE, is_pointer
from ..store.manifest import MANIFEST

# Called after each rendering with (renderings done, renderings in all, of those done how many failed: no
# cassette, a damaged one), so a progress line can say how many were really replayed.
Progress = Callable[[int, int, int], None]


class VersionError(InputError):
    """A version folder that cannot be replayed as asked (no manifest, or not a version name)."""


def natural_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key putting versions in release order: digit runs compare as numbers (jev-1.9.0 < jev-1.13.0)."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", version) if part)


def recorded_versions(root: Path, model: str) -> list[str]:
    """The versions of `model` recorded under the cassette root (folders holding a manifest), in version order."""
    folder = root / model
    found = [p.parent.name for p in folder.glob(f"*/{MANIFEST}")] if folder.is_dir() else []
    return sorted(found, key=natural_key)


def version_folders(root: Path, model: str) -> list[str]:
    """Every version folder of `model` under the cassette root, in the order they were recorded (`recorded_order`):
    those holding a manifest and those holding cassettes without one (which a trend shows as not replayable,
    saying why, never leaves out)."""
    folder = root / model
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if p.is_dir() and ((p / MANIFEST).is_file() or any(p.glob("*/*.json")))]
    return [p.name for p in sorted(found, key=recorded_order)]


def recorded_order(folder: Path) -> tuple[bool, _dt.datetime, tuple[tuple[int, int | str], ...]]:
    """Sort key of a version folder: its manifest's ``recorded_at`` (a version's name need not say its order:
    prod-blue after prod-green), folders without one first (a set reconstructed from published outputs, a
    folder whose manifest is missing), ties and those by name in version order (natural_key)."""
    when = recorded_at(folder)
    return when is not None, when or _dt.datetime.min.replace(tzinfo=_dt.UTC), natural_key(folder.name)


def recorded_at(folder: Path) -> _dt.datetime | None:
    """The manifest's ``recorded_at`` as an aware UTC time; None when there is none or it cannot be read (the
    trend's row for the folder says what is wrong with its manifest)."""
    try:
        text = json.loads((folder / MANIFEST).read_text(encoding="utf-8")).get("recorded_at")
        when = _dt.datetime.fromisoformat(text) if isinstance(text, str) else None
    except (OSError, ValueError, AttributeError):
        return None
    if when is None:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=_dt.UTC)


def is_version_name(value: str) -> bool:
    """Whether `value` can name a version folder: a plain name (names.py), never a path."""
    return is_plain_name(value)


class ReplayAdvice:
    """What a failed rendering of a replayed version says to do. Only `missing` and `damaged` are asked (by the
    Measurer); a replay records nothing, so neither names a recording command of this run's."""

    def __init__(self, folder: CassetteFolder):
        self.folder = folder

    def missing(self, rendering: Rendering, path: Path) -> str:
        return (
            f"version {self.folder.version} has no recording for it: {restore_from_git(path, str(path))}, or "
            f"record the missing renderings into {self.folder.path}"
        )

    def damaged(self, rendering: Rendering, path: Path) -> str:
        return ADVICE if is_pointer(path) else restore_from_git(path)


def open_version(root: Path, model: str, version: str, adapter: ModelAdapter) -> CassetteFolder:
    """The version folder ``root/model/version``, read-only in record mode none, its manifest validated, and
    `adapter` set to ask what was recorded (the manifest's settings). Raises VersionError when the folder has
    no manifest (InputError, from the manifest's reader, when the manifest is wrong)."""
    if not is_version_name(version):
        raise VersionError(f"{version!r} is not a version name (one folder name under {root / model}: {ALLOWED})")
    folder = CassetteFolder(root, model, version, "none", Redactor(adapter.secrets), read_only=True)
    if folder.manifest is None:
        listed = ", ".join(recorded_versions(root, model)) or "none"
        raise VersionError(
            f"{folder.path / MANIFEST}: no such manifest, so {folder.path} is not a recorded version of {model} "
            f"(versions recorded under {root / model}: {listed}); restore its manifest.json from version control, "
            "or re-record the folder"
        )
    try:
        adapter.use_recorded_settings(folder.recorded_settings)
    except InputError as exc:  # a setting the environment sets otherwise than the folder was recorded with
        raise InputError(f"{folder.path}: {exc}") from None
    adapter.model_id = model_id_of(folder, None)  # the id it was recorded under, whatever this run sends
    return folder


def recorded_dataset(folder: CassetteFolder) -> tuple[str, str]:
    """(name, sha256) of the dataset the folder's cassettes were recorded for (its manifest says)."""
    assert folder.manifest is not None
    dataset = folder.manifest["dataset"]
    return str(dataset["name"]), str(dataset["sha256"])


def replayed_repeats(folder: CassetteFolder) -> int:
    """Model repeats behind each rendering's value when the folder is replayed: samples × repeats per answer."""
    return folder.repeats(None) * folder.repeats_per_answer


def replay_folder(
    folder: CassetteFolder, dataset: Dataset, adapter: ModelAdapter, *, progress: Progress | None = None
) -> list[ResultRow]:
    """Every rendering of `dataset` replayed from `folder` with the manifest's questions and repeats, in the
    dataset's order. A rendering that cannot be replayed gets a failed row saying why (a missing cassette is
    said without opening vcrpy); a fatal error (every rendering would fail alike) raises MeasurementError."""
    codec = Codec(adapter, folder.questions, folder.repeats(None))
    measurer = Measurer(codec, folder, advice=ReplayAdvice(folder))
    rows: list[ResultRow] = []
    total, failed = len(dataset.renderings), 0
    try:
        for done, rendering in enumerate(dataset.renderings, start=1):
            rows.append(_replay_one(measurer, folder, rendering))
            failed += rows[-1].error is not None
            if progress is not None:
                progress(done, total, failed)
    finally:
        measurer.close()
    return rows


def _replay_one(measurer: Measurer, folder: CassetteFolder, rendering: Rendering) -> ResultRow:
    path = folder.path_for(rendering)
    if not path.is_file():
        return ResultRow.failed(rendering, f"{path}: no cassette; {measurer.advice.missing(rendering, path)}")
    try:
        return measurer.measure(rendering)
    except MeasurementError as exc:
        if exc.fatal:
            raise
        return ResultRow.failed(rendering, str(exc))


def version_report(
    folder: CassetteFolder,
    rows: list[ResultRow],
    dataset: Dataset,
    thresholds: Thresholds | None,
    *,
    seed: int,
    bootstrap: int,
    recalibration_splits: int,
) -> Report:
    """The report a ``pytest --sys1cal`` replay of this version would build (no baseline): same facts, same
    pure `build_report`, so the same numbers and, with `thresholds`, the same gates."""
    facts = RunFacts(
        model=folder.model,
        version=folder.version,
        model_id=model_id_of(folder, None),
        source=folder.source,
        server_model=folder.server_model,
        repeats=folder.repeats(None),
        repeats_per_answer=folder.repeats_per_answer,
        seed=seed,
        bootstrap=bootstrap,
        recalibration_splits=recalibration_splits,
    )
    return build_report(facts, rows, dataset, thresholds, None)
