"""`--option value` and `--option=value` gate alike (issue 20).

pytest picks its rootdir and ini file before plugins declare their options, so in the space form it also
takes the value for a test path; when that path lies outside the project, pytest's rootdir and ini file move,
and with them everything the plugin read from there (thresholds.yaml, the cassette root, the sys1cal_* ini
keys). Each case is a project whose thresholds.yaml fails a gate, run from its directory once with `=` and once
with a space before a value that lies elsewhere: the same gates, the same verdicts, the same exit status."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.runs import CASSETTES, REPO, sys1cal

DATASET = REPO / "fixtures" / "sys1cal-v1" / "v0.1.0_tiny_cleanvars_parallel_primitives.jsonl"
SUBSET = "frequency__seed_000042"  # six renderings; gates of a subset are "not applicable", so most runs are full
# Fails on the bundled Jev cassettes (their Noul mean OVL is 0.918), and only there.
FAILING = "jev:\n  noul: {min_mean_ovl: 0.99}\n"
PASSING = "jev:\n  noul: {min_mean_ovl: 0.5}\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """A project that keeps its cassette root in its ini file and its gates in its own thresholds.yaml."""
    pytester.makefile(".toml", pyproject=f'[tool.pytest.ini_options]\nsys1cal_cassettes = "{CASSETTES}"\n')
    (pytester.path / "thresholds.yaml").write_text(FAILING, encoding="utf-8")
    return pytester.path


def run(pytester: pytest.Pytester, spaced: bool, flag: str, value: Path, *args: str) -> pytest.RunResult:
    given = [flag, str(value)] if spaced else [f"{flag}={value}"]
    return sys1cal(pytester, *given, *args)


def gates(report: Path) -> list[tuple[str, str]]:
    return [(g["name"], g["verdict"]) for g in json.loads(report.read_text(encoding="utf-8"))["gates"]]


def both(pytester: pytest.Pytester, flag: str, value: Path, tmp_path: Path, *args: str) -> list[tuple[int, list]]:
    """The exit status and the gates of the `=` form, then of the space form."""
    out = []
    for spaced in (False, True):
        report = tmp_path / f"report-{spaced}.json"
        result = run(pytester, spaced, flag, value, f"--sys1cal-report={report}", *args)
        assert "Traceback" not in result.stdout.str() + result.stderr.str()
        out.append((result.ret, gates(report)))
    return out


def test_cassettes_given_with_a_space_keep_the_projects_thresholds(
    pytester: pytest.Pytester, project: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "ci" / "cassettes"
    shutil.copytree(CASSETTES / "jev", elsewhere / "jev")
    (project / "pyproject.toml").unlink()  # the root comes from the option alone
    pytester.makefile(".toml", pyproject="[tool.pytest.ini_options]\n")
    equals, space = both(pytester, "--sys1cal-cassettes", elsewhere, tmp_path)
    assert equals == space
    assert equals[0] == pytest.ExitCode.TESTS_FAILED and ("noul.min_mean_ovl", "FAILED") in equals[1]


def test_thresholds_given_with_a_space_keep_the_projects_ini_keys(
    pytester: pytest.Pytester, project: Path, tmp_path: Path
) -> None:
    (project / "thresholds.yaml").write_text(PASSING, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere" / "t.yaml"
    elsewhere.parent.mkdir()
    elsewhere.write_text(FAILING, encoding="utf-8")
    equals, space = both(pytester, "--sys1cal-thresholds", elsewhere, tmp_path)
    assert equals == space  # before: "no cassettes … record this model first", the ini key lost
    assert equals[0] == pytest.ExitCode.TESTS_FAILED and equals[1] == [("noul.min_mean_ovl", "FAILED")]


def test_dataset_given_with_a_space(pytester: pytest.Pytester, project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "data" / "sys1cal-v1.jsonl"
    elsewhere.parent.mkdir()
    shutil.copy(DATASET, elsewhere)
    equals, space = both(pytester, "--sys1cal-dataset", elsewhere, tmp_path)
    assert equals == space and equals[0] == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize("flag", ["--sys1cal-report", "--sys1cal-html"])
def test_an_existing_output_given_with_a_space(
    pytester: pytest.Pytester, project: Path, tmp_path: Path, flag: str
) -> None:
    elsewhere = tmp_path / "out" / ("r.json" if flag == "--sys1cal-report" else "r.html")
    elsewhere.parent.mkdir()
    statuses = []
    for spaced in (False, True):
        elsewhere.write_text("{}", encoding="utf-8")  # exists: pytest would read it as a test path
        report = tmp_path / f"gates-{spaced}.json"
        extra = [] if flag == "--sys1cal-report" else [f"--sys1cal-report={report}"]
        result = run(pytester, spaced, flag, elsewhere, *extra)
        statuses.append((result.ret, gates(elsewhere if flag == "--sys1cal-report" else report)))
    assert statuses[0] == statuses[1] and statuses[0][0] == pytest.ExitCode.TESTS_FAILED


def test_baseline_given_with_a_space(pytester: pytest.Pytester, project: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "saved" / "baseline.json"
    baseline.parent.mkdir()
    made = sys1cal(pytester, f"--sys1cal-report={baseline}")
    assert made.ret == pytest.ExitCode.TESTS_FAILED  # the project's failing gate; the report is whole
    equals, space = both(pytester, "--sys1cal-baseline", baseline, tmp_path)
    assert equals == space
    assert ("regression.noul.mean_ovl", "passed") in equals[1] and ("noul.min_mean_ovl", "FAILED") in equals[1]


def test_the_space_form_says_where_the_plugin_read_its_defaults(
    pytester: pytest.Pytester, project: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text(FAILING, encoding="utf-8")
    result = run(pytester, True, "--sys1cal-thresholds", elsewhere, "-k", SUBSET)
    result.stdout.fnmatch_lines(
        [f"*--sys1cal-thresholds {elsewhere}: pytest also read the value as a test path*reads its defaults*"
         f"from rootdir {project} (ini file {project / 'pyproject.toml'}), as with --sys1cal-thresholds={elsewhere}*"]
    )  # fmt: skip


def test_a_space_that_moves_nothing_says_nothing(pytester: pytest.Pytester, project: Path) -> None:
    inside = project / "t.yaml"
    inside.write_text(FAILING, encoding="utf-8")
    result = run(pytester, True, "--sys1cal-thresholds", inside, "-k", SUBSET)
    assert result.ret == pytest.ExitCode.OK  # part of the dataset: the gate is not applicable
    assert "pytest also read the value" not in result.stdout.str()


def test_where_pytest_cannot_be_asked_the_space_form_is_refused(
    pytester: pytest.Pytester, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import _pytest.config.findpaths as findpaths

    def changed(*args: object, **kwargs: object) -> None:
        raise TypeError("a future pytest's signature")

    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text(FAILING, encoding="utf-8")
    monkeypatch.setattr(findpaths, "determine_setup", changed, raising=True)
    result = run(pytester, True, "--sys1cal-thresholds", elsewhere)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [line for line in result.stderr.lines if line]
    assert line.startswith(
        f"ERROR: --sys1cal-thresholds {elsewhere}: pytest also read the value as a test path when it chose its rootdir "
    )
    assert line.endswith(
        ", so the plugin cannot tell where its defaults (thresholds.yaml, cassettes, sys1cal_* ini keys) are; write "
        f"it with '=': --sys1cal-thresholds={elsewhere}"
    )


@pytest.mark.parametrize("ini", ["pytest.ini", "pyproject.toml"])
def test_the_gate_file_in_addopts_is_not_lost_to_a_space(pytester: pytest.Pytester, tmp_path: Path, ini: str) -> None:
    """Issue 25: with the gate file set in the ini file's addopts and the cassette root given with a space, pytest
    takes its rootdir from the cassette root, never reads that ini file and so never applies its addopts: the run
    said "this run gates nothing … 365 passed", exit 0. The space form must gate like the = form or stop."""
    (pytester.path / "gates.yaml").write_text(FAILING, encoding="utf-8")
    (pytester.path / "thresholds.yaml").unlink(missing_ok=True)
    if ini == "pytest.ini":
        pytester.makefile(".ini", pytest="[pytest]\naddopts = --sys1cal-thresholds=gates.yaml -ra\n")
    else:
        pytester.makefile(
            ".toml", pyproject='[tool.pytest.ini_options]\naddopts = ["--sys1cal-thresholds=gates.yaml"]\n'
        )
    elsewhere = tmp_path / "ci" / "cassettes"
    shutil.copytree(CASSETTES / "jev", elsewhere / "jev")
    equals = run(pytester, False, "--sys1cal-cassettes", elsewhere)
    assert equals.ret == pytest.ExitCode.TESTS_FAILED  # the = form: pytest applied addopts, the gate fails
    equals.stdout.fnmatch_lines(["*noul.min_mean_ovl*FAILED*"])
    space = run(pytester, True, "--sys1cal-cassettes", elsewhere)
    assert space.ret == pytest.ExitCode.USAGE_ERROR  # never a run that gates less
    (line,) = [line for line in space.stderr.lines if line]
    assert line.startswith(f"ERROR: --sys1cal-cassettes {elsewhere}: pytest also read the value as a test path and ")
    assert f"so it never applied the addopts of {pytester.path / ini} (--sys1cal-thresholds=gates.yaml" in line
    assert line.endswith(f"write it with '=': --sys1cal-cassettes={elsewhere}")
    assert "passed" not in space.stdout.str()
