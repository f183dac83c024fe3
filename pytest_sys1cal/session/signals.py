"""SIGTERM handled like the first Ctrl-C (issue 28): CI systems cancel a job with SIGTERM, and without a handler
Python ends at once (exit 143) with no word: no JUnit XML, no report, none of the "interrupted" marking.

On the controller (or without xdist) the first SIGTERM raises `Terminated`, a KeyboardInterrupt, where a Ctrl-C
would land, so the run takes Ctrl-C's path (interruption.py): the items stop, a recording keeps the cassettes it
finished, and the JSON and HTML reports, the job summary and the JUnit XML (``sys1cal::interrupted``) say the
run was interrupted ("SIGTERM"), never replacing a complete report. A signal is raised only where the plugin
can take it cleanly: while the items run, or during the end-of-run analysis (a second signal there stops it,
as a second Ctrl-C does: no gate evaluated). A second signal before the analysis began makes it skip the
analysis at once; one after it, while pytest writes its last lines, lets those finish. A Ctrl-C counts as a
signal too (the handler counts it and raises KeyboardInterrupt as Python's own does), so a SIGTERM that CI
sends right after it is the second one: remembered, never raised inside pytest's own interrupt hook (which
printed a ``Terminated`` traceback while it formatted the Ctrl-C).

Under xdist the controller passes the signal on to its workers (their pids from execnet), and a worker that
gets SIGTERM (from the controller, or from CI signalling the whole process group) ends at once, sending no
further request and no message to a controller that is closing its channels (which printed
``PluggyTeardownRaisedWarning … OSError: cannot send``): whatever a worker saved is whole (cassettes are written
atomically), and what it did not report is counted as not run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from types import FrameType
from typing import Any

SIGTERM = NAME = "SIGTERM"
WORKER_EXIT = 128 + signal.SIGTERM  # what a process ended by SIGTERM reports


class Terminated(KeyboardInterrupt):
    """SIGTERM, taken like the first Ctrl-C; its text is the reason the report gives."""


class SignalStop:
    """This process's SIGTERM handler: installed at configure (only where SIGTERM still has Python's default,
    on the main thread), removed at unconfigure. `phase` follows the run: ``items`` (until the end-of-run work),
    ``ending`` (pytest's session finish, before the analysis), ``analysis`` (the report being built and
    written), ``after`` (pytest's own last lines)."""

    def __init__(self, *, worker: bool):
        self.worker = worker
        self.received = 0
        self.phase = "items"
        self.worker_pids: list[int] = []
        self._previous: Any = None
        self._previous_int: Any = None
        self._installed = False
        self._counting_int = False
        self._at_ending = 0

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
            return  # someone else's handler (a CI wrapper, another plugin) stands
        self._previous = signal.signal(signal.SIGTERM, self._handle)
        self._installed = True
        if not self.worker and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._previous_int = signal.signal(signal.SIGINT, self._ctrl_c)
            self._counting_int = True

    def uninstall(self) -> None:
        if self._installed:
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signal.SIGTERM, self._previous or signal.SIG_DFL)
            self._installed = False
        if self._counting_int:
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signal.SIGINT, self._previous_int or signal.default_int_handler)
            self._counting_int = False

    def ending(self) -> None:
        """The items are done (pytest's session finish): a signal from now on is remembered, not raised, until
        the analysis begins."""
        self.phase = "ending"
        self._at_ending = self.received

    @property
    def skip_analysis(self) -> bool:
        """A second signal, or one after the items were done, came before the end-of-run analysis began: the
        run ends at once."""
        return self.received >= 2 or self.received > self._at_ending

    def _ctrl_c(self, signum: int, frame: FrameType | None) -> None:
        """Ctrl-C: counted, then Python's own KeyboardInterrupt."""
        self.received += 1
        raise KeyboardInterrupt

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.received += 1
        if self.worker:
            os._exit(WORKER_EXIT)  # at once: no request, no message to a controller closing its channels
        for pid in self.worker_pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        self.worker_pids = []
        if (self.phase == "items" and self.received == 1) or self.phase == "analysis":
            raise Terminated(NAME)
        # Otherwise remembered: before the analysis, it skips it (skip_analysis); after it, pytest finishes
        # writing what it has (the JUnit XML, its summary), which takes moments.


def signal_name(exc: BaseException) -> str:
    """How the messages name what interrupted: SIGTERM, or Ctrl-C (any other KeyboardInterrupt)."""
    return NAME if isinstance(exc, Terminated) else "Ctrl-C"


def worker_pid(node: Any) -> int | None:
    """An xdist worker's pid, from the information execnet gathered when the gateway came up (None if not)."""
    info = getattr(getattr(node, "gateway", None), "_cache_rinfo", None)
    pid = getattr(info, "pid", None)
    return pid if isinstance(pid, int) and pid > 0 else None


# The handlers' own code: an interrupt's traceback shows the line the signal landed on, not them (interruption.py).
HANDLERS = frozenset({SignalStop._ctrl_c.__code__, SignalStop._handle.__code__})
