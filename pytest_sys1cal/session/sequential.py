"""The upgrade gate recorded in rounds, as a pytest run knows it (--sys1cal-sequential, or a version folder
recorded so; docs/recording.md, "The upgrade gate in rounds"): the design in force (thresholds.yaml's
`regression.sequential`, or the defaults) and the seeded order of latent problems it records them in, the
combinations refused because they cannot be judged honestly, the items put in that order (and, replaying a
folder recorded in rounds, narrowed to its whole rounds), and the facts the report is judged with. The looks
between rounds are sequential_looks.py's; xdist's part is sequential_xdist.py's."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pytest

from ..codec import Codec
from ..dataset import Dataset
from ..document_sequential import ExpectedCost
from ..errors import InputError
from ..gates.schema import Thresholds, UpgradeConfig
from ..gates.upgrade_sequential import SPENDING_NAMES, SequentialFacts
from ..results import ResultRow
from ..store import sequential_manifest
from ..store.folder import CassetteFolder
from ..store.sequential_manifest import RoundsRecorded
from ..vocabulary import CALL_READING
from .collect import Sys1CalItem, keep_problems
from .options import Settings, argument, flag

WORKERINPUT_KEY = "sys1cal_rounds"


class RoundsRefused(InputError):
    """A combination the design in rounds cannot judge honestly, as one line with the fix."""


@dataclass(frozen=True)
class Rounds:
    """The design in force and the order it records in: `order` the latent problems (the dataset's, shuffled by
    the seed), `ends[k]` how many of them are recorded by the end of round k + 1. `recording`: this run records
    in rounds, looking between them; `keep`: the latent problems this run measures when it replays a folder
    recorded in rounds (its whole rounds), None for all."""

    spending: str
    rounds: int
    alpha: float
    seed: int
    order: tuple[str, ...]
    ends: tuple[int, ...]
    recording: bool
    keep: tuple[str, ...] | None = None
    decisions: str | None = None  # xdist: the folder the controller writes each look's decision into

    @property
    def problems(self) -> int:
        return len(self.order)

    def round_of(self) -> dict[str, int]:
        """Each latent problem's round (1-based)."""
        out: dict[str, int] = {}
        start = 0
        for k, end in enumerate(self.ends, start=1):
            out.update(dict.fromkeys(self.order[start:end], k))
            start = end
        return out

    def problems_of(self, round_number: int) -> tuple[str, ...]:
        start = self.ends[round_number - 2] if round_number > 1 else 0
        return self.order[start : self.ends[round_number - 1]]

    def recorded(self, rounds: int) -> RoundsRecorded:
        """The manifest's ``sequential`` field of a folder holding the first `rounds` rounds."""
        return RoundsRecorded(
            spending=self.spending,
            rounds=self.rounds,
            alpha=self.alpha,
            seed=self.seed,
            recorded_rounds=rounds,
            latent_problems=self.order[: self.ends[rounds - 1]] if rounds else (),
        )

    def describe(self) -> str:
        sizes = sorted({b - a for a, b in zip((0, *self.ends), self.ends, strict=False)})
        each = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]}"
        return (
            f"{self.rounds} round{'s' if self.rounds != 1 else ''} of {each} latent problems in the order seeded "
            f"{self.seed} ({SPENDING_NAMES.get(self.spending, self.spending)} spending, α {self.alpha:g})"
        )

    def header(self, folder: CassetteFolder, baseline: bool, resume: str) -> str:
        """The run's header line: what is judged in rounds, and how (a folder recorded in rounds, replayed)."""
        if self.recording:
            return (
                f"sys1cal: upgrade gate in rounds ({flag('sequential')}): {self.describe()}; the recording stops as "
                "soon as every gated primitive is decided"
            )
        if self.keep is None:
            return f"sys1cal: upgrade gate judged in rounds ({flag('sequential')}): {self.describe()}"
        held = len(self.keep)
        done = self.ends.index(held) + 1
        how = "judged in rounds against the baseline" if baseline else f"gating nothing without {flag('baseline')}"
        return (
            f"sys1cal: {folder.path} is recorded in rounds and holds {done} of {self.rounds} ({held} of "
            f"{self.problems} latent problems): this run replays those, {how}; resume it to the full dataset with: "
            f"{resume}"
        )

    def to_json(self) -> dict[str, Any]:
        """For xdist's workerinput (the order is the dataset's and the seed's: each worker recomputes it)."""
        return {
            "spending": self.spending,
            "rounds": self.rounds,
            "alpha": self.alpha,
            "seed": self.seed,
            "recording": self.recording,
            "keep": list(self.keep) if self.keep is not None else None,
            "decisions": self.decisions,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], dataset: Dataset) -> Rounds:
        keep = data["keep"]
        return designed(
            data["spending"],
            data["rounds"],
            data["alpha"],
            data["seed"],
            dataset,
            recording=data["recording"],
            keep=tuple(keep) if keep is not None else None,
            decisions=data["decisions"],
        )


