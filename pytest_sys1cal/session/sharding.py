"""A run of one shard (--sys1cal-shard=I/N): its share of the latent problems (shards.py deals them by the
plan's priced cost), the items outside it deselected like -k's, what its folder's shard manifest must say
(store/shard_manifest.py), and the shard manifest it leaves. `keep_problems` is the one place that narrows a
run to a set of whole latent problems. docs/recording.md, "Recording on many machines"."""

from __future__ import annotations

import shlex
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from .. import __version__
from ..dataset import Dataset, Rendering
from ..document import ShardBlock
from ..errors import InputError
from ..models.base import ModelAdapter
from ..shards import Partition, Shard, balance, partition, partition_digest, problem_costs, renderings_of_problems
from ..store import shard_manifest
from ..store.cassette import cassette_name
from .collect import Sys1CalItem

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

    @property
    def names(self) -> list[str]:
        """Its cassettes, as the manifests name them (``<family>/<id>.json``)."""
        return [cassette_name(rendering) for rendering in self.renderings]

    def header(self, dataset: Dataset) -> str:
        return (
            f"sys1cal: {self.shard.describe()}: {len(self.problems)} of {dataset.latent_problems} latent problems, "
            f"{len(self.renderings)} of {len(dataset.renderings)} renderings (dealt by priced cost: the largest "
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


def shard_run(spec: str | None, dataset: Dataset, adapter: ModelAdapter, questions: Sequence[str]) -> ShardRun | None:
    """The shard this run records or replays; None without --sys1cal-shard. Each rendering costs the input
    tokens of one repeat of its requests, as the recording plan prices them."""
    if spec is None:
        return None
    from ..recording.plan import estimate_tokens

    shard = Shard.parse(spec)

    def cost(rendering: Rendering) -> float:
        return float(sum(estimate_tokens(request) for request in adapter.requests(rendering, questions)))

    costs = problem_costs(dataset.renderings, cost)
    parts: Partition = partition(costs, shard.count)
    problems = parts[shard.index - 1]
    share = tuple(renderings_of_problems(dataset.renderings, problems))
    return ShardRun(shard, partition_digest(parts), problems, share, balance(parts, costs))


def keep_problems(config: pytest.Config, items: list[pytest.Item], problems: Collection[str]) -> None:
    """Narrow the collected items, in place, to the benchmark renderings of exactly these latent problems (the
    rest deselected, as -k deselects; items that are not renderings are left alone)."""
    wanted = frozenset(problems)
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        outside = isinstance(item, Sys1CalItem) and item.rendering.latent_instance_id not in wanted
        (dropped if outside else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


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
    data = shard_manifest.build(
        manifest,
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
