"""`python -m pytest_sys1cal merge`'s work: shards' folders joined into one version folder with one manifest,
as a single recording would have written it (its answers' digests). Everything is checked first (the shards as
a set and every cassette's answers: store/shard_set.py; the folder merged into, under its recording lock):
a refusal writes nothing. A folder that exists already is completed only where its manifest says it lacks a
cassette, as a resumed recording completes it. docs/recording.md, "Recording on many machines"."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..files import write_atomic
from ..redact import Redactor
from . import shard_manifest
from .answers import ANSWERS
from .folder import CassetteFolder
from .lock import FolderLock
from .manifest import MANIFEST
from .sequential_manifest import FIELD
from .shard_set import MergeRefused, ShardFolder, check_set, find, read_cassettes

# The folder's manifest fields a merge into an existing folder must find as the shards recorded them.
AGREE = {"dataset": "dataset", "repeats": "repeats", "questions": "wire", "settings": "wire"}


@dataclass(frozen=True)
class Merged:
    """What a merge did: the folder, how many shards, the cassettes written and kept, the manifest's count."""

    folder: Path
    shards: int
    written: int
    kept: int
    listed: int
    replay: str  # the command that replays (and gates) the merged folder
    rounds: tuple[int, int, int] | None = None  # in rounds: whole rounds held, of how many, their latent problems
    next_round: str | None = None  # in rounds, before the last: how a shard records its part of the next


def merge(given: Sequence[Path], into: Path) -> Merged:
    """Check every shard, then write the merged folder `into` (``<cassette root>/<model>/<version>``)."""
    shards = [find(path) for path in given]
    check_set(shards)
    first = shards[0].data
    target = _target(into, first)
    keep = _kept(target)
    texts: dict[str, str] = {}
    for shard in shards:
        texts.update({name: text for name, text in read_cassettes(shard).items() if name not in keep})
    lock = FolderLock(target.path)
    lock.acquire()  # another live recording into the folder: refused (FolderLocked), nothing written
    try:
        if target.path.joinpath(MANIFEST).is_file() and _kept(_reopened(target)) != keep:
            raise MergeRefused(f"{target.path / MANIFEST}: changed while the shards were checked; run the merge again")
        _write(target, shards, texts, keep)
    finally:
        lock.release()
    rounds = first.get(FIELD)
    held = (rounds["recorded_rounds"], rounds["rounds"], len(rounds["latent_problems"])) if rounds else None
    after = f"{shards[0].shard.describe()}'s: {shards[0].rerun()}" if held and held[0] < held[1] else None
    listed = len(keep) + len(texts)
    return Merged(target.path, len(shards), len(texts), len(keep), listed, _replay(shards[0], into), held, after)


def _target(into: Path, first: Mapping[str, Any]) -> CassetteFolder:
    """The folder merged into: ``<root>/<model>/<version>`` of the shards' model and version, not a shard's,
    not a reconstructed set, and (when it has a manifest) of the same recording as the shards."""
    model, version = first["model"], first["version"]
    if (into.parent.name, into.name) != (model, version):
        raise MergeRefused(
            f"--into {into}: the shards hold {model} {version}, whose folder is <cassette root>/{model}/{version}: "
            f"merge into {into.parent.parent / model / version}"
        )
    target = CassetteFolder(into.parent.parent, model, version, "once", Redactor())
    if (target.path / shard_manifest.SHARD_MANIFEST).is_file():
        raise MergeRefused(
            f"--into {into}: holds a shard ({shard_manifest.SHARD_MANIFEST}), not a version: merge into the "
            "version's own folder"
        )
    existing = target.manifest
    if existing is None:
        return target
    if FIELD in first and FIELD not in existing:
        raise MergeRefused(
            f"--into {into}: holds a recording that is not in rounds, and the shards are recorded in rounds: merge "
            "them into a folder of their own (another cassette root)"
        )
    if existing["source"] != "recorded":
        raise MergeRefused(
            f"--into {into}: holds {existing['source']} cassettes, which live answers must not be mixed into"
        )
    wire = {"questions": existing["questions"], "settings": existing.get("settings") or {}}
    found = {"dataset": existing["dataset"], "repeats": existing["repeats"], "wire": wire}
    for field in ("dataset", "repeats", "wire"):
        if found[field] != first[field]:
            raise MergeRefused(
                f"--into {into}: field '{field}' of its {MANIFEST} differs from the shards' ({found[field]} against "
                f"{first[field]}): the folder holds another recording; merge into a folder of its own"
            )
    server = existing.get("server_model")
    if server is not None and first["server_model"] is not None and server != first["server_model"]:
        raise MergeRefused(
            f"--into {into}: field 'server_model' of its {MANIFEST} is {server!r}, the shards' server reported "
            f"{first['server_model']!r}: the folder holds another model's answers; merge into a folder of its own"
        )
    return target


