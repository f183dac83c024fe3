"""The bundled reference set (issue 18): in a project with no jev-1.13.0 folder of its own, the main job replays
the package's reference cassettes read-only and gates them on the shipped thresholds; a project's own folder
and its own thresholds.yaml win; nothing is ever recorded into the bundled set."""

from __future__ import annotations

import json
import shutil

import pytest

from pytest_sys1cal.bundled import reference_cassettes
from tests.reports import differences
from tests.runs import REAL_ANALYSIS, REPO, sys1cal

GOLDEN = REPO / "tests" / "golden" / "jev-report.json"


def header_of(result: pytest.RunResult) -> str:
    """The run's header: its three short `sys1cal:` lines, joined."""
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if line.startswith("sys1cal: model"))
    assert all(len(line) <= 160 for line in lines[start : start + 3]), lines[start : start + 3]
    return " ".join(lines[start : start + 3])


def main_job(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return sys1cal(pytester, "--model", "jev", *args)


def test_an_empty_project_replays_the_bundled_reference_with_the_shipped_gates(pytester: pytest.Pytester) -> None:
    report = pytester.path / "report.json"
    result = main_job(pytester, f"--sys1cal-report={report}", *REAL_ANALYSIS)  # compared with the pinned report
    assert result.ret == pytest.ExitCode.OK
    header = header_of(result)
    assert "(bundled reference cassettes, reconstructed, 1 repeat, each answer the mean of 10)" in header
    assert "cassettes pytest-sys1cal's bundled reference set;" in header
    assert str(reference_cassettes()) not in header  # the installation's path is no business of the header
    assert "thresholds pytest-sys1cal's shipped thresholds.yaml: jev + jev[jev-1.13.0] (19 gates)" in header
    # The same numbers (within the golden reports' tolerance) and gates as this repository's own run.
    assert not differences(json.loads(report.read_text()), json.loads(GOLDEN.read_text()))
    assert not (pytester.path / "cassettes").exists()


def test_the_projects_own_thresholds_win(pytester: pytest.Pytester) -> None:
    (pytester.path / "thresholds.yaml").write_text("jev:\n  noul: {min_mean_ovl: 0.99}\n", encoding="utf-8")
    result = main_job(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*noul.min_mean_ovl*0.9183*0.9900*FAILED*"])


def test_the_projects_own_folder_wins(pytester: pytest.Pytester) -> None:
    own = pytester.path / "cassettes" / "jev" / "jev-1.13.0"
    shutil.copytree(REPO / "cassettes" / "jev" / "jev-1.13.0", own)
    manifest = json.loads((own / "manifest.json").read_text())
    (own / "manifest.json").write_text(json.dumps({**manifest, "note": "the project's own copy"}))
    result = main_job(pytester)
    assert result.ret == pytest.ExitCode.OK
    header = header_of(result)
    assert "(reconstructed cassettes," in header and "cassettes cassettes/jev/jev-1.13.0;" in header
    assert str(pytester.path) not in header  # paths as typed from where pytest ran
    assert "thresholds none (no thresholds.yaml)" in header  # the shipped gates go with the bundled set only


def test_nothing_is_recorded_into_the_bundled_set(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    before = sorted(p.stat().st_mtime_ns for p in (reference_cassettes() / "jev").rglob("*"))
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test")
    result = main_job(pytester, f"--sys1cal-cassettes={reference_cassettes()}", "--sys1cal-record-mode=once")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [text for text in result.stderr.lines if text]
    assert "holds cassettes reconstructed from published outputs, which live answers must not be mixed into" in line
    # Away from the bundled root, the same run records into the project's own folder instead: the bundled set
    # is replayed only where nothing is recorded.
    assert sorted(p.stat().st_mtime_ns for p in (reference_cassettes() / "jev").rglob("*")) == before


def test_a_missing_or_damaged_reference_cassette_says_how_to_get_it_back(pytester: pytest.Pytester) -> None:
    from pytest_sys1cal.dataset import load_dataset
    from pytest_sys1cal.models.systemone import JevAdapter
    from pytest_sys1cal.redact import Redactor
    from pytest_sys1cal.session.advice import Advice
    from pytest_sys1cal.session.options import resolve_settings
    from pytest_sys1cal.store.folder import CassetteFolder

    config = pytester.parseconfigure("--sys1cal")
    settings = resolve_settings(config)
    dataset = load_dataset("sys1cal-v1")
    folder = CassetteFolder(reference_cassettes(), "jev", "jev-1.13.0", "none", Redactor(), read_only=True)
    advice = Advice(settings, JevAdapter(None, None, {}), dataset, folder)
    rendering = dataset.renderings[0]
    fix = "reinstall pytest-sys1cal (pip install --force-reinstall --no-deps pytest-sys1cal)"
    assert advice.damaged(rendering, folder.path_for(rendering)) == fix
    missing = advice.missing(rendering, folder.path_for(rendering))
    assert missing.startswith(f"this folder is reconstructed from published outputs: {fix}, or export TYPESAFE_API_KEY")
    # Recording elsewhere means the project's own cassette root, never a folder inside the installation.
    assert f"--sys1cal-cassettes={pytester.path / 'cassettes'} " in missing
