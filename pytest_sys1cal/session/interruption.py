"""A run that stopped before it got through its selection, as pytest tells it and as the run then says it.

pytest ends a run early on Ctrl-C (KeyboardInterrupt), on a stop an item asked for (``session.shouldstop``:
the plugin's fatal errors, a 401/403; xdist's own stops), on ``pytest.exit`` and on -x/--maxfail
(``session.shouldfail``); the plugin's ``pytest_sessionfinish`` runs in each case. `Interruption` keeps what
the report needs to say so: how many renderings the collection selected (after -k/-m deselection, not how
many ran) and why the run stopped; and whether a Ctrl-C then stopped the end-of-run work itself.

In JUnit XML an interrupted run carries one more test case, ``sys1cal::interrupted``, skipped with the same
sentence as its message (CI test views show it beside the items), and the test suite property
``sys1cal_interrupted`` with that sentence (for tools that read properties).
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pytest

from ..report.terminal import RED, Line
from .signals import HANDLERS

if TYPE_CHECKING:
    from ..document import ReportDocument

NODEID = "sys1cal::interrupted"
PROPERTY = "sys1cal_interrupted"


def reason_of(exc: BaseException) -> str:
    """Why the run stopped, from the exception pytest handed to ``pytest_keyboard_interrupt``."""
    if isinstance(exc, pytest.exit.Exception):
        return f"pytest.exit: {exc.msg}"
    text = str(exc)
    # A bare KeyboardInterrupt is Ctrl-C (SIGINT); pytest's and xdist's Interrupted carry the stop's text.
    return text if text and type(exc) is not KeyboardInterrupt else "Ctrl-C"


def showable(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    """Drop from the interrupt's traceback, and from those of the exceptions it was raised during, the entries
    without a line number, which pytest cannot show (its terminal then fails with a TypeError and exit status
    1): CPython 3.11 gives them when a Ctrl-C lands on an instruction that has no line of its own. The entries
    of their callers remain; so does the line the signal landed on, not the handler that counted it
    (signals.py)."""

    def has_line(entry: Any) -> bool:
        try:
            return isinstance(entry.lineno, int)
        except TypeError:
            return False

    def shown(entry: Any) -> bool:
        return has_line(entry) and entry.frame.code.raw not in HANDLERS

    kept = excinfo.traceback.filter(shown)
    if len(kept) != len(excinfo.traceback) and len(kept):
        excinfo.traceback = kept
    seen: set[int] = set()
    chained = [excinfo.value.__cause__, excinfo.value.__context__]
    while chained:
        exc = chained.pop()
        if exc is None or id(exc) in seen:
            continue
        seen.add(id(exc))
        exc.__traceback__ = _lined(exc.__traceback__)
        chained += [exc.__cause__, exc.__context__]


def _lined(tb: TracebackType | None) -> TracebackType | None:
    """The traceback without its entries that have no line number (all of them kept when none has one)."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    lined = [entry for entry in entries if entry.tb_lineno is not None]
    if len(lined) == len(entries) or not lined:
        return entries[0] if entries else None
    rebuilt = None
    for entry in reversed(lined):
        rebuilt = TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return rebuilt


class Interruption:
    """What the plugin learns of how the run ended. `finishing`: the end-of-run work a Ctrl-C stopped."""

    def __init__(self) -> None:
        self.selected: int | None = None
        self.reason: str | None = None
        self.finishing: str | None = None
        self.signal = "Ctrl-C"  # what stopped the end-of-run work: "SIGTERM" when that did (signals.py)

    def stopped(self, reason: str) -> None:
        """The first reason given is the run's (a fatal error's stop, then pytest's Interrupted, says the same)."""
        if self.reason is None:
            self.reason = reason

    def nothing_ran(self) -> Line:
        """The summary's line when no rendering ran: stopped before the first, or all deselected/skipped."""
        stopped = self.unreported(0)
        return (stopped, RED) if stopped else ("no rendering was measured (all deselected or skipped)", {})

    def drawing_stopped(self) -> Line:
        """Ctrl-C while the reports were drawn (outputs.py names the files left as they were)."""
        self.finishing = "drawing the reports"
        return (f"sys1cal: drawing the reports was interrupted ({self.signal}); the gates above stand", RED)

    def analysis_stopped(self, ran: int) -> list[Line]:
        """Ctrl-C in the end-of-run analysis (a second one, when the run was interrupted before): how far the
        run got, and that no gate was evaluated."""
        self.finishing = "the end-of-run analysis"
        stopped = self.unreported(ran)
        return [
            *([(stopped, RED)] if stopped else []),
            (f"sys1cal: the end-of-run analysis was interrupted ({self.signal}): no gate was evaluated", RED),
        ]

    def unreported(self, ran: int) -> str | None:
        """The line of a stopped run that has no report (nothing ran, or a Ctrl-C stopped its analysis): how
        far it got; None when it was not stopped or every selected rendering ran."""
        selected = ran if self.selected is None else self.selected
        if self.reason is None or (ran and ran >= selected):
            return None
        if not ran:
            of = f" of the {selected} selected renderings" if selected else " rendering"
            return f"interrupted ({self.reason}) before any{of} ran: no report written"
        return f"interrupted ({self.reason}) after {ran} of {selected} selected renderings ran"

    def junit_text(self, report_data: ReportDocument | None, ran: int) -> str | None:
        """The sentence JUnit XML carries for this run, or None when the run and its end went through."""
        from ..report.interrupted import interrupted_line

        texts = [interrupted_line(report_data) if report_data else self.unreported(ran)]
        if self.finishing:
            texts.append(f"{self.finishing} was interrupted ({self.signal})")
        text = "; ".join(t for t in texts if t)
        return f"sys1cal: {text}" if text else None


def mark_junit(config: pytest.Config, text: str, location: str, log: Callable[..., Any]) -> None:
    """Say in the JUnit XML (when --junitxml is on) that the run was interrupted: a suite property and a
    skipped test case. `log`: the report hook, without the terminal (which says it in the summary)."""
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    xml.add_global_property(PROPERTY, text)
    where = (location, 0, NODEID)
    log(report=pytest.TestReport(NODEID, where, {}, "skipped", (location, 1, f"Skipped: {text}"), "call"))
    log(report=pytest.TestReport(NODEID, where, {}, "passed", None, "teardown"))
