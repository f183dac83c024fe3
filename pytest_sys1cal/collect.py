"""One pytest item per rendering. The item only asks the run to measure its rendering."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .dataset import Rendering

if TYPE_CHECKING:
    from .session import Sys1CalRun

MARKER = "sys1cal: a Sys1Cal benchmark rendering (added automatically by pytest-sys1cal)"


class Sys1CalItem(pytest.Item):
    def __init__(self, *, rendering: Rendering, run: Sys1CalRun, **kwargs: Any):
        super().__init__(**kwargs)
        self.rendering = rendering
        self.run = run
        # The result travels on this item's test report, so it reaches the xdist controller too.
        self.sys1cal_result: dict[str, Any] | None = None
        self.add_marker("sys1cal")
        # -k also matches the dataset's own instance id and the latent problem's id.
        self.extra_keyword_matches.update({rendering.instance_id, rendering.latent_instance_id, rendering.family})

    def runtest(self) -> None:
        from .session import ItemFailure

        try:
            self.sys1cal_result = self.run.measure(self.rendering)
        except ItemFailure as exc:
            self.sys1cal_result = {**self.run.identity(self.rendering), "samples": [], "error": str(exc)}
            if exc.fatal:
                self.session.shouldstop = f"sys1cal: {exc}"
            raise

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        from .session import ItemFailure

        if isinstance(excinfo.value, ItemFailure):
            return f"{self.rendering.instance_id}: {excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.run.dataset.path, self.rendering.line - 1, f"sys1cal {self.rendering.short_id}"


def item_name(model: str, rendering: Rendering) -> str:
    """The item's name: ``<model>[<family>/<instance id>]`` (its node id is ``sys1cal::`` + this)."""
    return f"{model}[{rendering.family}/{rendering.short_id}]"


class Sys1CalSuite(pytest.Collector):
    """The collection node holding the benchmark's items; it stands where a test file would."""

    def __init__(self, *, run: Sys1CalRun, **kwargs: Any):
        super().__init__(**kwargs)
        self.run = run

    def collect(self) -> list[Sys1CalItem]:
        """Items in dataset order (family, then id) with stable ids ``sys1cal::<model>[<family>/<id>]``."""
        items = []
        for rendering in self.run.dataset.renderings:
            name = item_name(self.run.model_name, rendering)
            items.append(
                Sys1CalItem.from_parent(
                    self, name=name, nodeid=f"{self.nodeid}::{name}", rendering=rendering, run=self.run
                )
            )
        return items


def collect_suite(session: pytest.Session, run: Sys1CalRun) -> list[Sys1CalItem]:
    """Collect the benchmark and announce it like any collected file, so pytest counts its items."""
    suite = Sys1CalSuite.from_parent(session, name="sys1cal", nodeid="sys1cal", run=run)
    items = suite.collect()
    session.config.hook.pytest_collectreport(report=pytest.CollectReport(suite.nodeid, "passed", None, items))
    return items
