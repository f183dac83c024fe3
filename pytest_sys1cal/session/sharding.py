"""A run of one shard (--sys1cal-shard=I/N): its share of the latent problems (shards.py deals them by the
plan's priced cost; in rounds, each round apart, and the run takes its part of the rounds it holds and the
next), what its folder's shard manifest must say (store/shard_manifest.py), and the shard manifest it leaves.
The items outside it are deselected by collect.keep_problems. docs/recording.md, "Recording on many machines"
and "A round recorded as shards"."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from .. import __version__
from ..dataset import Dataset, Rendering
from ..document import ShardBlock
from ..errors import InputError
from ..gates.schema import Thresholds
from ..models.base import ModelAdapter
from ..shards import (
    Partition,
    Shard,
    ShardError,
    balance,
    partition,
    partition_digest,
    problem_costs,
    renderings_of_problems,
)
from ..store import sequential_manifest, shard_manifest
from ..store.cassette import cassette_name
from ..store.sequential_manifest import RoundsRecorded
from .options import Settings, argument, flag
from .sequential import Rounds, RoundsRefused, check_held_problems, design_in_force, designed

if TYPE_CHECKING:
    from ..results import ResultRow
    from ..store.folder import CassetteFolder


@dataclass(frozen=True)
class ShardRun:
    """This run's shard: which one, the whole partition's digest, its latent problems and renderings."""

    shard: Shard
    digest: str
    problems: tuple[str, ...]
    renderings: tuple[Rendering, ...]
    balance: float  # the largest shard's priced cost over the mean shard's
    rounds: ShardRounds | None = None  # recorded in rounds: this run measures its part of rounds 1 … rounds.upto
    recording: bool = False

    @property
    def names(self) -> list[str]:
        """Its cassettes, as the manifests name them (``<family>/<id>.json``)."""
        return [cassette_name(rendering) for rendering in self.renderings]

    def header(self, dataset: Dataset) -> str:
        if self.rounds is None:
            what, dealt = self.shard.describe(), "dealt by priced cost"
        else:
            what = f"{self.shard.describe()} in rounds, {self.rounds.describe(self.recording)}"
            dealt = "each round dealt by priced cost"
        return (
            f"sys1cal: {what}: {len(self.problems)} of {dataset.latent_problems} latent problems, "
            f"{len(self.renderings)} of {len(dataset.renderings)} renderings ({dealt}: the largest "
            f"shard {self.balance:.2f}× the mean); a shard gates nothing: merge the shards, then replay the merged "
            "folder to gate it"
        )

    def facts(self, dataset: Dataset) -> ShardBlock:
        """The report's ``shard`` block."""
        return {
            "index": self.shard.index,
            "count": self.shard.count,
            "latent_problems": len(self.problems),
            "renderings": len(self.renderings),
            "of_latent_problems": dataset.latent_problems,
        }


def shard_run(
    config: pytest.Config,
    settings: Settings,
    dataset: Dataset,
    adapter: ModelAdapter,
    folder: CassetteFolder,
    thresholds: Thresholds | None,
) -> ShardRun | None:
    """The shard this run records or replays; None without --sys1cal-shard. Each rendering costs the input
    tokens of one repeat of its requests, as the recording plan prices them. In rounds (shard_rounds), each
    round's problems are dealt apart (every shard records a part of every round, so a round is whole once every
    shard's part is), and this run takes its part of rounds 1 … rounds.upto."""
    if settings.shard is None:
        return None
    rounds = shard_rounds(config, settings, dataset, folder, thresholds)
    from ..recording.plan import estimate_tokens

    shard = Shard.parse(settings.shard)

    def cost(rendering: Rendering) -> float:
        return float(sum(estimate_tokens(request) for request in adapter.requests(rendering, folder.questions)))

    costs = problem_costs(dataset.renderings, cost)
    if rounds is None:
        parts: Partition = partition(costs, shard.count)
        problems, spread = parts[shard.index - 1], balance(parts, costs)
    else:
        each = [_dealt(costs, rounds.design.problems_of(k), shard.count) for k in range(1, rounds.design.rounds + 1)]
        parts = tuple(tuple(sorted(p for part in each for p in part[i])) for i in range(shard.count))
        problems = tuple(sorted(p for part in each[: rounds.upto] for p in part[shard.index - 1]))
        spread = balance(each[rounds.upto - 1], costs)
    share = tuple(renderings_of_problems(dataset.renderings, problems))
    return ShardRun(shard, partition_digest(parts), problems, share, spread, rounds, settings.recording)


def _dealt(costs: dict[str, float], problems: Sequence[str], count: int) -> Partition:
    """One round's problems dealt into `count` shards; a round smaller than the matrix refused in one line."""
    if count > len(problems):
        raise ShardError(
            f"{count} shards of rounds of {len(problems)} latent problems: in rounds every shard records a part of "
            f"each round, so use at most {len(problems)} shards, or fewer rounds (thresholds.yaml's "
            "regression.sequential.rounds)"
        )
    return partition({problem: costs[problem] for problem in problems}, count)


def check_folder(folder: CassetteFolder, run: ShardRun | None, merge_hint: str) -> None:
    """What the folder's shard manifest allows: a shard's folder is replayed or resumed only as that shard; a
    whole version's folder is never turned into a shard's by recording one into it."""
    found = shard_manifest.read_if_any(folder.path)
    path = folder.path / shard_manifest.SHARD_MANIFEST
    if found is None:
        if run is not None and folder.recording and folder.manifest is not None:
            raise InputError(
                f"{folder.path}: holds a recording of the whole version (its manifest, no "
                f"{shard_manifest.SHARD_MANIFEST}), and a shard records into a folder of its own: give this shard "
                f"another cassette root (--sys1cal-cassettes=shard-{run.shard.index}), then {merge_hint}"
            )
        return
    theirs = Shard(found["shard"]["index"], found["shard"]["count"])
    if run is None:
        raise InputError(
            f"{path}: this folder holds {theirs.describe()}, not the whole version: {merge_hint}; or replay this shard "
            f"alone with --sys1cal-shard={theirs.spec}"
        )
    if theirs != run.shard or found["partition"] != run.digest:
        what = "another partition of the dataset" if theirs == run.shard else theirs.describe()
        raise InputError(
            f"{path}: this folder holds {what}, and this run is {run.shard.describe()}: record each shard into a "
            f"folder of its own (--sys1cal-cassettes=shard-{run.shard.index})"
        )