def _reopened(target: CassetteFolder) -> CassetteFolder:
    return CassetteFolder(target.root, target.model, target.version, "once", Redactor())


def _kept(target: CassetteFolder) -> dict[str, str]:
    """The cassettes the folder's manifest says it holds (name → digest), each kept as it is: what a resumed
    recording would not ask again. A manifest from before digests were kept lists none: its cassettes are kept
    as they are (their digests taken now)."""
    manifest = target.manifest
    if manifest is None:
        return {}
    if ANSWERS in manifest:
        return {name: digest for name, digest in manifest[ANSWERS].items() if (target.path / name).is_file()}
    from .answers import after_recording

    return after_recording(target.path, manifest)


def _write(
    target: CassetteFolder, shards: Sequence[ShardFolder], texts: Mapping[str, str], keep: Mapping[str, str]
) -> None:
    """The cassettes, then the manifest last: a write that fails (a full disk) takes back the cassettes this merge
    wrote where none was, and the manifest stays as it was."""
    written: list[Path] = []
    try:
        for name, text in sorted(texts.items()):
            path = target.path / name
            existed = path.exists()
            write_atomic(path, text)
            if not existed:
                written.append(path)
        target.write_manifest(merged_manifest(target.manifest, shards, keep))
    except OSError:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
        raise


def merged_manifest(
    existing: Mapping[str, Any] | None, shards: Sequence[ShardFolder], keep: Mapping[str, str]
) -> dict[str, Any]:
    """The manifest a single recording of every shard's share would have left: the shards' common fields, the
    latest recording time, the server when every shard recorded from the same one, and every answer's digest."""
    first = shards[0].data
    answers = {name: digest for shard in shards for name, digest in shard.data["answers"].items()}
    answers.update(keep)
    urls = {shard.data.get("base_url") for shard in shards}
    times = [shard.data["recorded_at"] for shard in shards if shard.data["recorded_at"]]
    times += [existing["recorded_at"]] if existing and existing.get("recorded_at") else []
    manifest: dict[str, Any] = {
        **({"settings": first["wire"]["settings"]} if first["wire"]["settings"] else {}),
        "model": first["model"],
        "version": first["version"],
        "server_model": first["server_model"] or (existing or {}).get("server_model"),
        "dataset": first["dataset"],
        "repeats": first["repeats"],
        "questions": first["wire"]["questions"],
        "source": "recorded",
        "recorded_at": max(times) if times else None,
        ANSWERS: dict(sorted(answers.items())),
    }
    if FIELD in first:  # shards in rounds: the merged folder holds their whole rounds (checked alike: shard_set)
        manifest[FIELD] = first[FIELD]
    url = urls.pop() if len(urls) == 1 else None
    if url:
        manifest["base_url"] = url
    return manifest


def _replay(shard: ShardFolder, into: Path) -> str:
    """The replay of the merged folder: the shards' model, version and dataset, the folder's cassette root."""
    import shlex

    keep = ("--sys1cal-model=", "--sys1cal-model-version=", "--sys1cal-dataset=", "--sys1cal-seed=")
    args = [arg for arg in shard.data["command"][2:] if arg.startswith(keep)]
    return shlex.join(["pytest", "--sys1cal", *args, f"--sys1cal-cassettes={into.parent.parent}"])
