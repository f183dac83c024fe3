"""The looks of a run recording in rounds, on its controller (session/sequential.py holds the design): after each
whole round, the upgrade comparison on the problems recorded so far (analysis/sequential.py, stateless, so a
replay of the folder reaches the same verdict); a progress line with each gated primitive's standing; the folder's
manifest saying which whole rounds it holds; then the next round released, or the recording stopped because
every gated primitive is decided. The plan's lines say what the design may and is expected to cost. Without
xdist the items run in this module's loop, which stops at the decision; with xdist the scheduler does
(sequential_xdist.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import pytest

from ..dataset import Dataset, Rendering
from ..document import ReportDocument
from ..document_sequential import ExpectedCost
from ..files import write_atomic
from ..gates.schema import Thresholds, UpgradeConfig
from ..results import ResultRow
from ..run_report import Baseline
from ..store import sequential_manifest
from ..store.folder import CassetteFolder
from ..vocabulary import LABELS
from .collect import Sys1CalItem
from .sequential import Rounds

if TYPE_CHECKING:
    from ..measure import Measurer

CONTINUE = "continue"  # analysis/sequential.py's standing of a primitive not decided yet


class LookingRun(Protocol):
    """What the looks read of the run (run.py's Sys1CalRun)."""

    dataset: Dataset
    baseline: Baseline | None
    thresholds: Thresholds | None
    repeats: int
    folder: CassetteFolder
    measurer: Measurer

    @property
    def rows(self) -> Sequence[ResultRow]: ...


def decision_path(folder: str, round_number: int) -> Path:
    """Where the controller writes the decision of the look after `round_number` (xdist's workers wait for it)."""
    return Path(folder) / f"look-{round_number}.json"


def _manifest_unwritten(write: Callable[[int], None], round_number: int) -> str | None:
    """The look's manifest written; if the disk refused it, the line that says so (the recording stops there)."""
    try:
        write(round_number)
    except OSError as exc:
        return (
            f"sys1cal: round {round_number}: the folder's manifest could not be written ({exc.strerror or exc}): the "
            "recording stops here"
        )
    return None


class Looker:
    """The looks of one recording in rounds. `collected` tells it the renderings each round holds; `row_added`
    each measured one; after the last of a round it looks. `stopped` once every gated primitive is decided."""

    def __init__(
        self,
        rounds: Rounds,
        run: LookingRun,
        say: Callable[[str], None],
        requests: Mapping[str, int],
    ):
        self.rounds = rounds
        self.run = run
        self.say = say
        self.requests = requests  # latent problem → requests of a full recording of it
        self.round_of = rounds.round_of()
        self.latent = {r.instance_id: r.latent_instance_id for r in run.dataset.renderings}
        self.waiting: dict[int, set[str]] = {}  # round → its collected renderings not measured yet
        self.differences: dict[str, float | None] = {}  # each primitive's Δ̂ at the latest look
        self.looked = 0
        self.stopped = False
        self.writes_manifest = False  # the recording took the folder's lock (session/recording_hooks.py)
        self.release: Callable[[Sequence[Rendering]], None] | None = None  # sends a round ahead of its items
        self.on_stop: Callable[[], None] | None = None  # xdist: the scheduler sends nothing more
        self.expected_cost: ExpectedCost | None = None  # the plan's, for the report

    # ------------------------------------------------------------------ rounds and rows

    def collected(self, renderings: Sequence[Rendering]) -> None:
        self.waiting = {k: set() for k in range(1, self.rounds.rounds + 1)}
        for rendering in renderings:
            self.waiting[self.round_of[rendering.latent_instance_id]].add(rendering.instance_id)

    def renderings_of(self, round_number: int, renderings: Sequence[Rendering]) -> list[Rendering]:
        return [r for r in renderings if self.round_of[r.latent_instance_id] == round_number]

    def row_added(self, row: ResultRow) -> None:
        self.waiting.get(self.round_of[self.latent[row.instance_id]], set()).discard(row.instance_id)
        while not self.stopped and self._whole(self.looked + 1):
            self.look(self.looked + 1)

    def _whole(self, round_number: int) -> bool:
        """Every collected rendering of the round measured (a round of the design, its items collected)."""
        return round_number in self.waiting and not self.waiting[round_number]

    # ------------------------------------------------------------------ a look

    def look(self, round_number: int) -> None:
        """The comparison after `round_number` whole rounds: said, written into the manifest, acted on."""
        self.looked = round_number
        last = round_number == self.rounds.rounds
        go_on = False  # a look that fails stops the rounds: no worker waits on for a decision never written
        try:
            standing, problem = self._judge(round_number)
            self.stopped = not last and standing is not None and all(s != CONTINUE for s in standing.values())
            self.say(self._progress(round_number, standing, problem))
            unwritten = _manifest_unwritten(self._write_manifest, round_number)
            if unwritten:  # a full or read-only disk: nothing more is recorded than can be kept
                self.stopped = True
                self.say(unwritten)
            go_on = not self.stopped
        finally:
            if self.rounds.decisions is not None:  # xdist's workers wait for it (sequential_xdist.may_run)
                write_atomic(decision_path(self.rounds.decisions, round_number), json.dumps({"go_on": go_on}))
        if self.stopped and self.on_stop is not None:
            self.on_stop()
        if not self.stopped and not last and self.release is not None:
            self.release(self.renderings_of(round_number + 1, self.run.dataset.renderings))

    def _judge(self, round_number: int) -> tuple[dict[str, str] | None, str | None]:
        """Each gated primitive's standing, or None and why the look could not judge (then the rounds go on)."""
        from ..analysis.items import aggregate_items
        from ..analysis.sequential import judge
        from ..analysis.upgrade import Margin
        from ..errors import InputError
        from ..results import analysis_rows

        run = self.run
        if run.baseline is None:
            return None, "no baseline"
        config = run.thresholds.regression if run.thresholds is not None else UpgradeConfig()
        inside = {p for p, k in self.round_of.items() if k <= round_number}
        rows = [row for row in run.rows if self.latent[row.instance_id] in inside]
        new = {
            "items": aggregate_items(analysis_rows(rows, run.dataset)).rows(),
            "repeats": run.repeats,
            "repeats_per_answer": run.folder.repeats_per_answer,
        }
        margins = {p: Margin(config.drop[p], config.fail_drop[p]) for p in config.primitives}
        try:
            outcome, _ = judge(
                cast(ReportDocument, new),
                run.baseline.report,
                self.rounds.rounds,
                self.rounds.spending,
                margins,
                config.alpha,
                self.rounds.seed,
                config.resamples,
            )
        except InputError as exc:  # e.g. every rendering of a problem failed: this look cannot judge
            return None, str(exc)
        self.differences = {prim: _finite_or_none(outcome.looks.difference[prim][-1]) for prim in outcome.standing}
        return {prim: str(s) for prim, s in outcome.standing.items()}, None

    def _progress(self, round_number: int, standing: dict[str, str] | None, problem: str | None) -> str:
        rounds = self.rounds
        spent = sum(self.requests.get(p, 0) for p in rounds.order[: rounds.ends[round_number - 1]])
        head = (
            f"sys1cal: round {round_number} of {rounds.rounds} ({rounds.ends[round_number - 1]} of {rounds.problems} "
            f"latent problems, {spent:,} of {sum(self.requests.values()):,} requests)"
        )
        if standing is None:
            return f"{head}: not judged ({problem}); the rounds go on"
        said = []
        for prim, s in standing.items():
            name = LABELS.get(prim, prim)
            diff = self.differences.get(prim)
            said.append(f"{name} continues (Δ̂ {diff:+.4f})" if s == CONTINUE and diff is not None else f"{name} {s}")
        if self.stopped:
            after = (
                f"; every gated primitive decided: the recording stops here, "
                f"{sum(self.requests.values()) - spent:,} requests not sent"
            )
        elif round_number < rounds.rounds:
            after = f" → round {round_number + 1}"
        else:
            after = "; the last round: the fixed design's verdict"
        return f"{head}: {', '.join(said)}{after}"

    def started(self) -> None:
        """The recording took the folder: its manifest says from now on that it is recorded in rounds (none whole
        yet, unless it resumes a folder that holds some), so a recording killed in its first round is not taken
        for a recording of the whole dataset."""
        self.writes_manifest = True
        if sequential_manifest.read(self.run.folder.manifest) is None:
            self._write_manifest(0)

    def _write_manifest(self, round_number: int) -> None:
        folder = self.run.folder
        if self.writes_manifest and folder.manifest is not None:
            folder.manifest = sequential_manifest.written(folder.manifest, self.rounds.recorded(round_number))
            folder.write_manifest(folder.manifest)

    # ------------------------------------------------------------------ without xdist: the items' loop

    def run_loop(self, session: pytest.Session) -> bool:
        """pytest's own loop over the items, but for the benchmark's items after the stop, which are not run."""
        items = session.items
        for index, item in enumerate(items):
            if self.stopped and isinstance(item, Sys1CalItem):
                continue
            nextitem = items[index + 1] if index + 1 < len(items) else None
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            if session.shouldfail:
                raise session.Failed(session.shouldfail)
            if session.shouldstop:
                raise session.Interrupted(session.shouldstop)
        return True

    # ------------------------------------------------------------------ the plan

    def plan_lines(self, to_record: Mapping[str, int]) -> tuple[list[str], ExpectedCost | None]:
        """What the design may cost (every request still to record) and is expected to, at the assumed spread."""
        rounds = self.rounds
        most = sum(to_record.values())
        head = f"sys1cal: upgrade gate in rounds: {rounds.describe()}; at most {most:,} requests (every round)"
        expected = self.expected(to_record)
        if expected is None or not most:
            return [head], expected
        line = (
            f"{head}, expected about {expected['unchanged']:,} ({expected['unchanged'] / most:.0%}) if the new "
            f"version is unchanged and {expected['worse']:,} ({expected['worse'] / most:.0%}) if it is worse by twice "
            f"the margin, at an assumed spread: {expected['spread']} (docs/statistics.md §7.7)"
        )
        return [line], expected

    def expected(self, to_record: Mapping[str, int]) -> ExpectedCost | None:
        """The mean requests at Δ = 0 and Δ = −2δ (analysis/sequential_cost.py); None without a baseline."""
        import numpy as np

        from ..analysis.sequential_cost import assumed_spread, expected_requests
        from ..analysis.sequential_design import Design

        run, rounds = self.run, self.rounds
        if run.baseline is None:
            return None
        config = run.thresholds.regression if run.thresholds is not None else UpgradeConfig()
        prims = [p for p in config.primitives if _asked(run.baseline.report, p)]
        if not prims:
            return None
        sizes = np.asarray([sum(1 for r in run.dataset.renderings if r.latent_instance_id == p) for p in rounds.order])
        repeats = run.repeats * run.folder.repeats_per_answer
        spread = assumed_spread(run.baseline.report, prims, repeats, sizes)
        design = Design(rounds.problems, rounds.ends, rounds.alpha, rounds.spending)
        per_round = [sum(to_record.get(p, 0) for p in rounds.problems_of(k)) for k in range(1, rounds.rounds + 1)]
        margins = {p: (config.drop[p], config.fail_drop[p]) for p in prims}
        unchanged = expected_requests(design, per_round, spread.se, margins, dict.fromkeys(prims, 0.0))
        worse = expected_requests(design, per_round, spread.se, margins, {p: -2 * config.drop[p] for p in prims})
        return {"unchanged": round(unchanged), "worse": round(worse), "spread": spread.source}


def _asked(report: ReportDocument, prim: str) -> bool:
    from ..document import ANSWER_COLUMNS

    column = ANSWER_COLUMNS[prim]
    return any(item.get(column) is not None for item in report["items"])


def _finite_or_none(value: Any) -> float | None:
    number = float(value)
    return number if number == number and abs(number) != float("inf") else None
