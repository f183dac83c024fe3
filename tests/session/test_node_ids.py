"""Node ids given back to pytest (issue 20): the id pytest prints for a rendering, in ``--co -q`` or a
FAILED line, run as an argument selects that rendering, as a test file's node id would; with xdist, with
another model, mixed with real test paths; anything that is not an item of the run is one usage error."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from pytest_sys1cal.session.node_ids import take_node_ids
from tests.runs import CASSETTES, REPO, run, sys1cal

JEV = CASSETTES / "jev" / "jev-1.13.0"
FIRST = "sys1cal::jev[bayes/bayes__seed_000042__repr_counts]"
OTHER = "sys1cal::jev[frequency/frequency__seed_000042__repr_prose]"


def replay(pytester: pytest.Pytester, *args: str, root: Path = CASSETTES) -> pytest.RunResult:
    return sys1cal(pytester, f"--sys1cal-cassettes={root}", *args)


def collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stdout.lines if line.startswith("sys1cal::")]


def passed_lines(result: pytest.RunResult) -> list[str]:
    """The node ids of -v's PASSED lines, in order."""
    return [line.split(" PASSED")[0] for line in result.stdout.lines if " PASSED" in line]


def test_the_ids_that_collect_only_prints_run_just_those_renderings(pytester: pytest.Pytester, tmp_path: Path) -> None:
    printed = collected(replay(pytester, "--co", "-q"))
    assert printed[0] == FIRST and OTHER in printed
    report = tmp_path / "report.json"
    thresholds = f"--sys1cal-thresholds={REPO / 'thresholds.yaml'}"
    result = replay(pytester, "-v", FIRST, OTHER, f"--sys1cal-report={report}", thresholds)
    result.assert_outcomes(passed=2)
    assert passed_lines(result) == [FIRST, OTHER]
    data = json.loads(report.read_text())
    assert sorted(item["instance_id"].split("__parallel")[0] for item in data["items"]) == [
        "bayes__seed_000042__repr_counts",
        "frequency__seed_000042__repr_prose",
    ]
    # Part of the dataset: the threshold gates describe the whole of it, so they are not applicable.
    assert data["gates"] and {gate["verdict"] for gate in data["gates"]} == {"not applicable"}
    assert result.ret == pytest.ExitCode.OK


def test_the_id_of_a_failed_line_reruns_that_rendering(pytester: pytest.Pytester, tmp_path: Path) -> None:
    root = tmp_path / "cassettes"
    shutil.copytree(JEV, root / "jev" / "jev-1.13.0")
    cassette = root / "jev" / "jev-1.13.0" / "frequency" / "frequency__seed_000042__repr_prose.json"
    saved = cassette.read_bytes()
    cassette.unlink()
    failed = replay(pytester, "-k", "frequency__seed_000042", root=root)
    failed.assert_outcomes(passed=5, failed=1)
    line = next(line for line in failed.stdout.lines if line.startswith("FAILED "))
    node_id = re.match(r"FAILED (\S+)", line)[1]  # type: ignore[index]
    assert node_id == OTHER
    cassette.write_bytes(saved)
    replay(pytester, node_id, root=root).assert_outcomes(passed=1)


def test_several_ids_under_xdist_run_once_each(pytester: pytest.Pytester) -> None:
    # xdist's workers parse the command line again: each must take the ids out and collect the same items.
    result = replay(pytester, "-n", "2", FIRST, OTHER, FIRST)
    result.assert_outcomes(passed=2)


def test_ids_of_another_model_run_with_that_model(pytester: pytest.Pytester) -> None:
    node_id = "sys1cal::systemone[bayes/bayes__seed_000042__repr_counts]"
    args = ("--sys1cal-model=systemone", "--sys1cal-model-version=typed-gguf-smollm2-135m")
    assert collected(replay(pytester, *args, "--co", "-q", node_id)) == [node_id]
    replay(pytester, *args, "-n", "2", node_id).assert_outcomes(passed=1)


def test_the_suite_and_the_model_select_every_rendering(pytester: pytest.Pytester) -> None:
    for whole in ("sys1cal", "sys1cal::jev"):
        assert len(collected(replay(pytester, "--co", "-q", whole))) == 365


def test_real_paths_beside_ids_still_collect(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine="def test_mine():\n    assert 1 + 1 == 2\n")
    result = replay(pytester, "-v", "test_mine.py", FIRST)
    result.assert_outcomes(passed=2)
    assert passed_lines(result) == [FIRST, "test_mine.py::test_mine"]  # the benchmark runs first, as without ids


@pytest.mark.parametrize(
    ("node_id", "said"),
    [
        (
            "sys1cal::jev[bayes/bayes__seed_000042__repr_countz]",
            "sys1cal::jev[bayes/bayes__seed_000042__repr_countz]: dataset sys1cal-v1 has no rendering "
            "bayes/bayes__seed_000042__repr_countz (did you mean sys1cal::jev[bayes/bayes__seed_000042__repr_counts]?)",
        ),
        (
            "sys1cal::systemone[bayes/bayes__seed_000042__repr_counts]",
            "sys1cal::systemone[bayes/bayes__seed_000042__repr_counts] is an item of model systemone, but this run "
            "measures jev (run it with --sys1cal-model=systemone)",
        ),
        (
            "sys1cal::gates::noul.min_mean_ovl",
            "sys1cal::gates::noul.min_mean_ovl is not the id of a rendering (sys1cal::jev[<family>/<instance id>])",
        ),
    ],
    ids=["misspelt", "other-model", "gate"],
)
def test_an_id_that_is_not_an_item_of_the_run_is_one_usage_error(
    pytester: pytest.Pytester, node_id: str, said: str
) -> None:
    pytester.makepyfile(test_mine="def test_mine():\n    pass\n")
    result = replay(pytester, "test_mine.py", node_id)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    error = result.stderr.str()
    assert f"ERROR: {said}. List this run's ids with: " in error
    assert "Traceback" not in error and "file or directory not found" not in error
    # The command it names is safe to run as printed, and lists the ids.
    command = shlex.split(error.split("List this run's ids with: ", 1)[1].strip())
    assert command[0] == "pytest" and "--co" in command
    assert FIRST in collected(run(pytester, *command[1:]))


def test_an_id_without_sys1cal_says_to_add_it(pytester: pytest.Pytester) -> None:
    result = run(pytester, FIRST)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {FIRST} is a benchmark item, which runs only with --sys1cal; add --sys1cal" in result.stderr.str()


def test_taking_ids_out_leaves_real_paths_in_place(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    args = ["tests", FIRST, "sys1cal", "tests/test_x.py::test_y"]
    assert take_node_ids(args, tmp_path) == [FIRST, "sys1cal"]
    assert args == ["tests", "tests/test_x.py::test_y"]
    (tmp_path / "sys1cal").mkdir()  # a real folder of that name stays a path
    args = ["sys1cal"]
    assert take_node_ids(args, tmp_path) == [] and args == ["sys1cal"]