def designed(
    spending: str,
    rounds: int,
    alpha: float,
    seed: int,
    dataset: Dataset,
    *,
    recording: bool,
    keep: tuple[str, ...] | None = None,
    decisions: str | None = None,
) -> Rounds:
    from ..analysis.sequential_design import Design, problem_order

    order = problem_order([r.latent_instance_id for r in dataset.renderings], seed)
    design = Design.of(len(order), rounds, alpha, spending)
    return Rounds(
        spending, design.rounds, alpha, seed, tuple(order), design.ends, recording, keep=keep, decisions=decisions
    )


def rounds_in_force(
    settings: Settings,
    dataset: Dataset,
    folder: CassetteFolder,
    thresholds: Thresholds | None,
    selection: Sequence[str],
) -> Rounds | None:
    """The design this run follows (on the controller), or None: with --sys1cal-sequential, or replaying a folder
    recorded in rounds. A recording of the whole dataset without the option resumes such a folder to the end
    (a fixed-design recording; the field is dropped once it holds everything). Raises RoundsRefused."""
    recorded = None if folder.record_mode == "all" else sequential_manifest.read(folder.manifest)
    if not settings.sequential and (recorded is None or settings.recording):
        return None
    if thresholds is not None and thresholds.reading.value == CALL_READING:
        raise RoundsRefused(
            f"the upgrade gate in rounds with the per-call reading ({thresholds.reading.said()}): rounds are judged on "
            "repeat means only; set reading: mean for this model or version, or drop --sys1cal-sequential"
        )
    if selection:
        what = flag("sequential") if settings.sequential else f"a folder recorded in rounds ({folder.path})"
        raise RoundsRefused(
            f"{what} with {' '.join(selection)}: the rounds are whole latent problems in a seeded order, and a "
            "selection would judge part of them; drop the selection"
        )
    if settings.shard:  # a shard records its part of a round and looks at nothing: shard_rounds
        return None
    rounds = design_in_force(settings, dataset, thresholds, recorded, folder)
    if settings.recording:
        return Rounds(**{**rounds.__dict__, "recording": True})
    if recorded is None:  # the option on a replay: the folder's recording judged round by round
        return rounds
    if recorded.recorded_rounds == 0:
        raise RoundsRefused(
            f"{folder.path}: recorded in rounds, but no round is whole yet (its recording stopped in the first): "
            f"resume it with {flag('sequential')} and {argument('record_mode', 'once')}"
        )
    fix = "restore the manifest from version control, or record the folder again"
    check_held_problems(recorded, rounds, dataset, f"{folder.path}: its manifest's", fix)
    return Rounds(**{**rounds.__dict__, "keep": recorded.latent_problems})


