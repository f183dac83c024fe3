"""`python -m pytest_sys1cal trend`: every recorded version replayed offline in version order, each row the
numbers of that version's own run, consecutive versions compared as the upgrade gate compares them; the
page in headless Chromium; the commands of docs/trend.md as printed; usage errors in one line, exit 4."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_sys1cal.__main__ import main
from tests.degraded import degrade
from tests.runs import REPO, sys1cal
from tests.test_layout import imports
from tests.version_roots import JEV, NEW, OLD, edit_manifest, regression_rows, two_versions

# Replays recorded versions; runs the command in subprocesses and its page in Chromium.
pytestmark = pytest.mark.e2e

THRESHOLDS = REPO / "thresholds.yaml"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return two_versions(tmp_path_factory.mktemp("trend") / "cassettes")


def trend_of(root: Path, thresholds: Path | None = THRESHOLDS, seed: int = 0) -> dict[str, Any]:
    from pytest_sys1cal.dataset import load_dataset
    from pytest_sys1cal.versions.trend import TrendInputs, build_trend

    inputs = TrendInputs("jev", root, load_dataset("sys1cal-v1"), thresholds, seed, environ={})
    return build_trend(inputs)


@pytest.fixture(scope="module")
def trend(root: Path) -> dict[str, Any]:
    return trend_of(root)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["trend", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_each_row_is_that_versions_own_run_and_each_step_its_upgrade_gate(
    pytester: pytest.Pytester, root: Path, trend: dict[str, Any], tmp_path: Path
) -> None:
    assert [row["version"] for row in trend["versions"]] == [OLD, NEW]
    runs = {}
    for version in (OLD, NEW):
        report = tmp_path / f"{version}.json"
        result = sys1cal(pytester, f"--sys1cal-cassettes={root}", f"--sys1cal-thresholds={THRESHOLDS}", f"--sys1cal-model-version={version}", f"--sys1cal-report={report}")  # fmt: skip
        runs[version] = (result.ret, json.loads(report.read_text()))
    for row in trend["versions"]:
        code, report = runs[row["version"]]
        for prim, cell in row["mean_ovl"].items():
            assert cell["mean"] == report["primitives"][prim]["mean_ovl"]  # to the last digit
            assert cell["lower"] < cell["mean"] < cell["upper"]
        assert row["lambda_test"]["p_value"] == report["uncertainty"]["test"]["p_value"]
        failed = [g["name"] for g in report["gates"] if g["verdict"] == "FAILED"]
        assert row["gates"]["failed"] == failed and row["gates"]["count"] == len(report["gates"])
        assert (row["gates"]["outcome"] == "passed") == (code == pytest.ExitCode.OK)
    assert runs[NEW][0] == pytest.ExitCode.TESTS_FAILED and trend["versions"][1]["gates"]["outcome"] == "failed"
    # The step equals --sys1cal-baseline=jev-1.13.0 on a run of jev-1.14.0.
    compared = tmp_path / "compared.json"
    sys1cal(pytester, f"--sys1cal-cassettes={root}", f"--sys1cal-thresholds={THRESHOLDS}", f"--sys1cal-model-version={NEW}", f"--sys1cal-baseline={OLD}", f"--sys1cal-report={compared}")  # fmt: skip
    (step,) = trend["steps"]
    assert (step["from"], step["to"], step["compared"], step["outcome"]) == (OLD, NEW, True, "failed")
    for row in regression_rows(compared):
        cell = step["primitives"][row["name"].split(".")[1]]
        assert (cell["difference"], cell["lower"], cell["upper"]) == (
            row["observed"],
            row["details"]["lower"],
            row["details"]["upper"],
        )
        assert cell["verdict"] == row["verdict"]
    assert [step["primitives"][p]["verdict"] for p in ("noul", "choice", "score")] == ["FAILED", "passed", "FAILED"]


def test_the_trend_is_seeded(root: Path, trend: dict[str, Any]) -> None:
    assert trend_of(root) == trend
    other = trend_of(root, seed=1)
    assert other["versions"][0]["mean_ovl"]["noul"]["mean"] == trend["versions"][0]["mean_ovl"]["noul"]["mean"]
    assert other["versions"][0]["mean_ovl"]["noul"]["lower"] != trend["versions"][0]["mean_ovl"]["noul"]["lower"]


def test_versions_in_version_order_and_the_ones_that_cannot_be_compared_say_why(tmp_path: Path) -> None:
    from pytest_sys1cal.report.trend_text import trend_text

    root = tmp_path / "cassettes"
    shutil.copytree(JEV, root / "jev" / OLD)
    degrade(JEV, root, "jev-1.9.0", weight=0.1)
    edit_manifest(degrade(JEV, root, NEW), repeats_per_answer=5)
    edit_manifest(degrade(JEV, root, "jev-1.20.0"), dataset={"name": "fresh", "sha256": "b" * 64})
    trend = trend_of(root, thresholds=None)
    assert [row["version"] for row in trend["versions"]] == ["jev-1.9.0", OLD, NEW, "jev-1.20.0"]
    assert [row["replayed"] for row in trend["versions"]] == [True, True, True, False]
    assert [step["compared"] for step in trend["steps"]] == [True, False, False]
    text = trend_text(trend)
    assert "jev-1.20.0: not replayed: recorded on dataset fresh sha256 bbbbbbbbbbbb…, not on sys1cal-v1" in text
    assert f"{OLD} → {NEW}: not compared: {OLD} averages 10 model repeat(s) per answer, {NEW} 5" in text
    assert f"{NEW} → jev-1.20.0: not compared: jev-1.20.0 could not be replayed" in text
    assert "margins from the plugin's defaults (no thresholds file)" in text
    assert all(row["gates"]["count"] == 0 for row in trend["versions"][:3]) and "no gates" in text


def test_the_command_prints_the_tables_with_a_progress_line(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    markdown = tmp_path / "trend.md"
    code, out, err = run(capsys, f"--cassettes={root}", f"--thresholds={THRESHOLDS}", f"--markdown={markdown}")
    assert code == 0
    assert err.splitlines()[0].startswith(f"trend: {OLD} (1 of 2): replayed 365/365 renderings and analysed, ")
    assert err.splitlines()[1].startswith(f"trend: {NEW} (2 of 2): replayed 365/365 renderings and analysed, ")
    lines = out.splitlines()
    assert lines[0].startswith(f"Sys1Cal trend: jev, 2 recorded versions under {root / 'jev'}; dataset sys1cal-v1")
    assert re.search(
        rf"^{OLD} +reconstructed +1 \(mean of 10\) +0\.918 \[0\.900, 0\.934\] +0\.764 .* passed \(19\)$", out, re.M
    )
    assert re.search(rf"^{NEW} .* 0\.836 \[0\.813, 0\.857\] .* FAILED \(10 of 21\)$", out, re.M)
    assert re.search(
        rf"^{OLD} → {NEW} +365 +-0\.0822 \[.*\] FAILED +\+0\.0385 \[.*\] passed +-0\.0651 \[.*\] FAILED +FAILED$",
        out,
        re.M,
    )
    assert f"Markdown written to {markdown}" in out
    assert (
        markdown.read_text().startswith("### Sys1Cal trend: jev")
        and "| jev-1.13.0 → jev-1.14.0 | 365 |" in markdown.read_text()
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seed=-1"], "error: trend: --seed -1: expected a whole number ≥ 0"),
        (["--seed"], "error: trend: argument --seed: expected one argument"),
        (["--thresholds=nope.yaml"], "error: trend: --thresholds nope.yaml: no such file"),
        (["--model=mine"], "error: trend: --model mine: not a built-in adapter (jev, semif, systemone)"),
        (["--html=missing/trend.html"], "error: trend: --html missing/trend.html: cannot write in missing"),
        # A folder no one can create a file in, root included (permission bits would not stop root).
        (["--markdown=/proc/trend.md"], "error: trend: --markdown /proc/trend.md: cannot write in /proc"),
        (["--dataset=nope.jsonl"], "error: trend: nope.jsonl: no such dataset file"),
    ],
)
def test_usage_errors_are_one_line_and_exit_4(
    root: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    args: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    try:
        code, out, err = run(capsys, f"--cassettes={root}", *args)
    except SystemExit as exit_:  # argparse's own errors, made one line and exit 4 by the command
        code, out, err = int(exit_.code), *capsys.readouterr()
    assert code == 4 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith(message), err


def test_no_version_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, f"--cassettes={tmp_path}")
    assert (
        code == 4
        and err
        == f"error: trend: no recorded version of model jev under {tmp_path / 'jev'} (a version is a folder holding a manifest.json); check --cassettes and --model\n"
    )


# ============================================================================================ docs/trend.md


def doc_commands() -> list[list[str]]:
    block = (REPO / "docs" / "trend.md").read_text().split("```bash", 1)[1].split("```", 1)[0]
    return [shlex.split(line.split("#", 1)[0]) for line in block.strip().splitlines()]


def test_the_commands_of_docs_trend_md_work_as_printed_and_its_numbers_are_the_output(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(root, tmp_path / "cassettes")
    shutil.copy(THRESHOLDS, tmp_path / "thresholds.yaml")
    monkeypatch.chdir(tmp_path)
    outputs = []
    for command in doc_commands():
        assert command[:3] == ["python", "-m", "pytest_sys1cal"]
        code, out, _ = run(capsys, *command[4:])
        assert code == 0
        outputs.append(out)
    assert (tmp_path / "trend.html").is_file() and (tmp_path / "trend.md").is_file()
    doc = (REPO / "docs" / "trend.md").read_text()
    rows = [line.strip("|").split("|") for line in doc.splitlines() if line.startswith("| jev-")]
    assert [row[0].strip() for row in rows] == [OLD, NEW]
    for version, *cells in rows:
        line = next(line for line in outputs[0].splitlines() if line.startswith(version.strip()))
        for cell in cells:
            assert cell.strip() in line, (cell, line)
    step = next(line for line in outputs[0].splitlines() if line.startswith(f"{OLD} → {NEW}"))
    said = re.search(
        r"Noul Δ (\S+) (\w+), Choice (\S+) (\w+) .*, Score (\S+) (\w+); upgrade (\w+)", doc.replace("\n", " ")
    )
    assert said, "docs/trend.md must state the step's Δ and verdicts"
    noul, noul_v, choice, choice_v, score, score_v, upgrade = said.groups()
    for delta, verdict in ((noul, noul_v), (choice, choice_v), (score, score_v)):
        assert f"{delta.replace('−', '-')} [" in step and verdict in step
    assert step.endswith(upgrade)


# ============================================================================================ the page, and what it imports


def test_the_page_renders_in_chromium_without_errors_or_requests(trend: dict[str, Any], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the page needs the html extra: pip install 'pytest-sys1cal[html]'")
    pytest.importorskip("websocket", reason="the browser is driven with websocket-client (the test extra)")
    from tests.browser import CHROMIUM, open_page
    from tests.report.test_html_browser import not_blank

    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run installs it)")
    chromium = CHROMIUM
    from pytest_sys1cal.report.trend_html import render_trend_html

    page_file = tmp_path / "trend.html"
    page_file.write_text(render_trend_html(trend), encoding="utf-8")
    assert render_trend_html(trend) == page_file.read_text(encoding="utf-8")  # same document, same bytes
    page = open_page(chromium, page_file)
    (tmp_path / "screenshot.png").write_bytes(page.screenshot)
    assert page.title == "Sys1Cal trend: jev"
    assert page.console_errors == [] and page.exceptions == [] and page.log_errors == []
    assert page.requests == [page.url], "the page asked for something besides itself"
    assert [f["id"] for f in page.figures] == ["fig-trend-ovl", "fig-trend-delta"]
    for figure in page.figures:
        assert figure["width"] > 400 and figure["height"] > 200 and figure["marks"] > 40, figure
        assert figure["title"] and len(figure["caption"]) > 40, figure
    inked, colours = not_blank(page.screenshot)
    assert inked > 0.05 and colours > 200, f"the screenshot looks blank: {inked:.1%} inked, {colours} colours"


def test_the_command_imports_no_pytest_vcrpy_or_httpx(root: Path, tmp_path: Path) -> None:
    code = (
        "import sys, contextlib, io\n"
        "from pytest_sys1cal.__main__ import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    assert main(['trend', '--cassettes={root}', '--html={tmp_path / 'p.html'}']) == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', '_pytest', 'vcr', 'httpx')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "module", ["versions/replay.py", "versions/trend.py", "commands/trend.py", "analysis/trend.py"]
)
def test_the_replay_and_the_trend_import_no_glue(module: str) -> None:
    glue = {"pytest", "_pytest", "vcr", "httpx"} | {
        f"pytest_sys1cal.{m}" for m in ("options", "plugin", "run", "session")
    }
    found = [
        f"{name} (line {line})"
        for name, line in imports(REPO / "pytest_sys1cal" / module)
        if name in glue or name.split(".")[0] in glue
    ]
    assert not found, found


def test_versions_sort_naturally() -> None:
    from pytest_sys1cal.versions.replay import natural_key

    given = ["jev-1.13.0", "jev-1.9.0", "jev-1.13.0-rc1", "jev-2.0.0", "jev-1.10.0"]
    assert sorted(given, key=natural_key) == ["jev-1.9.0", "jev-1.10.0", "jev-1.13.0", "jev-1.13.0-rc1", "jev-2.0.0"]
