"""The shards given to a merge, read and checked as a set before anything is written: each found by its shard
manifest (store/shard_manifest.py), all of one partition of one recording (the same dataset, model, version,
server model, repeats, seed, plugin version and wire), none overlapping another, none missing, each one's share
recorded whole, and every cassette answering what its shard manifest says was recorded. Each refusal is one
line naming the shard and the field (docs/recording.md, "What the merge checks"); the merge itself is
store/merge.py's."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..shards import Shard
from . import shard_manifest
from .answers import answers_digest
from .cassette import Recorded
from .sequential_manifest import FIELD

# What every shard of one recording must hold alike, in the order a difference is reported.
SAME = ("dataset", "model", "version", "server_model", "repeats", "seed", "plugin_version", "wire", "partition")


class MergeRefused(InputError):
    """Why the merge wrote nothing: one line naming the shard (or --into) and the field."""


@dataclass(frozen=True)
class ShardFolder:
    """A shard's folder (the version folder its run recorded into) and its shard manifest."""

    path: Path
    data: dict[str, Any]

    @property
    def shard(self) -> Shard:
        return Shard(self.data["shard"]["index"], self.data["shard"]["count"])

    @property
    def label(self) -> str:
        return f"{self.shard.describe()} ({self.path})"

    def rerun(self) -> str:
        """The command that resumes this shard where its folder is (record mode once records what is missing)."""
        return shlex.join(self.data["command"])


def find(given: Path) -> ShardFolder:
    """The shard whose folder is `given`, or the one folder below it holding a shard manifest (an artifact
    downloaded whole: ``<dir>/cassettes/<model>/<version>/shard.json``)."""
    if not given.is_dir():
        raise MergeRefused(f"{given}: no such folder; name each shard's folder (the one holding its shard.json)")
    found = [given / shard_manifest.SHARD_MANIFEST] if (given / shard_manifest.SHARD_MANIFEST).is_file() else []
    for depth in ("*", "*/*", "*/*/*"):
        found = found or sorted(given.glob(f"{depth}/{shard_manifest.SHARD_MANIFEST}"))
    if not found:
        raise MergeRefused(
            f"{given}: no {shard_manifest.SHARD_MANIFEST} in it or in the folders below it, so it is not a shard's "
            "folder (a run with --sys1cal-shard writes one when it starts recording): name the folder a shard "
            "recorded into"
        )
    if len(found) > 1:
        places = ", ".join(str(path.parent) for path in found[:3])
        raise MergeRefused(f"{given}: holds {len(found)} shards ({places}); name each shard's folder on its own")
    return ShardFolder(found[0].parent, shard_manifest.read(found[0]))


def check_set(shards: Sequence[ShardFolder]) -> None:
    """One recording, split N ways, every part here once and whole."""
    first = shards[0]
    for other in shards[1:]:
        if (FIELD in other.data) != (FIELD in first.data):
            inside, outside = (other, first) if FIELD in other.data else (first, other)
            raise MergeRefused(
                f"{outside.label}: field '{FIELD}': missing, but {inside.label} is recorded in rounds: record every "
                "shard of one matrix alike (each with --sys1cal-sequential, or none)"
            )
        if other.shard.count != first.shard.count:
            raise MergeRefused(
                f"{other.label}: field 'shard': one of {other.shard.count} shards, but {first.label} is one of "
                f"{first.shard.count}: merge the shards of one matrix (the same N)"
            )
        for field in SAME:
            if other.data[field] != first.data[field]:
                raise MergeRefused(
                    f"{other.label}: field '{field}': {_shown(other.data[field])}, but {first.label} has "
                    f"{_shown(first.data[field])}: {_WHY[field]}"
                )
    _check_overlap(shards)
    _check_missing(shards)
    for shard in shards:
        _check_whole(shard)
    _check_rounds(shards)


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "…"


_WHY = {
    "dataset": "the shards recorded different datasets; record every shard with the same --sys1cal-dataset",
    "model": "the shards recorded different models; merge the shards of one model's version",
    "version": "the shards recorded different versions; merge the shards of one version",
    "server_model": "the shards' servers reported different models, so their answers are not one model's; record "
    "every shard against servers of the same model",
    "repeats": "the shards asked different repeats; record every shard with the same --sys1cal-repeats",
    "seed": "the shards ran with different seeds; record every shard with the same --sys1cal-seed",
    "plugin_version": "the shards were recorded by different pytest-sys1cal versions; record every shard with one",
    "wire": "the shards asked different questions or adapter settings; record every shard with the same settings",
    "partition": "the shards dealt the latent problems differently (another dataset or adapter settings); "
    "record every shard of one matrix alike",
}


def _check_overlap(shards: Sequence[ShardFolder]) -> None:
    """No shard twice, and no latent problem or rendering in two shards."""
    owner: dict[str, ShardFolder] = {}
    seen: dict[int, ShardFolder] = {}
    for shard in shards:
        twin = seen.setdefault(shard.shard.index, shard)
        if twin is not shard:
            raise MergeRefused(
                f"{shard.label}: field 'shard': the shards overlap: {shard.shard.describe()} is given twice (also "
                f"{twin.path}); name each shard's folder once"
            )
        for key in (*shard.data["latent_problems"], *shard.data["renderings"]):
            other = owner.setdefault(key, shard)
            if other is not shard:
                field = "renderings" if key.endswith(".json") else "latent_problems"
                raise MergeRefused(
                    f"{shard.label}: field '{field}': the shards overlap: {key} is in {other.label} too; merge the "
                    "shards of one matrix"
                )


