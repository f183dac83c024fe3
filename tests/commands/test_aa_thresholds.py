"""The A/A experiment of bench/aa_thresholds.py, smaller (issue 24): gates printed by `python -m pytest_sys1cal
thresholds` from one real recording of a noisy loopback server (no position effect) hold on independent
re-recordings of the same server, every gate on every one; a real replay with the printed gates gives the same
verdicts as the check. The full-size numbers (365 renderings, 10 repeats, 20 re-recordings) are in
docs/thresholds.md."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.runs import REPO

# Records five times from a loopback server through real pytest processes (about 45 s).
pytestmark = pytest.mark.e2e


def bench():
    spec = importlib.util.spec_from_file_location("aa_thresholds", REPO / "bench" / "aa_thresholds.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_printed_gates_hold_on_independent_recordings_of_the_same_model(tmp_path: Path) -> None:
    outcome = bench().experiment(recordings=4, repeats=3, noise=0.5, problems=12, work=tmp_path)
    new = outcome["new_rule"]
    assert new["recordings"] == 4 and new["all_passed"] == 4, new
    assert all(row["passed"] == 4 for row in new["gates"].values())
    assert {"choice.max_swap_shift", "choice.max_first_position_bias"} <= set(new["gates"])
    assert "repeats" in outcome["set_by"].values()  # the repeat-noise term set some margins
    assert outcome["replay_agrees"]
