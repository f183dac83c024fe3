"""The shard manifest, ``shard.json`` beside a shard's ``manifest.json``: what one shard of a recording holds
and everything its merge must find equal in the others. Written by a run with --sys1cal-shard when its
recording starts (what the folder holds of its share already) and when it ends; read, and checked field by
field, by that shard's later runs and by `python -m pytest_sys1cal merge` (store/merge.py). Fields:
docs/recording.md, "Recording on many machines"."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import strict_json
from ..errors import InputError
from ..files import write_atomic
from ..names import is_plain_name
from ..vocabulary import SHARD_SCHEMA
from . import sequential_manifest
from .manifest import SHA256

SHARD_MANIFEST = "shard.json"
_CASSETTE = re.compile(r"[^/\\]+/[^/\\]+\.json")


class ShardManifestError(InputError):
    """A shard manifest that cannot be read or trusted: the file, the field and the fix."""


def build(
    manifest: Mapping[str, Any],
    *,
    shard: Mapping[str, int],
    partition: str,
    problems: Sequence[str],
    names: Sequence[str],
    answers: Mapping[str, str],
    seed: int,
    plugin_version: str,
    command: Sequence[str],
    sequential: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The shard manifest from the folder's own manifest (as the recording left it) and the shard's facts."""
    wire = {"questions": list(manifest.get("questions") or []), "settings": dict(manifest.get("settings") or {})}
    return {
        "schema": SHARD_SCHEMA,
        "shard": dict(shard),
        "partition": partition,
        "latent_problems": list(problems),
        "renderings": list(names),
        "model": manifest.get("model"),
        "version": manifest.get("version"),
        "server_model": manifest.get("server_model"),
        "dataset": manifest.get("dataset"),
        "repeats": manifest.get("repeats"),
        "wire": wire,
        "seed": seed,
        "plugin_version": plugin_version,
        "command": list(command),
        "source": manifest.get("source", "recorded"),
        "recorded_at": manifest.get("recorded_at"),
        **({"base_url": manifest["base_url"]} if manifest.get("base_url") else {}),
        "answers": dict(sorted(answers.items())),
        **({sequential_manifest.FIELD: dict(sequential)} if sequential is not None else {}),
    }


def write(folder: Path, data: Mapping[str, Any], redact: Callable[[str], str]) -> None:
    write_atomic(folder / SHARD_MANIFEST, redact(json.dumps(data, indent=2, sort_keys=True) + "\n"))


def read_if_any(folder: Path) -> dict[str, Any] | None:
    """The folder's shard manifest, checked; None when it has none."""
    path = folder / SHARD_MANIFEST
    return read(path) if path.is_file() else None


_FIX = "restore it from the shard's artifact, or re-run that shard (its --sys1cal-shard run) to write it again"


def read(path: Path) -> dict[str, Any]:
    """The shard manifest at `path`, every field checked; ShardManifestError naming the file, field and fix."""
    try:
        data = strict_json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ShardManifestError(f"{path}: missing; {_FIX}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ShardManifestError(f"{path}: not a readable shard manifest ({exc}); {_FIX}") from None
    if not isinstance(data, dict):
        raise ShardManifestError(f"{path}: expected a JSON object, found {type(data).__name__}; {_FIX}")
    for key, (valid, wanted) in _FIELDS.items():
        if key in _OPTIONAL and key not in data:
            continue
        if key not in data:
            raise ShardManifestError(f"{path}: field '{key}': missing ({wanted}); {_FIX}")
        if not valid(data[key]):
            raise ShardManifestError(f"{path}: field '{key}': {json.dumps(data[key])[:120]} is not {wanted}; {_FIX}")
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise ShardManifestError(f"{path}: field '{unknown[0]}': unknown (a newer pytest-sys1cal may have written it)")
    if data["schema"] != SHARD_SCHEMA:
        raise ShardManifestError(f"{path}: field 'schema': {data['schema']!r} is not {SHARD_SCHEMA!r}; {_FIX}")
    shard = data["shard"]
    if not 1 <= shard["index"] <= shard["count"]:
        raise ShardManifestError(f"{path}: field 'shard': index {shard['index']} is not within 1 … {shard['count']}")
    stray = sorted(set(data["answers"]) - set(data["renderings"]))
    if stray:
        raise ShardManifestError(
            f"{path}: field 'answers': {stray[0]} is not among this shard's renderings (an answer added by hand?); "
            f"{_FIX}"
        )
    for key in ("model", "version"):
        if not is_plain_name(data[key]):
            raise ShardManifestError(
                f"{path}: field '{key}': {data[key]!r} is not a plain name (it names a folder); {_FIX}"
            )
    return data


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _shard(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"index", "count"} and all(_whole(v) for v in value.values())


def _texts(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_text(v) for v in value) and len(set(value)) == len(value)


def _names(value: Any) -> bool:
    return _texts(value) and all(_CASSETTE.fullmatch(v) for v in value)


def _digests(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and _CASSETTE.fullmatch(k) and isinstance(v, str) and SHA256.fullmatch(v)
        for k, v in value.items()
    )


def _dataset(value: Any) -> bool:
    return (
        isinstance(value, dict) and _text(value.get("name")) and SHA256.fullmatch(str(value.get("sha256"))) is not None
    )


def _wire(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"questions", "settings"}
        and _texts(value["questions"])
        and isinstance(value["settings"], dict)
    )


# field: (check, what a valid value is)
_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "schema": (_text, f"the text {SHARD_SCHEMA!r}"),
    "shard": (_shard, 'an object {"index": I, "count": N}, whole numbers, 1 ≤ I ≤ N'),
    "partition": (lambda v: isinstance(v, str) and SHA256.fullmatch(v) is not None, "a sha256 (64 hex digits)"),
    "latent_problems": (_texts, "a non-empty list of latent problem ids, none twice"),
    "renderings": (_names, 'a non-empty list of "<family>/<instance id>.json", none twice'),
    "model": (_text, "the model name (text)"),
    "version": (_text, "the model version (text)"),
    "server_model": (lambda v: v is None or _text(v), "the model id the server reported (text or null)"),
    "dataset": (_dataset, 'an object {"name": text, "sha256": 64 hex digits}'),
    "repeats": (_whole, "a whole number ≥ 1"),
    "wire": (_wire, 'an object {"questions": [...], "settings": {...}}'),
    "seed": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "a whole number ≥ 0"),
    "plugin_version": (_text, "the pytest-sys1cal version that recorded it (text)"),
    "command": (
        lambda v: (
            isinstance(v, list)
            and v[:2] == ["pytest", "--sys1cal"]
            and all(isinstance(a, str) and a.isprintable() for a in v)
        ),
        'the command that resumes the shard, as a list of arguments starting "pytest", "--sys1cal"',
    ),
    "source": (lambda v: v == "recorded", "'recorded' (a shard records live answers)"),
    "recorded_at": (lambda v: v is None or _text(v), "a UTC time (text) or null"),
    "base_url": (_text, "the server recorded from, without credentials"),
    "answers": (_digests, 'an object {"<family>/<instance id>.json": sha256 of its recorded answers}'),
    sequential_manifest.FIELD: (sequential_manifest.valid, sequential_manifest.WANTED + ", for a shard in rounds"),
}
_OPTIONAL = {"base_url", sequential_manifest.FIELD}
