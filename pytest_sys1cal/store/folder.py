"""One model version's cassette folder, ``<root>/<model>/<version>``, and its life: where each rendering's
cassette is, the manifest (read and validated on every run, written when a recording starts and when it
ends), the checks a run must pass before any item runs, and what a recording may touch. The file format
itself is store/cassette.py's (and vcrpy's, in store/vcrpy_side.py)."""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..bundled import REFERENCE_MODEL, REFERENCE_VERSION, reference_cassettes
from ..dataset import Dataset, Rendering, line_ending_hint
from ..errors import InputError
from ..files import cannot_create_in, write_atomic
from ..names import case_twin, check_name
from ..questions import ALL_QUESTIONS
from ..redact import strip_userinfo
from ..vocabulary import MANIFEST_SCHEMA, RECORD_MODES
from . import answers
from .cassette import Scrubber, cassette_name
from .lfs import check_not_lfs_pointers
from .lock import LOCK_NAME, FolderLock
from .manifest import LEGACY_INDEX_FIELD, MANIFEST, after_recording, new_manifest, pinned_model_id, read_manifest
from .shard_manifest import SHARD_MANIFEST

if TYPE_CHECKING:
    from ..redact import Redactor
    from ..results import ResultRow

RECORDING_REPEATS = 10


class RefusalAdvice(Protocol):
    """The commands a refusal prints: the part of session/advice.py's Advice that the store needs."""

    @property
    def key(self) -> str: ...

    def command(self, mode: str) -> str: ...

    def record_elsewhere(self) -> str: ...

    def no_cassettes(self) -> str: ...


def folders_under(root: Path) -> list[str]:
    """``model/version`` of every folder with a manifest under a cassette root, for messages."""
    return sorted(f"{p.parent.parent.name}/{p.parent.name}" for p in root.glob(f"*/*/{MANIFEST}"))


def restore_from_git(path: Path, what: str = "it") -> str:
    """How to get a cassette file back that version control holds (a damaged or missing one)."""
    return f"restore {what} from version control (git checkout -- {shlex.quote(str(path))})"


def reference_root(root: Path, model: str, version: str, record_mode: str, *, default_root: bool) -> Path | None:
    """The bundled reference set's root when this run should replay it: a replay of Jev jev-1.13.0 in a project
    that has no folder of its own for it under the default cassette root (the project's folder, when there is
    one, always wins; a root the user named is theirs, so a typo in it stays an error; nothing is ever
    recorded into the bundled set)."""
    if record_mode != "none" or not default_root or (model, version) != (REFERENCE_MODEL, REFERENCE_VERSION):
        return None
    own = root / model / version
    if (own / MANIFEST).is_file() or any(own.glob("*/*.json")):
        return None
    reference = reference_cassettes()
    return reference if reference is not None and reference.resolve() != root.resolve() else None


def _check_unlisted(folder: CassetteFolder, advice: RefusalAdvice, collect_only: bool) -> None:
    """A folder without a manifest: refused when it holds cassettes (nothing says what they are), or, for a
    replay, because there is nothing to replay."""
    cassettes = folder.cassette_count()
    if cassettes:
        raise InputError(
            f"{folder.path / MANIFEST}: missing; the folder holds {cassettes} cassettes but no manifest saying what "
            f"they are. Restore it from version control, or {advice.key}re-record with: {advice.command('all')}"
        )
    if not folder.recording and not collect_only:
        raise InputError(advice.no_cassettes())


def _check_files(folder: CassetteFolder, dataset: Dataset, advice: RefusalAdvice) -> None:
    """What the folder's files must be for this run: writable when recording, no Git LFS pointers where
    cassettes will be read, recorded for this dataset."""
    if folder.recording and not folder.read_only:
        _check_writable(folder.path, advice)
    if folder.record_mode == "all":
        return
    check_not_lfs_pointers(folder.path)
    recorded_for = (folder.manifest or {}).get("dataset", {}).get("sha256")
    if recorded_for is not None and recorded_for != dataset.sha256:
        raise InputError(
            f"{folder.path / MANIFEST}: these cassettes were recorded for dataset sha256 {recorded_for}, but "
            f"{dataset.path} has sha256 {dataset.sha256}{line_ending_hint(dataset.path, recorded_for)}; use "
            "the matching dataset, or another --sys1cal-cassettes folder"
        )


def _check_writable(path: Path, advice: RefusalAdvice) -> None:
    """A recording must be able to create files in its folder (or, not made yet, in the nearest folder above it
    that exists): refused before anything is sent, in one line, rather than failing on the lock."""
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    why = "not a folder" if existing is not None and not existing.is_dir() else None
    why = why or (cannot_create_in(existing, LOCK_NAME) if existing is not None else "no such folder")
    if why:
        raise InputError(
            f"{path}: cannot record into it: no file can be created in {existing} ({why}); make it writable, or "
            f"{advice.key}record into another cassette folder: {advice.record_elsewhere()}"
        )


