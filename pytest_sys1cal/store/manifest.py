"""The manifest of a cassette folder (one model version): what the cassettes hold, validated on every run
like thresholds.yaml is, and what a recording writes into it before the first request and after the last.
Fields: docs/cassettes.md."""

from __future__ import annotations

import datetime as _dt
import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .. import strict_json
from ..dataset import Dataset
from ..errors import InputError
from ..questions import ALL_QUESTIONS
from ..redact import strip_userinfo
from ..vocabulary import MANIFEST_SCHEMA
from . import sequential_manifest
from .lfs import ADVICE, LfsPointers, is_pointer

if TYPE_CHECKING:
    from ..results import ResultRow

MANIFEST = "manifest.json"
# The digest of replay-index.tsv, which plugins before the replay cache wrote: accepted, so that their folders
# replay unchanged, and neither read nor written since (docs/cassettes.md, "The replay cache").
LEGACY_INDEX_FIELD = "replay_index"
SOURCES = ("recorded", "reconstructed", "mixed")
SHA256 = re.compile(r"[0-9a-f]{64}")


def read_manifest(path: Path, model: str, version: str) -> dict[str, Any] | None:
    """The validated manifest at `path`, None when there is none. Raises InputError naming the file,
    the line and the field, and what to do."""
    if not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8")
        manifest = strict_json.loads(text)
    except strict_json.DuplicateKey as exc:  # the last of two would win unseen: an added line beside the original
        where = f"{path}:{exc.line}" if exc.line is not None else str(path)
        raise InputError(
            f"{where}: {exc.unplaced}, and a JSON reader keeps one of them without a word; {_FIX}"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        if is_pointer(path):
            raise LfsPointers(f"{path}: {ADVICE}, then run this again") from None
        raise InputError(f"{path}: not a readable JSON manifest ({exc}); {_FIX}") from None
    if not isinstance(manifest, dict):
        raise InputError(f"{path}: expected a JSON object, found {type(manifest).__name__}; {_FIX}")
    _Checker(path, text, manifest).check(model, version)
    return manifest


_FIX = "restore it from version control, or re-record the folder with --sys1cal-record-mode=all"


class _Checker:
    def __init__(self, path: Path, text: str, manifest: dict[str, Any]):
        self.path, self.text, self.manifest = path, text, manifest

    def fail(self, key: str, problem: str) -> InputError:
        match = re.search(rf'"{re.escape(key.split(".")[-1])}"\s*:', self.text)
        line = f":{self.text.count(chr(10), 0, match.start()) + 1}" if match else ""
        return InputError(f"{self.path}{line}: field '{key}': {problem}; {_FIX}")

    def check(self, model: str, version: str) -> None:
        m = self.manifest
        unknown = sorted(set(m) - set(_FIELDS))
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(_FIELDS), n=1, cutoff=0.6)
            # No close match: most likely a field that a newer version of the plugin writes.
            hint = (
                f" (did you mean '{close[0]}'?)" if close else " (a newer pytest-sys1cal may have written it: upgrade)"
            )
            raise self.fail(unknown[0], f"unknown field{hint}; allowed: {', '.join(_FIELDS)}")
        url = m.get("base_url")
        if isinstance(url, str) and strip_userinfo(url) != url:  # never echo the credentials themselves
            raise self.fail("base_url", f"carries credentials; write it as {json.dumps(strip_userinfo(url))}")
        for key, (required, valid, wanted) in _FIELDS.items():
            if key not in m:
                if required:
                    raise self.fail(key, f"missing ({wanted})")
                continue
            if not valid(m[key]):
                raise self.fail(key, f"{json.dumps(m[key])} is not {wanted}")
        if m["schema"] != MANIFEST_SCHEMA:
            raise self.fail("schema", f"{m['schema']!r} is not {MANIFEST_SCHEMA!r}")
        for key, expected in (("model", model), ("version", version)):
            if m[key] != expected:
                raise self.fail(key, f"{m[key]!r} does not match the folder, which holds {key} {expected!r}")
        questions = m["questions"]
        if len(set(questions)) != len(questions):
            raise self.fail("questions", f"{json.dumps(questions)} lists a question twice")


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _dataset(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and _text(value.get("name"))
        and isinstance(value.get("sha256"), str)
        and SHA256.fullmatch(value["sha256"]) is not None
    )


def _base_url(value: Any) -> bool:
    """An http(s) origin (optionally with a path), with no credentials in it."""
    if not _text(value):
        return False
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and "@" not in parts.netloc


def _answers(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(path, str) and _CASSETTE.fullmatch(path) and isinstance(digest, str) and SHA256.fullmatch(digest)
        for path, digest in value.items()
    )


_CASSETTE = re.compile(r"[^/\\]+/[^/\\]+\.json")  # <family>/<instance id>.json, as the folder files them


