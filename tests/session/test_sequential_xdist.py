"""The round scheduler (session/sequential_xdist.py) driven through xdist's own LoadScheduling calls, with
stand-in workers: what each worker holds after a crash. tests/session/test_sequential_runs.py runs the real thing
(a worker killed mid-round); the interleaving that hung it, about one run in 25 under load, is forced here."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_sys1cal.session.sequential_xdist import scheduler

pytest.importorskip("xdist")

# Ten items in recording order: round 1 holds t0–t3, round 2 t4–t7, round 3 t8–t9.
COLLECTION = [f"t{i}" for i in range(10)]
ROUND = {name: 1 + (i >= 4) + (i >= 8) for i, name in enumerate(COLLECTION)}


class Worker:
    """What the scheduler asks of an xdist worker: its id, whether it shuts down, the items sent to it."""

    def __init__(self, name: str):
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        pass

    def shutdown(self) -> None:
        self.shutting_down = True


class Config:
    def getvalue(self, name: str) -> Any:
        return ["2*popen"] if name == "tx" else None

    def getoption(self, name: str) -> Any:
        return None


def test_a_worker_left_with_one_item_of_a_later_round_is_sent_its_next_once_the_front_moves() -> None:
    """gw1 dies on t2 holding t3; t3 goes back to the front. gw0 finishes t1 and holds t4 alone (round 2): t3 may
    not queue behind it (t4 waits for round 1's look, which needs t3), and xdist runs an item only once its worker
    holds the next one. The replacement gw2 takes t3; gw0 must then be sent t6, or it holds t4 for ever while gw2's
    round-2 items wait for round 2's look, which needs t4."""
    schedule = scheduler(Config(), None, ROUND.__getitem__)  # type: ignore[arg-type]
    gw0, gw1 = Worker("gw0"), Worker("gw1")
    for worker in (gw0, gw1):
        schedule.add_node(worker)
        schedule.add_node_collection(worker, COLLECTION)
    schedule.schedule()
    assert schedule.node2pending == {gw0: [0, 1], gw1: [2, 3]}
    schedule.mark_test_complete(gw0, 0)
    assert schedule.node2pending[gw0] == [1, 4]
    assert schedule.remove_node(gw1) == "t2"  # it died on t2
    assert schedule.pending[0] == 3
    schedule.mark_test_complete(gw0, 1)
    assert schedule.node2pending[gw0] == [4]  # t3, of round 1, is not queued behind t4
    gw2 = Worker("gw2")
    schedule.add_node(gw2)
    schedule.add_node_collection(gw2, COLLECTION)
    schedule.schedule()
    assert schedule.node2pending[gw2] == [3, 5]
    assert schedule.node2pending[gw0] == [4, 6]  # the front moved: gw0 can run t4 once round 1 is looked at
    for index in (3, 5, 4, 6, 7, 8):
        owner = next(worker for worker, held in schedule.node2pending.items() if index in held)
        schedule.mark_test_complete(owner, index)
    assert not schedule.pending and gw0.shutting_down and gw2.shutting_down  # each finishes what it holds