def rounds_of_run(
    config: pytest.Config,
    settings: Settings,
    dataset: Dataset,
    folder: CassetteFolder,
    thresholds: Thresholds | None,
    selection: Sequence[str],
) -> Rounds | None:
    """The rounds of this process: resolved on the controller (rounds_in_force; under xdist, recording, with the
    folder the looks' decisions are written into), an xdist worker's from its workerinput."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None:
        given = workerinput.get(WORKERINPUT_KEY)
        return Rounds.from_json(given, dataset) if given is not None else None
    rounds = rounds_in_force(settings, dataset, folder, thresholds, selection)
    dist = getattr(config.option, "dist", "no")
    if rounds is None or not rounds.recording or dist == "no":
        return rounds
    if dist != "load":
        raise RoundsRefused(
            f"{flag('sequential')} with --dist {dist}: a recording in rounds is scheduled round by round by "
            "xdist's default load scheduling; drop --dist (or give --dist load)"
        )
    return replace(rounds, decisions=tempfile.mkdtemp(prefix="sys1cal-rounds-"))


def design_in_force(
    settings: Settings,
    dataset: Dataset,
    thresholds: Thresholds | None,
    held: RoundsRecorded | None,
    folder: CassetteFolder,
) -> Rounds:
    """The design of thresholds.yaml's `regression.sequential` (the defaults without one), in the order of this
    run's seed; a folder's rounds (`held`, when it holds some) must have been recorded with that design."""
    config = thresholds.regression if thresholds is not None else UpgradeConfig()
    rounds = designed(config.spending, config.rounds, config.alpha, settings.seed, dataset, recording=False)
    if held is not None:
        where = f"{config.file}'s regression.sequential" if config.file else "the defaults"
        check_same_design(held, rounds, settings, folder, where)
    return rounds


def check_held_problems(held: RoundsRecorded, rounds: Rounds, dataset: Dataset, whose: str, fix: str) -> None:
    """The latent problems a folder (or a shard's) says its whole rounds hold are the first rounds of the order;
    `whose` begins the refusal (the file), `fix` says how to mend it."""
    expected = rounds.order[: rounds.ends[held.recorded_rounds - 1]] if held.recorded_rounds else ()
    if held.latent_problems != expected:
        raise RoundsRefused(
            f"{whose} sequential.latent_problems are not the first {held.recorded_rounds} rounds of the order seeded "
            f"{held.seed} on {dataset.name}; {fix} ({argument('record_mode', 'all')})"
        )


def check_same_design(
    recorded: RoundsRecorded, rounds: Rounds, settings: Settings, folder: CassetteFolder, where: str
) -> None:
    """A folder's rounds are judged, and resumed, by the design they were recorded with."""
    pairs = [
        ("spending", recorded.spending, rounds.spending, "regression.sequential.spending"),
        ("rounds", recorded.rounds, rounds.rounds, "regression.sequential.rounds"),
        ("alpha", recorded.alpha, rounds.alpha, "regression.alpha"),
    ]
    for name, theirs, ours, key in pairs:
        if theirs != ours:
            raise RoundsRefused(
                f"{folder.path}: recorded in rounds with {name} {theirs}, and {where} give {ours}: a design changed "
                f"after its looks is not the one planned; set {key}: {theirs} in thresholds.yaml to judge or resume "
                f"it, or record the folder again ({argument('record_mode', 'all')})"
            )
    if recorded.seed != settings.seed:
        raise RoundsRefused(
            f"{folder.path}: recorded in rounds in the order seeded {recorded.seed}, and this run's seed is "
            f"{settings.seed}: run with {argument('seed', recorded.seed)}"
        )


def arrange(config: pytest.Config, items: list[pytest.Item], rounds: Rounds) -> None:
    """The benchmark's items in recording order, round by round (each round's problems in the seeded order, each
    problem's renderings in dataset order), in place; replaying a folder recorded in rounds, only its rounds."""
    if rounds.keep is not None:
        keep_problems(config, items, rounds.keep)
    position = {problem: k for k, problem in enumerate(rounds.order)}
    ours = [item for item in items if isinstance(item, Sys1CalItem)]
    others = [item for item in items if not isinstance(item, Sys1CalItem)]
    ours.sort(key=lambda item: position.get(item.rendering.latent_instance_id, len(position)))  # stable
    items[:] = [*ours, *others]


def requests_by_problem(dataset: Dataset, codec: Codec) -> dict[str, int]:
    """Requests a full recording of each latent problem sends: its renderings' requests, every repeat."""
    out: dict[str, int] = {}
    for rendering in dataset.renderings:
        latent = rendering.latent_instance_id
        out[latent] = out.get(latent, 0) + len(codec.requests(rendering)) * codec.repeats
    return out


def facts_of(rounds: Rounds, requests: dict[str, int], expected: ExpectedCost | None) -> SequentialFacts:
    """What the report is judged with: the design, what each latent problem costs, the plan's expectation."""
    return SequentialFacts(rounds.spending, rounds.rounds, rounds.seed, requests, expected)


def completed_rounds(manifest: dict[str, Any], rows: Sequence[ResultRow], dataset: Dataset) -> dict[str, Any]:
    """A folder recorded in rounds that a recording without --sys1cal-sequential resumed: once every rendering of
    the dataset is recorded, it is a recording of the whole dataset, judged by the fixed design, and its manifest's
    ``sequential`` field goes; until then it stays, and a replay judges the folder on its whole rounds."""
    if sequential_manifest.read(manifest) is None:
        return manifest
    measured = {row.instance_id for row in rows if row.error is None}
    if all(rendering.instance_id in measured for rendering in dataset.renderings):
        return sequential_manifest.written(manifest, None)
    return manifest