def leave_manifest(
    folder: CassetteFolder,
    run: ShardRun,
    rows: Sequence[ResultRow] | None,
    seed: int,
    command: str,
    *,
    fresh: bool,
) -> None:
    """Write the shard manifest: at the start (`rows` None) with what the folder already holds of the share
    (nothing, when this run asks everything afresh), at the end with what is recorded whole. A rendering whose
    row failed is not counted, whatever its cassette holds. `command` resumes the shard (the merge prints it)."""
    manifest = folder.manifest or {}
    digests = {} if fresh and rows is None else dict(manifest.get("answers") or {})
    failed = {row.instance_id for row in rows or () if row.error}
    done = {
        name: digests[name]
        for rendering, name in zip(run.renderings, run.names, strict=True)
        if name in digests and rendering.instance_id not in failed
    }
    whole = rows is not None and len(done) == len(run.names)
    data = shard_manifest.build(
        manifest,
        sequential=run.rounds.recorded(whole).to_json() if run.rounds is not None else None,
        shard={"index": run.shard.index, "count": run.shard.count},
        partition=run.digest,
        problems=run.problems,
        names=run.names,
        answers=done,
        seed=seed,
        plugin_version=__version__,
        command=shlex.split(command),
    )
    shard_manifest.write(folder.path, data, folder.redactor.text)


@dataclass(frozen=True)
class ShardRounds:
    """A shard recorded in rounds (--sys1cal-shard with --sys1cal-sequential, or a shard's folder recorded so):
    each round's latent problems are dealt among the shards (shard_run), and this run measures its part of
    rounds 1 … `upto`; `held`, what its folder's shard.json says it holds whole (None: nothing yet). No look is
    taken on a shard: the merge joins the shards' parts of whole rounds, and the replay of the merged folder
    looks."""

    design: Rounds
    upto: int
    held: RoundsRecorded | None = None

    def recorded(self, whole: bool) -> RoundsRecorded:
        """shard.json's ``sequential`` field: the rounds this run reached when its part of them is `whole`, else
        the rounds the folder held."""
        if whole:
            return self.design.recorded(self.upto)
        return self.held if self.held is not None else self.design.recorded(0)

    def describe(self, recording: bool) -> str:
        held = self.held.recorded_rounds if self.held is not None else 0
        if not recording:
            return f"its part of the {self.upto} whole round{'s' if self.upto != 1 else ''} of {self.design.rounds}"
        if held >= self.design.rounds:
            return f"every one of the {self.design.rounds} rounds held already: nothing left to record"
        if self.upto > held + 1:  # without --sys1cal-sequential: the rest of every round
            return f"recording its part of rounds {held + 1}–{self.upto} of {self.design.rounds}"
        before = f" (rounds 1–{held} held)" if held > 1 else " (round 1 held)" if held else ""
        return f"recording its part of round {self.upto} of {self.design.rounds}{before}"

    def to_json(self) -> dict[str, Any]:
        """For xdist's workerinput: a worker deals the same parts (it writes no shard.json)."""
        design = self.design
        return {"spending": design.spending, "rounds": design.rounds, "alpha": design.alpha, "upto": self.upto}


SHARD_KEY = "sys1cal_shard_rounds"


def shard_rounds(
    config: pytest.Config, settings: Settings, dataset: Dataset, folder: CassetteFolder, thresholds: Thresholds | None
) -> ShardRounds | None:
    """A shard's rounds, or None for a shard dealt from the whole dataset (and for a run that is not a shard).
    Recording with --sys1cal-sequential, a shard records its part of the first round its folder lacks; without
    it, the rest of its part of every round; a replay measures the rounds its folder holds whole."""
    if not settings.shard:
        return None
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None:
        given = workerinput.get(SHARD_KEY)
        if given is None:
            return None
        design = designed(given["spending"], given["rounds"], given["alpha"], settings.seed, dataset, recording=False)
        return ShardRounds(design, given["upto"])
    found = shard_manifest.read_if_any(folder.path)
    held = sequential_manifest.read(found) if found is not None else None
    if not settings.sequential and held is None:
        return None
    if not settings.recording and held is None:  # the option on a replay of a shard dealt from the whole dataset
        return None
    design = design_in_force(settings, dataset, thresholds, held, folder)
    path = folder.path / shard_manifest.SHARD_MANIFEST
    if held is not None:
        fix = "restore it from the shard's artifact, or record the shard again"
        check_held_problems(held, design, dataset, f"{path}: its", fix)
    if settings.recording:
        if folder.record_mode == "all":  # asked afresh: nothing is held
            held = None
        start = held.recorded_rounds if held is not None else 0
        upto = min(start + 1, design.rounds) if settings.sequential else design.rounds
        return ShardRounds(design, upto, held)
    assert held is not None
    if held.recorded_rounds == 0:
        raise RoundsRefused(
            f"{path}: this shard is recorded in rounds, but its part of the first round is not whole yet: resume "
            f"it with {flag('sequential')} and {argument('record_mode', 'once')}"
        )
    return ShardRounds(design, held.recorded_rounds, held)
