"""A look between rounds under xdist ends with its decision written, whatever happens in it: the workers wait
for that file before the next round (session/sequential_xdist.py's may_run). A look that cannot write the
folder's manifest (a full disk) used to raise before the decision, and the workers waited forever: now the
rounds stop there, said in one line (what was recorded is kept, and the end of the run says what could not be
written), and a look that fails otherwise still writes "stop" before its error is the run's."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_sys1cal.dataset import load_dataset
from pytest_sys1cal.session.sequential import designed
from pytest_sys1cal.session.sequential_looks import Looker, decision_path

DATASET = load_dataset("sys1cal-v1")


class Folder:
    """A version folder whose manifest write succeeds or finds the disk full."""

    def __init__(self, full: bool):
        self.full = full
        self.manifest: dict[str, Any] = {"model": "systemone"}
        self.written: list[dict[str, Any]] = []

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        if self.full:
            raise OSError(28, "No space left on device")
        self.written.append(manifest)


def looker(tmp_path: Path, folder: Folder, said: list[str] | None = None) -> Looker:
    rounds = designed("obrien-fleming", 10, 0.05, 0, DATASET, recording=True, decisions=str(tmp_path))
    run = SimpleNamespace(dataset=DATASET, baseline=None, thresholds=None, repeats=1, folder=folder, rows=[])
    looking = Looker(rounds, run, say=(said if said is not None else []).append, requests={})
    looking.writes_manifest = True
    return looking


def test_a_look_writes_its_decision_and_the_manifest(tmp_path: Path) -> None:
    folder = Folder(full=False)
    looker(tmp_path, folder).look(1)  # no baseline: not judged, the rounds go on
    assert json.loads(decision_path(str(tmp_path), 1).read_text(encoding="utf-8")) == {"go_on": True}
    assert folder.written[-1]["sequential"]["recorded_rounds"] == 1


def test_a_look_that_cannot_write_the_manifest_stops_the_rounds_and_tells_the_workers(tmp_path: Path) -> None:
    said: list[str] = []
    looking = looker(tmp_path, Folder(full=True), said)
    looking.look(1)
    assert looking.stopped and said[-1] == (
        "sys1cal: round 1: the folder's manifest could not be written (No space left on device): the recording "
        "stops here"
    )
    assert json.loads(decision_path(str(tmp_path), 1).read_text(encoding="utf-8")) == {"go_on": False}


def test_a_look_that_fails_otherwise_still_tells_the_workers_to_stop(tmp_path: Path) -> None:
    def broken(line: str) -> None:
        raise RuntimeError("a bug in a look")

    looking = looker(tmp_path, Folder(full=False), [])
    looking.say = broken
    with pytest.raises(RuntimeError, match="a bug in a look"):
        looking.look(1)
    assert json.loads(decision_path(str(tmp_path), 1).read_text(encoding="utf-8")) == {"go_on": False}