def _check_missing(shards: Sequence[ShardFolder]) -> None:
    count = shards[0].shard.count
    given = {shard.shard.index for shard in shards}
    missing = [index for index in range(1, count + 1) if index not in given]
    if not missing:
        return
    first = Shard(missing[0], count)
    names = ", ".join(str(index) for index in missing)
    others = f" (and the same for {', '.join(f'{i}/{count}' for i in missing[1:])})" if missing[1:] else ""
    raise MergeRefused(
        f"shard{'s' if missing[1:] else ''} {names} of {count} missing (given: "
        f"{', '.join(str(i) for i in sorted(given))}); run {'each' if missing[1:] else 'it'} alone, into a folder of "
        f"its own, then merge again with {'their folders' if missing[1:] else 'its folder'}: "
        f"{_command_for(shards[0], first)}{others}"
    )


def _command_for(template: ShardFolder, shard: Shard) -> str:
    """A given shard's command, made the command of another shard recorded into ./shard-I."""
    args = []
    for arg in template.data["command"]:
        if arg.startswith("--sys1cal-shard="):
            arg = f"--sys1cal-shard={shard.spec}"
        elif arg.startswith("--sys1cal-cassettes="):
            arg = f"--sys1cal-cassettes=shard-{shard.index}"
        args.append(arg)
    return shlex.join(args)


def _check_whole(shard: ShardFolder) -> None:
    """Every rendering of the shard's share recorded (its run did not stop or fail part way)."""
    names = shard.data["renderings"]
    missing = [name for name in names if name not in shard.data["answers"]]
    if missing:
        raise MergeRefused(
            f"{shard.label}: field 'answers': {len(missing)} of {len(names)} renderings of its share not recorded "
            f"(first: {missing[0]}; its run stopped or they failed); re-run it alone, its cassettes resume: "
            f"{shard.rerun()}"
        )


def _check_rounds(shards: Sequence[ShardFolder]) -> None:
    """Shards in rounds: each holds its part of the same whole rounds of one design, and together exactly those
    rounds' latent problems (what the merged folder's manifest will say it holds)."""
    first = shards[0].data.get(FIELD)
    if first is None:
        return
    design = ("spending", "rounds", "alpha", "seed")
    for shard in shards:
        theirs = shard.data[FIELD]
        for key in design:
            if theirs[key] != first[key]:
                raise MergeRefused(
                    f"{shard.label}: field '{FIELD}': {key} {theirs[key]}, but {shards[0].label} has {first[key]}: "
                    "record every shard of one matrix with the same thresholds.yaml and --sys1cal-seed"
                )
    behind = min(shards, key=lambda shard: (shard.data[FIELD]["recorded_rounds"], shard.shard.index))
    ahead = max(shards, key=lambda shard: (shard.data[FIELD]["recorded_rounds"], -shard.shard.index))
    held, most, total = (behind.data[FIELD]["recorded_rounds"], ahead.data[FIELD]["recorded_rounds"], first["rounds"])
    if held == 0:
        raise MergeRefused(
            f"{behind.label}: field '{FIELD}': holds no whole round yet; record its part of round 1, its cassettes "
            f"resume: {behind.rerun()}"
        )
    if held != most:
        raise MergeRefused(
            f"{behind.label}: field '{FIELD}': holds {held} of {total} rounds, and {ahead.label} holds {most}: a round "
            f"is whole once every shard's part is; record its part of round {held + 1} (run it again for each round "
            f"it lacks): {behind.rerun()}"
        )
    joined = {problem for shard in shards for problem in shard.data["latent_problems"]}
    if joined != set(first["latent_problems"]):
        raise MergeRefused(
            f"{shards[0].label}: field 'latent_problems': the shards' problems are not rounds 1–{held} of their "
            f"order ({len(joined)} problems against {len(first['latent_problems'])}): a shard's folder was changed "
            "by hand; restore it from its artifact, or re-record it"
        )


def read_cassettes(shard: ShardFolder) -> dict[str, str]:
    """Each cassette of the shard as text, its answers checked against the shard manifest's digest."""
    texts = {}
    for name, expected in shard.data["answers"].items():
        path = shard.path / name
        try:
            text = path.read_text(encoding="utf-8")
            found = answers_digest(Recorded(json.loads(text)).responses)
        except FileNotFoundError:
            raise MergeRefused(
                f"{shard.label}: field 'answers': {name} is listed but missing from the folder; restore the shard's "
                f"folder whole, or re-run it: {shard.rerun()}"
            ) from None
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            raise MergeRefused(f"{shard.label}: {name}: not a readable cassette ({type(exc).__name__})") from None
        if found != expected:
            raise MergeRefused(
                f"{shard.label}: field 'answers': {name}: its answers are not the ones recorded (sha256 "
                f"{found[:12]}…; {shard_manifest.SHARD_MANIFEST} records {expected[:12]}…); restore it from the "
                f"shard's artifact, or re-record the shard: {shard.rerun()}"
            )
        texts[name] = text
    return texts
