"""--sys1cal-html and the breakdowns as a user meets them: real pytest runs through pytester, replaying the
bundled cassettes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.reports import golden, shifted_baseline
from tests.runs import CASSETTES, REAL_ANALYSIS, REPO, sys1cal

INSTALL = "--sys1cal-html needs matplotlib: pip install 'pytest-sys1cal[html]'"


@pytest.fixture(scope="module")
def matplotlib_loaded() -> None:
    """pytester's in-process runs drop the modules first imported inside them; load the figure stack once,
    before the nested runs (as tests/conftest.py does for numpy)."""
    pytest.importorskip("matplotlib", reason="the HTML report needs the html extra: pip install 'pytest-sys1cal[html]'")
    import pytest_sys1cal.report.figure_registry  # noqa: F401


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return sys1cal(
        pytester, f"--sys1cal-cassettes={CASSETTES}", f"--sys1cal-thresholds={REPO / 'thresholds.yaml'}", *args
    )


def test_help_lists_the_html_option(pytester: pytest.Pytester) -> None:
    run(pytester, "--help").stdout.fnmatch_lines(["*--sys1cal-html=PATH*self-contained HTML report*"])


@pytest.mark.usefixtures("matplotlib_loaded")
def test_the_html_report_is_the_one_its_json_report_redraws(pytester: pytest.Pytester, tmp_path: Path) -> None:
    from pytest_sys1cal.report.html import render_html
    from pytest_sys1cal.run_report import Report

    page, report = tmp_path / "out" / "report.html", tmp_path / "report.json"
    # The default analysis: the page is compared with the pinned report's, intervals and splits included.
    result = run(pytester, "--model=jev", f"--sys1cal-html={page}", f"--sys1cal-report={report}", *REAL_ANALYSIS)
    result.assert_outcomes(passed=365)
    result.stdout.fnmatch_lines([f"HTML report written to {page}"])
    html = page.read_text(encoding="utf-8")
    # Same cassettes and seed, same bytes: the page is the one the saved report (and the pinned one) redraws.
    assert html == render_html(Report.read_back(json.loads(report.read_text(encoding="utf-8"))))
    assert html == render_html(Report.read_back(golden("jev")))
    from pytest_sys1cal.__main__ import main

    assert main(["html", str(report), "-o", str(tmp_path / "redrawn.html")]) == 0
    assert (tmp_path / "redrawn.html").read_text(encoding="utf-8") == html
    # The terminal's compact breakdowns, beside Table 1.
    result.stdout.fnmatch_lines(
        [
            "Table 1 by family",
            "family * n * latent * Noul TV * Noul OVL * Choice TV * Choice OVL * Score TV * Score OVL",
            "bayes * 35 * 7 *",
            "all * 365 * 92 * 0.082 * 0.918 * 0.236 * 0.764 * 0.114 * 0.886",
            "Table 1 by representation",
        ]
    )


@pytest.mark.usefixtures("matplotlib_loaded")
def test_a_baseline_run_locates_the_regression_everywhere(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(shifted_baseline(golden("jev"))), encoding="utf-8")
    summary, page = tmp_path / "summary.md", tmp_path / "report.html"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/models")
    monkeypatch.setenv("GITHUB_RUN_ID", "42")
    result = run(pytester, "--model=jev", f"--sys1cal-baseline={baseline}", f"--sys1cal-html={page}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the baseline was better on Choice: the gate fails
    result.stdout.fnmatch_lines(
        [
            "Upgrade comparison by family: Δ mean OVL, new − baseline",
            # (fnmatch reads [...] as a set of characters: ? stands for each bracket)
            "family * n * Noul Δ ?95%? * Choice Δ ?95%? * Score Δ ?95%?",
            "compound * 60 * +0.000 ?+0.000, +0.000? * -0.161 ?-0.*, -0.*? *",
            "  Moved most: Score on frequency +0.343 *; Choice on compound -0.161 *; Noul on bayes -0.053 *",
        ]
    )
    html = page.read_text(encoding="utf-8")
    assert '<figure id="fig-family-delta">' in html and "Upgrade comparison by family: Δ mean OVL" in html
    markdown = summary.read_text(encoding="utf-8")
    assert "[this run's artifacts](https://github.com/acme/models/actions/runs/42#artifacts)" in markdown
    assert "the HTML report `report.html`" in markdown
    assert (
        "**Table 1 by family**" in markdown
        and "**Upgrade comparison by family: Δ mean OVL, new − baseline**" in markdown
    )


def test_without_matplotlib_the_option_is_a_usage_error_naming_the_install(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("import sys\nsys.modules['matplotlib'] = None  # as if it were not installed\n")
    result = run(pytester, "--sys1cal-html=report.html")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {INSTALL}" in result.stderr.str()
    assert "Traceback" not in result.stderr.str()
    assert not (pytester.path / "report.html").exists()


def test_without_the_option_nothing_of_it_is_imported(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import sys

        def pytest_unconfigure(config):
            found = [m for m in ("matplotlib", "pytest_sys1cal.report.figures", "pytest_sys1cal.report.html") if m in sys.modules]
            (config.rootpath / "imported.txt").write_text(repr(found))
        """
    )
    result = pytester.runpytest_subprocess(
        "--sys1cal", f"--sys1cal-cassettes={CASSETTES}", "-k", "frequency__seed_000042", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=6, deselected=359)
    assert (pytester.path / "imported.txt").read_text() == "[]"


def test_the_report_module_imports_nothing_heavy() -> None:
    import subprocess

    code = (
        "import sys, pytest_sys1cal.report.html; print(sorted(m for m in ('numpy', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"  # so the run can check for the extra at configure time without paying for it


def test_the_html_command_refuses_what_is_not_a_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_sys1cal.__main__ import main

    (tmp_path / "x.json").write_text("[]")
    assert main(["html", str(tmp_path / "x.json"), "-o", str(tmp_path / "x.html")]) == 4  # the user's input
    assert "not a sys1cal report" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()