def _questions(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(q in ALL_QUESTIONS for q in value)


# field: (required, check, what a valid value is)
_FIELDS: dict[str, tuple[bool, Callable[[Any], bool], str]] = {
    "schema": (True, _text, f"the text {MANIFEST_SCHEMA!r}"),
    "model": (True, _text, "the model name (text)"),
    "version": (True, _text, "the model version (text)"),
    "model_id": (False, _text, "the model id the recording sent, where it is not the version (text)"),
    "server_model": (False, lambda v: v is None or _text(v), "the model id the server reported (text or null)"),
    "base_url": (False, _base_url, "the http(s) URL recorded from, without credentials (no user:password@)"),
    "dataset": (True, _dataset, 'an object {"name": text, "sha256": 64 hex digits}'),
    "repeats": (True, _whole, "a whole number ≥ 1 (samples per rendering)"),
    "repeats_per_answer": (False, _whole, "a whole number ≥ 1 (model repeats averaged into each answer)"),
    "questions": (True, _questions, f"a non-empty list of the questions {', '.join(ALL_QUESTIONS)}"),
    "source": (True, lambda v: v in SOURCES, f"one of {', '.join(SOURCES)}"),
    "recorded_at": (False, lambda v: v is None or _text(v), "a UTC time (text) or null"),
    "note": (False, lambda v: isinstance(v, str), "text"),
    "settings": (False, lambda v: isinstance(v, dict), "an object (the adapter's settings when recording)"),
    "reconstructed_from": (False, lambda v: isinstance(v, dict), "an object"),
    "answers": (
        False,
        _answers,
        'an object {"<family>/<instance id>.json": sha256 of its recorded answers}, written by the recording',
    ),
    sequential_manifest.FIELD: (False, sequential_manifest.valid, sequential_manifest.WANTED),
    LEGACY_INDEX_FIELD: (
        False,
        lambda v: isinstance(v, str) and SHA256.fullmatch(v) is not None,
        "the sha256 of the replay-index.tsv an older plugin wrote (64 hex digits; no longer read or written)",
    ),
}


def new_manifest(
    model: str,
    version: str,
    dataset: Dataset,
    repeats: int,
    questions: Sequence[str],
    settings: Mapping[str, Any] | None = None,
    base_url: str | None = None,
    model_id: str | None = None,
) -> dict[str, Any]:
    """Written before the first request, so an interrupted recording is resumable. `base_url` is the server
    recorded from, its credentials already stripped; `model_id` the id sent, kept only where it is not the
    version (so a folder recorded without one is written as before)."""
    return {
        **({"settings": dict(settings)} if settings else {}),
        **({"base_url": base_url} if base_url else {}),
        **({"model_id": model_id} if model_id and model_id != version else {}),
        "model": model,
        "version": version,
        "server_model": None,
        "dataset": {"name": dataset.name, "sha256": dataset.sha256},
        "repeats": repeats,
        "questions": list(questions),
        "source": "recorded",
        "recorded_at": None,
    }


def pinned_model_id(
    manifest: Mapping[str, Any] | None, path: Path, version: str, given: str | None, *, afresh: bool
) -> str | None:
    """The model id a run of a version folder sends, where it is not the version (None: the version is the id).
    A folder asked afresh (nothing recorded yet, or record mode all) sends `given`; any other sends what its
    manifest says it was recorded under (``model_id``, else the version), since a replay asks what was recorded:
    a `given` id that differs is refused rather than sent for cassettes that never saw it (docs/cassettes.md)."""
    if afresh or manifest is None:
        return given if given != version else None
    recorded = manifest.get("model_id") or version
    if given is not None and given != recorded:
        how = "its model_id" if manifest.get("model_id") else "no model_id field, so the version is the id"
        raise InputError(
            f"{path / MANIFEST}: {version} was recorded under the model id {recorded!r} ({how}), and this run sends "
            f"{given!r} (--sys1cal-model-id or the ini key sys1cal_model_id); its cassettes hold the answers to "
            f"{recorded!r}, so drop the id for this version (its manifest's is used), or record another version "
            f"under {given!r} (re-recording this one whole: --sys1cal-record-mode=all)"
        )
    return recorded if recorded != version else None


def after_recording(
    manifest: Mapping[str, Any], results: Sequence[ResultRow], repeats: int, base_url: str | None = None
) -> dict[str, Any] | None:
    """The manifest once this run's results are in (`base_url`: the server this run recorded from, without
    credentials; the manifest keeps the latest); None when this run recorded nothing."""
    recorded = [row for row in results if row.recorded]
    if not recorded:
        return None
    server_models = sorted({row.server_model for row in recorded if row.server_model})
    source = manifest["source"]
    updated = {
        **manifest,
        "server_model": ", ".join(server_models) or manifest.get("server_model"),
        "recorded_at": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        "source": source if source == "recorded" else "mixed",
        **({"base_url": base_url} if base_url else {}),
    }
    if not any(row.error for row in results):
        updated["repeats"] = repeats
    return updated
