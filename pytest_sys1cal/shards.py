"""Shards of a recording: which latent problems each of N machines records. A problem's renderings never split
across shards (every analysis that pairs or clusters by problem needs them together); the problems are dealt
out by their priced cost, the plan's input tokens per rendering (recording/plan.py), so that the shards take
about the same time against servers of the same speed. Pure: it is handed the renderings and their costs.

The deal is the longest-processing-time rule: problems by cost, largest first (ties by id), each to the shard
with the least cost so far (ties: the lowest index). It depends on nothing but the costs and N, so every
machine of a matrix computes the same partition, and so does a re-run of one shard. docs/recording.md,
"Recording on many machines"."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from .dataset import Rendering
from .errors import InputError

SPEC = re.compile(r"(\d{1,4})/(\d{1,4})")


class ShardError(InputError):
    """A shard that cannot be: its spec, or more shards than the dataset has latent problems."""


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `count`."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``I/N`` with 1 ≤ I ≤ N; ShardError (one line, the fix) otherwise."""
        found = SPEC.fullmatch(text.strip())
        if found is None:
            raise ShardError(f"{text!r} is not a shard: write I/N, e.g. 2/4 for the second of four shards")
        index, count = int(found.group(1)), int(found.group(2))
        if count < 1 or not 1 <= index <= count:
            raise ShardError(f"{text!r} is not a shard: I/N needs 1 ≤ I ≤ N (N ≥ 1), e.g. 2/4")
        return cls(index, count)

    @property
    def spec(self) -> str:
        return f"{self.index}/{self.count}"

    def describe(self) -> str:
        return f"shard {self.index} of {self.count}"


Partition = tuple[tuple[str, ...], ...]  # latent problem ids of each shard, shard 1 first, each sorted


def problem_costs(renderings: Iterable[Rendering], cost: Callable[[Rendering], float]) -> dict[str, float]:
    """Latent problem id → the summed cost of its renderings."""
    costs: dict[str, float] = {}
    for rendering in renderings:
        costs[rendering.latent_instance_id] = costs.get(rendering.latent_instance_id, 0.0) + cost(rendering)
    return costs


def partition(costs: dict[str, float], count: int) -> Partition:
    """The problems dealt into `count` shards (the longest-processing-time rule). ShardError when there are
    fewer problems than shards: a shard with nothing to record is a job that cannot be told from a lost one."""
    if count > len(costs):
        raise ShardError(
            f"{count} shards of a dataset with {len(costs)} latent problems: a shard holds whole problems, so use at "
            f"most {len(costs)} shards"
        )
    loads = [0.0] * count
    shares: list[list[str]] = [[] for _ in range(count)]
    for problem in sorted(costs, key=lambda p: (-costs[p], p)):
        lightest = min(range(count), key=lambda i: (loads[i], i))
        loads[lightest] += costs[problem]
        shares[lightest].append(problem)
    return tuple(tuple(sorted(share)) for share in shares)


def partition_digest(parts: Partition) -> str:
    """sha256 of the whole partition: shards of one matrix carry the same one (their merge checks it)."""
    return hashlib.sha256(json.dumps([list(p) for p in parts], separators=(",", ":")).encode()).hexdigest()


def renderings_of_problems(renderings: Sequence[Rendering], problems: Collection[str]) -> list[Rendering]:
    """The renderings of exactly these latent problems, in dataset order: what a shard (or any selection of
    whole problems) records and replays."""
    wanted = frozenset(problems)
    return [rendering for rendering in renderings if rendering.latent_instance_id in wanted]


def balance(parts: Partition, costs: dict[str, float]) -> float:
    """The largest shard's cost over the mean shard's: 1.0 is a perfect balance."""
    loads = [sum(costs[p] for p in part) for part in parts]
    mean = sum(loads) / len(loads)
    return max(loads) / mean if mean else 1.0
