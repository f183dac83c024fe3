"""A recording in rounds under xdist (-n): the controller's scheduler hands each worker at most two items at a
time, in recording order, and sends nothing more once the looks stop the recording; a worker about to measure
an item of round k + 1 waits for the controller's decision after round k (a file in a folder the controller
made), and skips the item without sending anything when the recording stopped. So no request of a round is
sent before the look that releases it, and at most two items per worker are skipped at the stop."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from .sequential_looks import decision_path

# Items a worker holds at once: xdist runs an item only when it holds the next one too (its `nextitem`).
QUEUE = 2
POLL = 0.05  # seconds between a waiting worker's looks for the decision


def scheduler(config: pytest.Config, log: Any, round_of: Callable[[str], int]) -> Any:
    """xdist's load scheduling, but with short queues (made here: xdist is imported only under -n). `round_of`: the
    round of the item with a node id (0 for an item of no round)."""
    from xdist.scheduler import LoadScheduling  # type: ignore[import-untyped]

    class RoundScheduling(LoadScheduling):
        """Load scheduling that keeps each worker's queue at QUEUE items and can be stopped."""

        def schedule(self) -> None:
            self.maxschedchunk = QUEUE  # the first chunks are QUEUE items too
            super().schedule()

        def check_schedule(self, node: Any, duration: float = 0) -> None:
            # Every worker, not only the one that asked: a send moves the queue's front, and a worker the front was
            # kept from (_behind) may take the next item now. Else a worker left holding one item of a later round
            # would wait for a second (xdist runs an item once it holds the next) that nothing sends it: a hang.
            for each in [node, *(other for other in self.nodes if other is not node)]:
                self._fill(each)

        def _fill(self, node: Any) -> None:
            """Top the worker's queue up to QUEUE items; once nothing is left to send, it finishes what it holds."""
            if node.shutting_down:
                return
            held = self.node2pending[node]
            wanted = QUEUE - len(held)
            if self.pending and wanted > 0 and not self._behind(held):
                self._send_tests(node, wanted)
            if not self.pending:
                node.shutdown()

        def _behind(self, held: list[int]) -> bool:
            """Whether the next item is of an earlier round than one the worker holds (a crashed worker's items, put
            back at the front): queued behind an item that waits for that round's look, it would never run. Another
            worker (the crashed one's replacement) takes it."""
            rounds = [round_of(self.collection[index]) for index in held]
            return bool(rounds) and round_of(self.collection[self.pending[0]]) < max(rounds)

        def remove_node(self, node: Any) -> Any:
            """A crashed worker's items after the one it crashed on go back to the *front* of the queue (xdist
            appends them): their round cannot be looked at without them, and the items ahead of them, of later
            rounds, would wait for that look forever."""
            held = self.node2pending.pop(node)
            if not held:
                return None
            crashed = self.collection[held.pop(0)]
            self.pending[:0] = held
            for other in self.nodes:
                self._fill(other)
            return crashed

        def stop(self) -> None:
            """The looks decided: nothing more is sent, and each worker finishes what it holds."""
            self.pending.clear()
            for node in self.nodes:
                node.shutdown()

    return RoundScheduling(config, log)


def may_run(decisions: str, after_round: int) -> bool:
    """On a worker, before an item of round `after_round` + 1 is measured: wait for the controller's decision after
    that round; whether the recording goes on."""
    path = decision_path(decisions, after_round)
    while not path.is_file():
        time.sleep(POLL)
    return bool(json.loads(path.read_text(encoding="utf-8"))["go_on"])
