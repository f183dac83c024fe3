"""No ini file but the project's decides a run (issue 36). pytest chooses its ini file before plugins declare
their options, so in `--sys1cal-cassettes DIR` (a space, not `=`) it reads DIR as a test path, and an ini file
there (pytest.ini, pyproject.toml, tox.ini, setup.cfg) had its addopts applied: a `-k` that made every gate "not
applicable" or a gate file that gates nothing turned a failing folder into exit 0. Each case puts a hostile ini
file in the folder of one path option's value, in a project whose own thresholds.yaml fails a gate: the run
refuses in one line naming the option and its `=` form, and never passes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.runs import CASSETTES, REPO, sys1cal

DATASET = REPO / "fixtures" / "sys1cal-v1" / "v0.1.0_tiny_cleanvars_parallel_primitives.jsonl"
FAILING = "jev:\n  noul: {min_mean_ovl: 0.99}\n"  # the bundled Jev cassettes replay to 0.918
SUBSET = "frequency__seed_000042"  # six renderings: every threshold gate is then "not applicable"

INI = {  # file name -> how it carries addopts
    "pytest.ini": "[pytest]\naddopts = {}\n",
    "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "{}"\n',
    "tox.ini": "[pytest]\naddopts = {}\n",
    "setup.cfg": "[tool:pytest]\naddopts = {}\n",
}
# The option, and the value it names inside the hostile folder (made by `make`).
PATHS = [
    ("--sys1cal-cassettes", "cassettes"),
    ("--sys1cal-thresholds", "gates.yaml"),
    ("--sys1cal-dataset", "data.jsonl"),
    ("--sys1cal-report", "report.json"),
    ("--sys1cal-html", "report.html"),
    ("--sys1cal-markdown", "comment.md"),
    ("--sys1cal-baseline", "baseline.json"),
]
CASES = [(flag, name, ini) for (flag, name), ini in zip(PATHS, [*INI, *INI], strict=False)]


def make(folder: Path, name: str) -> Path:
    """The option's value, as it exists in the hostile folder (pytest reads only existing paths as test paths)."""
    value = folder / name
    if name == "cassettes":
        shutil.copytree(CASSETTES / "jev", value / "jev")
    elif name == "gates.yaml":
        value.write_text(FAILING, encoding="utf-8")
    elif name == "data.jsonl":
        shutil.copy(DATASET, value)
    else:
        value.write_text("{}", encoding="utf-8")
    return value


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    pytester.makefile(".toml", pyproject=f'[tool.pytest.ini_options]\nsys1cal_cassettes = "{CASSETTES}"\n')
    (pytester.path / "thresholds.yaml").write_text(FAILING, encoding="utf-8")
    return pytester.path


@pytest.mark.parametrize("hostile", ["select", "gate_file"])
@pytest.mark.parametrize(("flag", "name", "ini"), CASES, ids=[f"{f}-{i}" for f, _n, i in CASES])
def test_a_hostile_ini_in_a_path_options_folder_never_decides(
    pytester: pytest.Pytester, project: Path, tmp_path: Path, flag: str, name: str, ini: str, hostile: str
) -> None:
    folder = tmp_path / "hostile"
    folder.mkdir()
    value = make(folder, name)
    (folder / "nothing.yaml").write_text("someone-else:\n  noul: {min_mean_ovl: 0.1}\n", encoding="utf-8")
    addopts = f"-k {SUBSET}" if hostile == "select" else f"--sys1cal-thresholds={folder / 'nothing.yaml'}"
    (folder / ini).write_text(INI[ini].format(addopts), encoding="utf-8")
    result = sys1cal(pytester, flag, str(value))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    (line,) = [line for line in result.stderr.lines if line]
    assert line == (
        f"ERROR: {flag} {value}: pytest also read the value as a test path and took its ini file {folder / ini} "
        f"from there (its addopts and settings already applied) instead of {project / 'pyproject.toml'}, so that "
        f"file would decide this run; write it with '=': {flag}={value}"
    )
    assert "passed" not in result.stdout.str()


def test_the_equals_form_beside_the_same_hostile_ini_gates_as_the_project_says(
    pytester: pytest.Pytester, project: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "hostile"
    folder.mkdir()
    value = make(folder, "cassettes")
    (folder / "pytest.ini").write_text(INI["pytest.ini"].format(f"-k {SUBSET}"), encoding="utf-8")
    result = sys1cal(pytester, f"--sys1cal-cassettes={value}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*noul.min_mean_ovl*FAILED*", "*365 passed*"])


# A conftest.py that would turn any run into a pass (pytest imports it before any plugin sees the options).
HOSTILE_CONFTEST = """import pytest


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    session.exitstatus = 0
"""


@pytest.mark.parametrize("where", ["in the folder", "above it"])
@pytest.mark.parametrize("spaced", [True, False], ids=["space", "equals"])
def test_a_conftest_beside_a_path_options_value_never_runs(
    pytester: pytest.Pytester, project: Path, tmp_path: Path, where: str, spaced: bool
) -> None:
    """The same for code: pytest anchors its first conftest.py files at the test paths it parsed once the plugin's
    options are known, so neither form runs the conftest.py of the value's folder or of the one above it (which
    would pass any run): both gate as the project says."""
    folder = tmp_path / "hostile"
    folder.mkdir()
    value = make(folder, "cassettes")
    ((value if where == "in the folder" else folder) / "conftest.py").write_text(HOSTILE_CONFTEST, encoding="utf-8")
    given = ["--sys1cal-cassettes", str(value)] if spaced else [f"--sys1cal-cassettes={value}"]
    result = sys1cal(pytester, *given)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines(["*noul.min_mean_ovl*FAILED*"])