def _check_names(root: Path, model: str, version: str) -> None:
    """A model or version that is a path would put the folder elsewhere: ``x/../v`` into another version's
    folder, ``../..`` outside the cassette root (names.py); one beside a folder whose name differs only in case
    is that folder on Windows and macOS (a team's checkout there would mix the two)."""
    check_name(model, "model", "a model names its folder under the cassette root")
    check_name(version, "model version", "a version names its cassette folder (<cassette root>/<model>/<version>)")
    for what, parent, name in (("model", root, model), ("model version", root / model, version)):
        twin = case_twin(parent, name)
        if twin is not None:
            raise InputError(
                f"{what} {name!r}: {parent} already holds {twin!r}, whose name differs only in case; on Windows "
                f"and macOS the two are one folder, so a checkout there would mix them: use {twin!r}, or a name "
                "that differs by more than case"
            )


class CassetteFolder:
    """The folder of one model version. ``record_mode`` is the run's; a folder opened ``read_only`` (the
    bundled reference set) refuses every recording whatever the mode."""

    def __init__(
        self,
        root: Path,
        model: str,
        version: str,
        record_mode: str,
        redactor: Redactor,
        *,
        read_only: bool = False,
    ):
        if record_mode not in RECORD_MODES:
            raise InputError(f"record mode {record_mode!r} is not one of {', '.join(RECORD_MODES)}")
        _check_names(root, model, version)  # before anything is read or written
        self.root, self.model, self.version = root, model, version
        self.path = root / model / version
        self._prefix = str(self.path)
        self.record_mode = record_mode
        self.redactor = redactor
        self.scrub = Scrubber(redactor)  # what a recording writes into this folder
        self.read_only = read_only
        self.manifest: dict[str, Any] | None = read_manifest(self.path / MANIFEST, model, version)
        self._created_manifest = False
        self._replaced_manifest: dict[str, Any] | None = None
        self._lock = FolderLock(self.path)
        self._base_url: str | None = None

    # ------------------------------------------------------------------ what the folder holds

    @property
    def recording(self) -> bool:
        return self.record_mode != "none"

    @property
    def asks_afresh(self) -> bool:
        """Whether this run asks every question anew (record mode all, or nothing recorded yet) rather than
        what the manifest says the cassettes hold."""
        return self.record_mode == "all" or self.manifest is None

    @property
    def source(self) -> str:
        return self.manifest["source"] if self.manifest else "recorded"

    @property
    def reconstructed(self) -> bool:
        return self.source == "reconstructed"

    @property
    def repeats_per_answer(self) -> int:
        """Model repeats averaged into each recorded answer: 10 for the reconstructed Jev set."""
        return 1 if self.asks_afresh else int(self.manifest.get("repeats_per_answer", 1))  # type: ignore[union-attr]

    @property
    def questions(self) -> tuple[str, ...]:
        return ALL_QUESTIONS if self.asks_afresh else tuple(self.manifest["questions"])  # type: ignore[index]

    @property
    def server_model(self) -> str | None:
        return (self.manifest or {}).get("server_model")

    @property
    def base_url(self) -> str | None:
        """The server origin the cassettes were (last) recorded from, without credentials; None when the
        manifest does not say (reconstructed sets, folders recorded before the field existed)."""
        return (self.manifest or {}).get("base_url")

    @property
    def recorded_settings(self) -> Mapping[str, Any]:
        """The adapter settings the cassettes were recorded with, for a replay to ask the same."""
        return {} if self.record_mode == "all" else (self.manifest or {}).get("settings") or {}

    def repeats(self, given: int | None, baseline_repeats: int | None = None) -> int:
        """--sys1cal-repeats; else the manifest's when replaying; else, when recording against a baseline, as
        many repeats as the baseline averaged (like with like); else RECORDING_REPEATS."""
        if given:
            return given
        if not self.asks_afresh:
            return int(self.manifest["repeats"])  # type: ignore[index]
        return baseline_repeats or RECORDING_REPEATS

    def file_for(self, rendering: Rendering) -> str:
        """The rendering's cassette as text, for the replay path (pathlib's joins cost more than reading a
        small file)."""
        return f"{self._prefix}/{cassette_name(rendering)}"

    def path_for(self, rendering: Rendering) -> Path:
        return Path(self.file_for(rendering))

    def cassette_count(self) -> int:
        return sum(1 for _ in self.path.glob("*/*.json")) if self.path.is_dir() else 0

    # ------------------------------------------------------------------ checks before any item runs

    def check(self, dataset: Dataset, advice: RefusalAdvice, *, collect_only: bool = False) -> None:
        """Refuse (InputError): cassettes without a manifest; a replay with no cassettes for this model and
        version; cassettes of another dataset; recording into a reconstructed or read-only set."""
        if self.manifest is None and self.record_mode != "all":
            _check_unlisted(self, advice, collect_only)
        if self.recording and (self.read_only or self.reconstructed):
            what = "the bundled reference set" if self.read_only else "cassettes reconstructed from published outputs"
            instead = f"{advice.key}record into another cassette folder: {advice.record_elsewhere()}"
            raise InputError(
                f"{self.path} holds {what}, which live answers must not be mixed into or overwrite. "
                f"{instead[:1].upper()}{instead[1:]}"
            )
        _check_files(self, dataset, advice)

    # ------------------------------------------------------------------ recording

    def start_recording(
        self,
        dataset: Dataset,
        repeats: int,
        questions: Sequence[str],
        settings: Mapping[str, Any],
        base_url: str | None = None,
        model_id: str | None = None,
    ) -> str | None:
        """Before the first request: take the folder's recording lock (FolderLocked, an InputError, while
        another live recording holds it), sweep what a killed recording left half-written, and write the
        manifest (a new one when this run asks afresh), so an interrupted recording is resumable. `base_url`
        (the server recorded from) is kept in the manifest without its credentials, `model_id` (the id sent,
        where it is not the version) as it is. Returns a notice when a killed recording's lock was taken over."""
        notice = self._lock.acquire()
        self._base_url = strip_userinfo(base_url) if base_url else None
        for leftover in self.path.glob("*/.*.json.*.tmp"):
            with contextlib.suppress(OSError):
                leftover.unlink()
        if self.asks_afresh:
            self._replaced_manifest = self.manifest
            self.manifest = new_manifest(
                self.model, self.version, dataset, repeats, questions, settings, self._base_url, model_id
            )
            kept = (self._replaced_manifest or {}).get(answers.ANSWERS)
            if kept is not None:  # what this run does not re-record keeps the digest it was recorded with
                self.manifest[answers.ANSWERS] = kept
            self.write_manifest(self.manifest)
            self._created_manifest = True
        return notice

    def finish_recording(self, rows: Iterable[ResultRow], repeats: int, dataset: Dataset) -> None:
        """After the last answer: the manifest says what was recorded; a recording that saved nothing leaves
        nothing behind (the manifest it wrote, the folders it made). The lock is released whatever happens."""
        try:
            empty = self._settle_manifest(list(rows), repeats, dataset)
            if empty:
                (self.path / MANIFEST).unlink(missing_ok=True)
                (self.path / SHARD_MANIFEST).unlink(missing_ok=True)  # a shard's, written when it started
        finally:
            self._lock.release()
        if empty:
            _remove_empty_folders(self.path, self.root)

    def release(self) -> None:
        """Release the recording lock if this run still holds it (a run that ended before finishing)."""
        self._lock.release()

    def _settle_manifest(self, rows: list[ResultRow], repeats: int, dataset: Dataset) -> bool:
        """Write the manifest the recording leaves; True when it saved nothing into a folder it created."""
        if not any(row.recorded for row in rows):
            if self._created_manifest:
                self.manifest = self._replaced_manifest
                if self.manifest is None:
                    return not any(self.path.glob("*/*.json"))
                self.write_manifest(self.manifest)
            elif self.manifest is not None and answers.ANSWERS not in self.manifest:
                self._add_answers()  # a folder recorded before digests were kept, complete: it gets them now
            return False
        if self.manifest is None:
            return False
        updated = after_recording(self.manifest, rows, repeats, self._base_url)
        if updated is not None:
            names = answers.recorded_names(rows, dataset)
            updated[answers.ANSWERS] = answers.after_recording(self.path, self.manifest, names)
            self.manifest = updated
            self.write_manifest(updated)
        return False

    def _add_answers(self) -> None:
        """The digests of a folder's cassettes as they are, under the recording lock (another live recording of
        the folder writes them when it ends)."""
        try:
            self._lock.acquire()
        except InputError:
            return
        self.manifest = {**(self.manifest or {}), answers.ANSWERS: answers.after_recording(self.path, self.manifest)}
        self.write_manifest(self.manifest)

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        """The manifest written as it is, but for the digest of a replay index an older plugin kept in it: a
        replay reads no index (store/replay_cache.py), so a recording leaves none recorded."""
        kept = {key: value for key, value in manifest.items() if key != LEGACY_INDEX_FIELD}
        text = json.dumps({"schema": MANIFEST_SCHEMA, **kept}, indent=2, sort_keys=True) + "\n"
        write_atomic(self.path / MANIFEST, self.redactor.text(text))


def _remove_empty_folders(path: Path, root: Path) -> None:
    """The folders a recording that saved nothing made, where they are empty (another recording may have
    started in them since: then they stay)."""
    for directory in [*sorted(path.glob("*/"), reverse=True), path, path.parent, root]:
        with contextlib.suppress(OSError):
            if directory.is_dir() and not any(directory.iterdir()):
                directory.rmdir()


def model_id_of(folder: CassetteFolder, given: str | None) -> str | None:
    """The model id a run of `folder` sends where it is not the version (manifest.pinned_model_id): `given` for a
    folder asked afresh, else the id its manifest says it was recorded under (a `given` that differs is refused)."""
    return pinned_model_id(folder.manifest, folder.path, folder.version, given, afresh=folder.asks_afresh)
