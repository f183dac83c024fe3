"""--sys1cal-recalibration-splits and its ini key reach the analysis; a count below 1 is a usage error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.runs import REPO, sys1cal


def replay(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # cheap=False: the run's own ini keys and defaults are what is tested here.
    return sys1cal(
        pytester, "--model=jev", f"--sys1cal-cassettes={REPO / 'cassettes'}", "-k", "bayes", *args, cheap=False
    )


def splits_reported(report: Path) -> set[tuple[int, int, int]]:
    blocks = json.loads(report.read_text())["readout_recalibrated"].values()
    return {(block["splits"], *block["held_out"]["seeds"]) for block in blocks}


def test_the_option_sets_the_number_of_splits_and_the_seeds_follow_the_runs_seed(pytester: pytest.Pytester) -> None:
    report = pytester.path / "report.json"
    result = replay(pytester, "--sys1cal-recalibration-splits=3", "--sys1cal-seed=5", f"--sys1cal-report={report}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    assert splits_reported(report) == {(3, 5, 7)}
    result.stdout.fnmatch_lines(["*over 3 splits: mean ± SD*", "*seeded 5 … 7*"])


def test_the_ini_key_sets_it_and_the_command_line_wins(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nsys1cal_recalibration_splits = 2\n")
    report = pytester.path / "report.json"
    assert replay(pytester, f"--sys1cal-report={report}").ret == pytest.ExitCode.OK
    assert splits_reported(report) == {(2, 0, 1)}
    assert replay(pytester, "--sys1cal-recalibration-splits=4", f"--sys1cal-report={report}").ret == 0
    assert splits_reported(report) == {(4, 0, 3)}


@pytest.mark.parametrize("given", [["--sys1cal-recalibration-splits=0"], ["--sys1cal-recalibration-splits=two"]])
def test_a_count_below_one_or_not_a_number_is_a_usage_error(pytester: pytest.Pytester, given: list[str]) -> None:
    result = replay(pytester, *given)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--sys1cal-recalibration-splits" in result.stderr.str()
