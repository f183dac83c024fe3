"""pytest's outputs are outputs too (issue 25): --junitxml, --log-file (and the ini key log_file),
pytest-reportlog's --report-log and pytest-html's --html, when they name one of the run's inputs (the
thresholds file, the dataset, the baseline report, anything under the cassette root), are refused like the
plugin's own report paths: exit status 4, one line naming the path and the input, nothing written or
truncated (every file under the project hashed before and after). --basetemp, a folder pytest empties, is
refused when an input lies in it. The real plugins run: pytest-reportlog and pytest-html are in the test extra."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.field import tree_hashes
from tests.runs import CASSETTES, sys1cal

JEV = CASSETTES / "jev" / "jev-1.13.0"
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "jev-report.json"
SUBSET = "frequency__seed_000042"


@pytest.fixture
def project(pytester: pytest.Pytester) -> dict[str, Path]:
    """A project whose every input is a file of its own: {option: path}."""
    from pytest_sys1cal.dataset import load_dataset

    root = pytester.path / "cassettes"
    shutil.copytree(JEV, root / "jev" / "jev-1.13.0")
    dataset = pytester.path / "sys1cal-v1.jsonl"
    shutil.copy(load_dataset("sys1cal-v1").path, dataset)
    thresholds = pytester.path / "gates.yaml"
    thresholds.write_text("jev:\n  noul: {min_mean_ovl: 0.5}\n", encoding="utf-8")
    baseline = pytester.path / "baseline.json"
    shutil.copy(GOLDEN, baseline)
    return {
        "--sys1cal-cassettes": root,
        "--sys1cal-dataset": dataset,
        "--sys1cal-thresholds": thresholds,
        "--sys1cal-baseline": baseline,
    }


def jev_run(pytester: pytest.Pytester, inputs: dict[str, Path], *args: str) -> pytest.RunResult:
    given = [f"{option}={path}" for option, path in inputs.items()]
    return sys1cal(pytester, "--sys1cal-model=jev", *given, "-k", SUBSET, *args)


def refused(pytester: pytest.Pytester, result: pytest.RunResult, before: dict[str, str]) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    (line,) = [line for line in result.stderr.lines if line]
    assert "Traceback" not in result.stdout.str()
    assert tree_hashes(pytester.path) == before
    return line


@pytest.mark.parametrize(
    ("flag", "what"),
    [
        ("--junitxml", "its JUnit XML"),
        ("--log-file", "its log"),
        ("--report-log", "pytest-reportlog's report log"),
        ("--html", "pytest-html's page"),
    ],
)
@pytest.mark.parametrize("target", ["--sys1cal-thresholds", "--sys1cal-dataset", "--sys1cal-baseline"])
def test_an_output_of_pytests_naming_an_input_is_refused_and_the_input_kept(
    pytester: pytest.Pytester, project: dict[str, Path], flag: str, what: str, target: str
) -> None:
    path = project[target]
    before = tree_hashes(pytester.path)
    line = refused(pytester, jev_run(pytester, project, f"{flag}={path}"), before)
    assert line == (
        f"ERROR: {flag} {path}: this file is also this run's {target}, which pytest would overwrite with {what}; "
        f"give {flag} another path"
    )


@pytest.mark.parametrize("flag", ["--junitxml", "--log-file", "--report-log", "--html"])
def test_an_output_of_pytests_inside_the_cassette_root_is_refused(
    pytester: pytest.Pytester, project: dict[str, Path], flag: str
) -> None:
    inside = project["--sys1cal-cassettes"] / "jev" / "jev-1.13.0" / "out.xml"
    before = tree_hashes(pytester.path)
    line = refused(pytester, jev_run(pytester, project, f"{flag}={inside}"), before)
    assert f"{flag} {inside}: this file is also this run's --sys1cal-cassettes, which pytest would overwrite" in line


def test_the_log_file_ini_key_is_checked_too(pytester: pytest.Pytester, project: dict[str, Path]) -> None:
    """The issue's case: --log-file=X.json --sys1cal-baseline=X.json left X.json empty; here from the ini file."""
    pytester.makeini(f"[pytest]\nlog_file = {project['--sys1cal-baseline']}\n")
    before = tree_hashes(pytester.path)
    line = refused(pytester, jev_run(pytester, project), before)
    assert line.startswith(f"ERROR: --log-file {project['--sys1cal-baseline']}: this file is also this run's")


def test_a_basetemp_holding_an_input_is_refused(pytester: pytest.Pytester, project: dict[str, Path]) -> None:
    root = project["--sys1cal-cassettes"]
    before = tree_hashes(pytester.path)
    line = refused(pytester, jev_run(pytester, project, f"--basetemp={root}"), before)
    assert line.startswith(f"ERROR: --basetemp {root}: this run's --sys1cal-cassettes ({root}) is in it")
    assert line.endswith("pytest empties that folder for its temporary files; give --basetemp another folder")


def test_outputs_elsewhere_are_written(pytester: pytest.Pytester, project: dict[str, Path], tmp_path: Path) -> None:
    outputs = {flag: tmp_path / f"out{flag.replace('-', '_')}" for flag in ("--junitxml", "--log-file", "--report-log")}
    result = jev_run(pytester, project, *(f"{flag}={path}" for flag, path in outputs.items()))
    assert result.ret == pytest.ExitCode.OK
    assert all(path.is_file() for path in outputs.values())
    assert project["--sys1cal-baseline"].read_bytes() == GOLDEN.read_bytes()
