"""One pytest item per rendering, under one ``sys1cal`` collector; item names and the mapping from node
ids back to renderings; and each gate as a test report, so JUnit XML lists it as a test case. An item
only asks the measurer for its rendering's result. `keep_problems` is the one place that narrows a run to a set
of whole latent problems (a shard's, a folder's rounds)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import pluggy
import pytest

from ..dataset import Dataset, Rendering
from ..document_upgrade import Comparison
from ..errors import MeasurementError
from ..escape import one_line
from ..gates.rows import GateRow, passes
from ..measure import Measurer
from ..redact import Redactor
from ..results import ResultRow
from .node_ids import SUITE, item_name

MARKER = "sys1cal: a Sys1Cal benchmark rendering (added automatically by pytest-sys1cal)"
# A gate as a test outcome (gates/rows.py decides): passed; failed (FAILED, inconclusive, or not measured
# on a run of the whole dataset); skipped when it neither passed nor failed (a run of part of the dataset, or
# an inconclusive comparison let pass by regression.inconclusive: pass).
OUTCOMES: dict[bool | None, Literal["passed", "failed", "skipped"]] = {True: "passed", False: "failed", None: "skipped"}


class Sys1CalItem(pytest.Item):
    def __init__(
        self,
        *,
        rendering: Rendering,
        measurer: Measurer,
        redactor: Redactor,
        dataset_path: Path,
        mark: pytest.MarkDecorator,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.rendering = rendering
        self.measurer = measurer
        self.redactor = redactor  # every message of the item leaves through the run's one redactor
        self.dataset_path = dataset_path
        # The result travels on this item's test report, so it reaches the xdist controller too.
        self.sys1cal_result: ResultRow | None = None
        self.runs = 0  # how many times this item ran in this process (more than once: a rerun plugin)
        self.add_marker(mark)
        # -k also matches the dataset's own instance id and the latent problem's id.
        self.extra_keyword_matches.update({rendering.instance_id, rendering.latent_instance_id, rendering.family})

    def runtest(self) -> None:
        # Every message leaves through the run's redactor: a server may quote the key in its error.
        redact = self.redactor.text
        self.runs += 1
        if self.runs > 1:  # run again (pytest-rerunfailures, flaky): a failed recording is asked afresh
            self.measurer.ask_again(self.rendering)
        try:
            self.sys1cal_result = self.measurer.measure(self.rendering)
        except MeasurementError as exc:
            self.sys1cal_result = ResultRow.failed(self.rendering, redact(str(exc)))
            if exc.fatal:  # pytest prints it as the run's stop reason: one line, whatever the server said
                self.session.shouldstop = one_line(redact(f"sys1cal: {exc}"))
            raise
        except Exception as exc:  # a bug: still counted as failed everywhere, and shown with its traceback
            self.sys1cal_result = ResultRow.failed(self.rendering, redact(f"{type(exc).__name__}: {exc}"))
            raise

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """A MeasurementError as one line; anything else as pytest's traceback (with --showlocals, --tb=…).
        Either is redacted: the terminal, the short summary and JUnit's `message` all read this."""
        redactor = self.redactor
        if isinstance(excinfo.value, MeasurementError):  # one line: a server's error body may hold anything
            return one_line(redactor.text(f"{self.rendering.instance_id}: {excinfo.value}"))
        return redactor.fields(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.dataset_path, self.rendering.line - 1, f"sys1cal {self.rendering.short_id}"

    @property
    def ihook(self) -> pluggy.HookRelay:
        # The suite's: an item stands at its suite's path (see Sys1CalSuite.ihook).
        return self.parent.ihook  # type: ignore[union-attr]


class Sys1CalSuite(pytest.Collector):
    """The collection node holding the benchmark's items; it stands where a test file would."""

    def __init__(
        self,
        *,
        model: str,
        dataset: Dataset,
        measurer: Measurer,
        redactor: Redactor,
        only: Sequence[Rendering] | None = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.model = model
        self.dataset = dataset
        self.measurer = measurer
        self.redactor = redactor
        self.only = only

    @functools.cached_property
    def ihook(self) -> pluggy.HookRelay:
        """The hook relay for the suite's path, built once. pytest builds it afresh on each access (several per
        item) and, when some conftest.py lies below the rootdir (tests/conftest.py, say), each build filters
        every hook it is asked for: about a tenth of a replayed item's cost. Built after collection has loaded
        every conftest, and its filtered hooks read the registered plugins on each call, so it is the same."""
        return self.session.gethookproxy(self.path)

    def collect(self) -> list[Sys1CalItem]:
        """Items in dataset order (family, then id) with stable ids ``sys1cal::<model>[<family>/<id>]``: every
        rendering, or only those named on the command line (`only`)."""
        items = []
        mark = pytest.mark.sys1cal  # one mark for every item: building one per item costs more than the item
        for rendering in self.dataset.renderings if self.only is None else self.only:
            name = item_name(self.model, rendering)
            items.append(
                Sys1CalItem.from_parent(
                    self,
                    name=name,  # its node id: the suite's, "::", the name (pytest builds it)
                    rendering=rendering,
                    measurer=self.measurer,
                    redactor=self.redactor,
                    dataset_path=self.dataset.path,
                    mark=mark,
                )
            )
        return items


def collect_suite(
    session: pytest.Session,
    model: str,
    dataset: Dataset,
    measurer: Measurer,
    redactor: Redactor,
    only: Sequence[Rendering] | None = None,
) -> list[Sys1CalItem]:
    """Collect the benchmark (every rendering, or `only` those) and announce it like any collected file, so
    pytest counts its items."""
    suite = Sys1CalSuite.from_parent(
        session,
        name=SUITE,
        nodeid=SUITE,
        model=model,
        dataset=dataset,
        measurer=measurer,
        redactor=redactor,
        only=only,
    )
    items = suite.collect()
    session.config.hook.pytest_collectreport(
        report=pytest.CollectReport(suite.nodeid, "passed", None, list[pytest.Item | pytest.Collector](items))
    )
    return items


def row_of(item: pytest.Item, report: pytest.TestReport, call: pytest.CallInfo[None]) -> ResultRow | None:
    """The row a benchmark item's report carries: what it measured (its call), or, when its setup or call failed
    without one (pytest-timeout's timeout, another plugin's hook or fixture), a failed row saying why, so the
    rendering is counted as failed, never left out of the counts. None for anything else."""
    if not isinstance(item, Sys1CalItem):
        return None
    row = item.sys1cal_result
    if row is None and report.failed and call.when in ("setup", "call"):
        why = call.excinfo.exconly() if call.excinfo is not None else f"{call.when} failed"
        row = failed_row(item.rendering, why, item.redactor.text)
    item.sys1cal_result = None
    return row


def failed_row(rendering: Rendering, why: str, redact: Callable[[str], str]) -> ResultRow:
    """The failed row of a rendering whose item ended without one: the first line of `why`, redacted, at most
    500 characters."""
    return ResultRow.failed(rendering, one_line(redact(why.splitlines()[0] if why else why))[:500])


def renderings_of(items: Iterable[pytest.Item | None], measurer: Measurer) -> list[Rendering]:
    """The renderings of the benchmark items among `items` that this measurer measures, in order."""
    return [item.rendering for item in items if isinstance(item, Sys1CalItem) and item.measurer is measurer]


def renderings_of_nodeids(nodeids: Sequence[str], model: str, dataset: Dataset) -> list[Rendering]:
    """The renderings that the node ids (as xdist's workers report their collection) stand for, in order."""
    rendering_of = nodeid_reader(model, dataset)
    return [rendering for rendering in map(rendering_of, nodeids) if rendering is not None]


def nodeid_reader(model: str, dataset: Dataset) -> Callable[[str], Rendering | None]:
    """The rendering a node id stands for (None for any other item), the index built once."""
    by_name = {item_name(model, r): r for r in dataset.renderings}
    return lambda nodeid: by_name.get(nodeid.rsplit("::", 1)[-1])


def gate_reports(
    gates: Sequence[GateRow], locate: Callable[[str], tuple[str, int]], redact: Callable[[str], str] = str
) -> Iterator[tuple[pytest.TestReport, GateRow]]:
    """For each gate a call report carrying its verdict, then the teardown report that closes it (each with
    its gate). `locate(name)` gives the file and 1-based line that configure the gate; `redact` is the run's
    redactor, which every text of the report passes through (JUnit XML writes them)."""
    for gate in gates:
        nodeid = f"sys1cal::gates::{gate.name}"
        path, line = locate(gate.name)
        location = (path, line - 1, f"sys1cal gate {gate.name}")
        passed = passes(gate)  # gates/rows.py decides: True, False, or None (neither)
        explanation = redact(gate.explanation or gate.verdict)
        longrepr: Any = None
        if passed is False:
            longrepr = f"{gate.verdict}: {explanation}"
        elif passed is None:
            longrepr = (path, line, f"Skipped: {gate.verdict}: {explanation}")
        properties = [
            (name, redact(value) if isinstance(value, str) else value)
            for name, value in (("metric", gate.metric), ("observed", gate.observed), ("limit", gate.limit))
        ] + [("verdict", gate.verdict)]
        report = pytest.TestReport(nodeid, location, {}, OUTCOMES[passed], longrepr, "call", user_properties=properties)
        yield report, gate
        yield pytest.TestReport(nodeid, location, {}, "passed", None, "teardown"), gate


# The test suite properties of a run with a baseline in force: the upgrade verdict's line, its one word and the
# absolute gates' line, for CI views and tools that read JUnit XML's properties rather than its test cases.
UPGRADE_PROPERTIES = ("sys1cal_upgrade", "sys1cal_upgrade_verdict", "sys1cal_absolute_gates")


def mark_upgrade(config: pytest.Config, comparison: Comparison | None, redact: Callable[[str], str]) -> None:
    """Write the upgrade verdict into the JUnit XML (when --junitxml is on) as test suite properties."""
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    if xml is None or comparison is None:
        return
    values = (comparison["headline"], comparison["verdict"], comparison["absolute_gates"]["line"])
    for name, value in zip(UPGRADE_PROPERTIES, values, strict=True):
        xml.add_global_property(name, redact(str(value)))


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
