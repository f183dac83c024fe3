"""Runs that stop before they get through their selection, and Ctrl-C in the end-of-run work: each says so in
the terminal, the JSON report (`interrupted`) and the JUnit XML, counts the collection's selection (not what
ran), never replaces a complete report with a partial one, and never ends in a traceback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.loopback import jevcompat_mock
from tests.runs import CASSETTES, QUIET, REPO, sys1cal

JEV = CASSETTES / "jev" / "jev-1.13.0"
COMPLETE = REPO / "tests" / "golden" / "jev-report.json"  # a complete run's report, to be kept

# Raises KeyboardInterrupt in the call of the STOP_AT-th item, as Ctrl-C there would.
CTRL_C_AT_ITEM = """
import os
STOP_AT = int(os.environ["STOP_AT"])
seen = []

def pytest_runtest_call(item):
    seen.append(item)
    if len(seen) == STOP_AT:
        raise KeyboardInterrupt
"""
# Ctrl-C during the end-of-run analysis, or while the HTML report is drawn.
CTRL_C_IN = """
def pytest_configure(config):
    import {module} as target

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    config.add_cleanup(lambda saved=target.{name}: setattr(target, "{name}", saved))
    target.{name} = interrupted
"""
ANALYSIS = {"module": "pytest_sys1cal.analysis", "name": "analyze"}
HTML = {"module": "pytest_sys1cal.report.html", "name": "render_html"}


def replay(pytester: pytest.Pytester, *args: str, cassettes: Path = CASSETTES) -> pytest.RunResult:
    # In process: pytester would re-raise the nested run's Ctrl-C here, as if it were this run's.
    return sys1cal(pytester, f"--sys1cal-cassettes={cassettes}", *args, no_reraise_ctrlc=True)


def junit(path: Path) -> tuple[dict[str, str], dict[str, ET.Element]]:
    """The suite's properties and its test cases by name."""
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    properties = {p.get("name", ""): p.get("value", "") for p in suite.iter("property")}
    return properties, {case.get("name", ""): case for case in suite.iter("testcase")}


def interrupted_case(case: ET.Element) -> str:
    skipped = case.find("skipped")
    assert skipped is not None and case.find("failure") is None
    return skipped.get("message", "")


def no_traceback(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "could not finish" not in text, text


def with_complete_report(folder: Path) -> Path:
    report = folder / "report.json"
    shutil.copyfile(COMPLETE, report)
    return report


# ------------------------------------------------------------------------------------ stopped while items run


def test_ctrl_c_in_a_replay_keeps_the_complete_report_and_marks_the_partial_one(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CTRL_C_AT_ITEM)
    monkeypatch.setenv("STOP_AT", "20")
    report, xml = with_complete_report(pytester.path), pytester.path / "junit.xml"
    shutil.copyfile(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    result = replay(pytester, f"--sys1cal-report={report}", f"--junitxml={xml}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert report.read_bytes() == COMPLETE.read_bytes()  # the complete report is not replaced
    beside = pytester.path / "report.interrupted.json"
    data = json.loads(beside.read_text())
    assert data["interrupted"] == {"reason": "Ctrl-C", "selected": 365, "measured": 19}
    assert data["counts"]["renderings"] == 19 and len(data["items"]) == 19
    assert {g["verdict"] for g in data["gates"]} == {"not applicable"}
    assert "interrupted (Ctrl-C) after 19 of 365 selected renderings" in data["gates"][0]["explanation"]
    result.stdout.fnmatch_lines(
        [
            "*on sys1cal-v1: 19 of 365 selected renderings measured, *",
            "interrupted (Ctrl-C): 19 of 365 selected renderings measured (19 ran, 346 not run); *",
            f"JSON report of this interrupted run written to {beside}; {report} holds a complete run's report and "
            "was left as it was",
        ]
    )
    properties, cases = junit(xml)
    assert len([name for name in cases if name.startswith("jev[")]) == 19
    assert "interrupted (Ctrl-C): 19 of 365 selected renderings measured" in properties["sys1cal_interrupted"]
    assert interrupted_case(cases["interrupted"]) == properties["sys1cal_interrupted"]


def test_selected_is_the_collections_selection_after_k(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CTRL_C_AT_ITEM)
    monkeypatch.setenv("STOP_AT", "11")
    report = pytester.path / "report.json"
    result = replay(pytester, "-k", "bayes", f"--sys1cal-report={report}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert json.loads(report.read_text())["interrupted"] == {"reason": "Ctrl-C", "selected": 95, "measured": 10}
    result.stdout.fnmatch_lines(["interrupted (Ctrl-C): 10 of 95 selected renderings measured (10 ran, 85 not run)*"])


def test_ctrl_c_before_any_rendering_ran_writes_nothing_and_says_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CTRL_C_AT_ITEM)
    monkeypatch.setenv("STOP_AT", "1")
    report, xml = with_complete_report(pytester.path), pytester.path / "junit.xml"
    result = replay(pytester, "-k", "compound", f"--sys1cal-report={report}", f"--junitxml={xml}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["interrupted (Ctrl-C) before any of the 60 selected renderings ran: no report written"]
    )
    assert report.read_bytes() == COMPLETE.read_bytes()
    assert sorted(p.name for p in pytester.path.glob("report*")) == ["report.json"]
    assert "before any of the 60 selected renderings ran" in interrupted_case(junit(xml)[1]["interrupted"])


def test_ctrl_c_on_an_instruction_without_a_line_number_is_still_a_clean_stop(pytester: pytest.Pytester) -> None:
    # CPython 3.11 gives such a traceback entry (tb_lineno None) when SIGINT lands on an instruction with no
    # line of its own; pytest's terminal then failed to show it: a TypeError traceback and exit status 1.
    pytester.makeconftest(
        """
        import sys, types
        seen = []

        def pytest_runtest_call(item):
            seen.append(item)
            if len(seen) == 5:
                lineless = types.TracebackType(None, sys._getframe(), 10**6, -1)
                assert lineless.tb_lineno is None
                try:  # while handling another exception, itself with such an entry
                    raise ValueError("cleaning up").with_traceback(lineless)
                except ValueError:
                    raise KeyboardInterrupt().with_traceback(lineless)
        """
    )
    report = pytester.path / "report.json"
    # In a subprocess: the failure this guards against would also break an in-process caller.
    result = pytester.runpytest_subprocess(
        "--sys1cal", f"--sys1cal-cassettes={CASSETTES}", *QUIET, f"--sys1cal-report={report}"
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    no_traceback(result)
    assert json.loads(report.read_text())["interrupted"] == {"reason": "Ctrl-C", "selected": 365, "measured": 4}
    result.stdout.fnmatch_lines(["*! KeyboardInterrupt !*", "*conftest.py:*: KeyboardInterrupt"])


def test_x_stops_early_and_the_report_says_how_many_were_selected(pytester: pytest.Pytester) -> None:
    root = pytester.path / "cassettes"
    shutil.copytree(JEV, root / "jev" / "jev-1.13.0")
    sorted((root / "jev" / "jev-1.13.0" / "bayes").glob("*.json"))[2].unlink()  # the third item fails
    shutil.copyfile(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    report = pytester.path / "report.json"
    result = replay(pytester, "-x", f"--sys1cal-report={report}", cassettes=root)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=1)
    data = json.loads(report.read_text())
    assert data["interrupted"] == {
        "reason": "-x/--maxfail: stopping after 1 failures",
        "selected": 365,
        "measured": 2,
    }
    assert {g["verdict"] for g in data["gates"]} == {"not applicable"}
    result.stdout.fnmatch_lines(
        [
            "*on sys1cal-v1: 2 of 365 selected renderings measured, 1 latent problems",
            "interrupted (-x/--maxfail: stopping after 1 failures): 2 of 365 selected renderings measured (3 ran, "
            "1 failed, 362 not run)*",
        ]
    )
    no_traceback(result)


def test_under_xdist_the_selection_is_the_workers_collection(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("import time\n\ndef pytest_runtest_call(item):\n    time.sleep(0.05)\n")
    root = pytester.path / "cassettes"
    shutil.copytree(JEV, root / "jev" / "jev-1.13.0")
    sorted((root / "jev" / "jev-1.13.0" / "compound").glob("*.json"))[0].unlink()  # the first item fails
    report = pytester.path / "report.json"
    result = replay(pytester, "-n", "2", "-x", "-k", "compound", f"--sys1cal-report={report}", cassettes=root)
    assert result.ret in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.INTERRUPTED)  # xdist stops with either
    interrupted = json.loads(report.read_text())["interrupted"]
    assert interrupted["selected"] == 60 and interrupted["measured"] < 60
    assert "stopping after 1 failures" in interrupted["reason"]
    result.stdout.fnmatch_lines(
        [f"interrupted (*stopping after 1 failures): {interrupted['measured']} of 60 selected*"]
    )


def test_a_complete_run_has_no_interrupted_key(pytester: pytest.Pytester) -> None:
    report = pytester.path / "report.json"
    replay(pytester, "-k", "compound", f"--sys1cal-report={report}").assert_outcomes(passed=60, deselected=305)
    assert "interrupted" not in json.loads(report.read_text())


def test_an_interrupted_report_replaces_an_interrupted_one(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CTRL_C_AT_ITEM)
    report = pytester.path / "report.json"
    for stop in ("5", "9"):
        monkeypatch.setenv("STOP_AT", stop)
        assert replay(pytester, f"--sys1cal-report={report}").ret == pytest.ExitCode.INTERRUPTED
    assert json.loads(report.read_text())["interrupted"]["measured"] == 8
    assert not (pytester.path / "report.interrupted.json").exists()


# ------------------------------------------------------------------------------------ Ctrl-C at the end


def test_ctrl_c_in_the_analysis_keeps_the_report_writes_junit_and_no_traceback(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CTRL_C_IN.format(**ANALYSIS))
    report, xml = with_complete_report(pytester.path), pytester.path / "junit.xml"
    result = replay(pytester, "-k", "compound", f"--sys1cal-report={report}", f"--junitxml={xml}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "sys1cal: the end-of-run analysis was interrupted (Ctrl-C): no gate was evaluated",
            f"JSON report NOT written to {report}: the analysis was interrupted (Ctrl-C); {report} left as it was",
        ]
    )
    no_traceback(result)
    assert report.read_bytes() == COMPLETE.read_bytes()
    properties, cases = junit(xml)
    assert len([name for name in cases if name.startswith("jev[")]) == 60  # the items are all there
    assert interrupted_case(cases["interrupted"]) == "sys1cal: the end-of-run analysis was interrupted (Ctrl-C)"


def test_a_second_ctrl_c_stops_the_analysis_of_an_interrupted_run_cleanly(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CTRL_C_AT_ITEM + CTRL_C_IN.format(**ANALYSIS))
    monkeypatch.setenv("STOP_AT", "7")
    report, xml = pytester.path / "report.json", pytester.path / "junit.xml"
    result = replay(pytester, f"--sys1cal-report={report}", f"--junitxml={xml}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "interrupted (Ctrl-C) after 6 of 365 selected renderings ran",
            "sys1cal: the end-of-run analysis was interrupted (Ctrl-C): no gate was evaluated",
            f"JSON report NOT written to {report}: the analysis was interrupted (Ctrl-C)",
        ]
    )
    no_traceback(result)
    assert not report.exists()
    assert interrupted_case(junit(xml)[1]["interrupted"]) == (
        "sys1cal: interrupted (Ctrl-C) after 6 of 365 selected renderings ran; "
        "the end-of-run analysis was interrupted (Ctrl-C)"
    )


def test_ctrl_c_while_the_html_is_drawn_keeps_the_old_page_and_the_json(pytester: pytest.Pytester) -> None:
    pytest.importorskip("matplotlib")
    pytester.makeconftest(CTRL_C_IN.format(**HTML))
    report, html, xml = pytester.path / "report.json", pytester.path / "report.html", pytester.path / "junit.xml"
    html.write_text("<html>an earlier page</html>")
    result = replay(
        pytester, "-k", "compound", f"--sys1cal-report={report}", f"--sys1cal-html={html}", f"--junitxml={xml}"
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            f"JSON report written to {report}",
            f"HTML report NOT written to {html}: interrupted (Ctrl-C) while it was drawn; {html} left as it was",
            "sys1cal: drawing the reports was interrupted (Ctrl-C); the gates above stand",
        ]
    )
    no_traceback(result)
    assert html.read_text() == "<html>an earlier page</html>"
    assert "interrupted" not in json.loads(report.read_text())  # the run itself went through
    assert not list(pytester.path.glob(".report.html.*"))  # no temporary file left behind
    assert interrupted_case(junit(xml)[1]["interrupted"]) == "sys1cal: drawing the reports was interrupted (Ctrl-C)"


# ------------------------------------------------------------------------------------ a real SIGINT


def _wait_for(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _sigint_when(process: subprocess.Popen[bytes], condition: Callable[[], bool]) -> tuple[int, str]:
    try:
        _wait_for(condition, timeout=60)
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)
    finally:
        process.kill()
    return code, process.stdout.read().decode() if process.stdout else ""


@pytest.mark.e2e  # a pytest process, signalled
def test_sigint_to_a_replay(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "import time\nfrom pathlib import Path\nseen = []\n\n"
        "def pytest_runtest_call(item):\n"
        "    seen.append(item)\n"
        "    if len(seen) == 30:\n"
        "        Path('thirty').touch()\n"
        "    time.sleep(0.02)\n"
    )
    report, xml = with_complete_report(tmp_path), tmp_path / "junit.xml"
    command = [sys.executable, "-m", "pytest", "--sys1cal", f"--sys1cal-cassettes={CASSETTES}", *QUIET]
    process = subprocess.Popen(
        [*command, "--sys1cal-report=report.json", "--junitxml=junit.xml"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    code, output = _sigint_when(process, (tmp_path / "thirty").exists)
    assert code == pytest.ExitCode.INTERRUPTED, output
    assert "Traceback" not in output
    assert report.read_bytes() == COMPLETE.read_bytes()
    interrupted = json.loads((tmp_path / "report.interrupted.json").read_text())["interrupted"]
    assert interrupted["reason"] == "Ctrl-C" and interrupted["selected"] == 365
    assert 29 <= interrupted["measured"] < 365
    assert f"{interrupted['measured']} of 365 selected renderings measured" in output
    assert "Ctrl-C" in interrupted_case(junit(xml)[1]["interrupted"])


# ------------------------------------------------------------------------------------ recording


def subset(path: Path, count: int) -> list[Any]:
    """The first `count` renderings of the bundled dataset, as a dataset file of their own."""
    from pytest_sys1cal.dataset import load_dataset

    dataset = load_dataset("sys1cal-v1")
    chosen = list(dataset.renderings[:count])
    source = dataset.path.read_text(encoding="utf-8").splitlines()
    path.write_text("".join(source[r.line - 1] + "\n" for r in chosen), encoding="utf-8")
    return chosen


def cassette_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*.json") if p.name != "manifest.json"]


def test_a_401_that_stops_the_run_counts_the_selection_and_prints_no_empty_tables(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jevcompat.mock import MockConfig

    dataset = pytester.path / "six.jsonl"
    subset(dataset, 6)
    report, xml, root = pytester.path / "report.json", pytester.path / "junit.xml", pytester.path / "c"
    monkeypatch.setenv("SYS1CAL_API_KEY", "wrong")
    with jevcompat_mock(MockConfig(key="the-right-key")) as mock:
        result = sys1cal(pytester, "--sys1cal-model=systemone", "--sys1cal-model-version=jev-1.13.0", f"--sys1cal-base-url={mock.url}", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}", "--sys1cal-record-mode=once", f"--sys1cal-report={report}", f"--junitxml={xml}", no_reraise_ctrlc=True)  # fmt: skip
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(failed=1)
    interrupted = json.loads(report.read_text())["interrupted"]
    assert (interrupted["selected"], interrupted["measured"]) == (6, 0)
    assert "HTTP 401" in interrupted["reason"]
    result.stdout.fnmatch_lines(
        [
            "*on six: 0 of 6 selected renderings measured, 0 latent problems",
            "interrupted (sys1cal: *HTTP 401*): 0 of 6 selected renderings measured (1 ran, 1 failed, 5 not run)*",
            "no rendering was measured (1 failed): no table to show",
        ]
    )
    assert "Table 1" not in result.stdout.str()
    no_traceback(result)
    assert "HTTP 401" in interrupted_case(junit(xml)[1]["interrupted"])
    assert cassette_files(root) == []


@pytest.mark.e2e  # a pytest process against a loopback server, signalled
def test_sigint_while_recording_leaves_a_marked_report_and_a_resumable_folder(tmp_path: Path) -> None:
    from tests.loopback import Behaviour, LoopbackServer

    renderings = subset(tmp_path / "thirty.jsonl", 30)
    root = tmp_path / "cassettes"
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SYS1CAL_"))}
    with LoopbackServer.for_renderings(renderings, Behaviour(delay=0.02, max_in_flight=1)) as server:
        command = [
            sys.executable, "-m", "pytest", "--sys1cal", "--sys1cal-model=systemone", f"--sys1cal-base-url={server.url}",
            "--sys1cal-dataset=thirty.jsonl", f"--sys1cal-cassettes={root}", "--sys1cal-record-mode=once",
            "--sys1cal-repeats=1", "--sys1cal-concurrency=1", "--sys1cal-rate=0", "--sys1cal-report=report.json",
            "--junitxml=junit.xml",
            *QUIET,
        ]  # fmt: skip
        process = subprocess.Popen(command, cwd=tmp_path, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        code, output = _sigint_when(process, lambda: len(cassette_files(root)) >= 4)
        assert code == pytest.ExitCode.INTERRUPTED, output
        assert "Traceback" not in output
        interrupted = json.loads((tmp_path / "report.json").read_text())["interrupted"]
        assert interrupted["reason"] == "Ctrl-C" and interrupted["selected"] == 30
        assert 3 <= interrupted["measured"] < 30
        assert f"{interrupted['measured']} of 30 selected renderings measured" in output
        assert "Ctrl-C" in interrupted_case(junit(tmp_path / "junit.xml")[1]["interrupted"])
        kept = len(cassette_files(root))
        resumed = subprocess.run(command, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stdout
    assert f"sys1cal: recording {30 - kept} of 30 renderings ({kept} already have cassettes)" in resumed.stdout
    data = json.loads((tmp_path / "report.json").read_text())
    assert "interrupted" not in data and data["counts"]["measured"] == 30
    assert len(cassette_files(root)) == 30


# ------------------------------------------------------------------------------------ the renderers


def test_the_html_page_and_the_job_summary_of_an_interrupted_run_say_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    pytester.makeconftest(CTRL_C_AT_ITEM)
    monkeypatch.setenv("STOP_AT", "40")
    summary, html = pytester.path / "summary.md", pytester.path / "report.html"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    complete = "<!DOCTYPE html><title>Sys1Cal calibration: jev jev-1.13.0</title>a complete run's page"
    html.write_text(complete)
    result = replay(pytester, "-k", "compound", f"--sys1cal-html={html}")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    beside = pytester.path / "report.interrupted.html"
    result.stdout.fnmatch_lines(
        [f"HTML report of this interrupted run written to {beside}; {html} holds a complete run's report and *"]
    )
    assert html.read_text() == complete
    sentence = "nterrupted (Ctrl-C): 39 of 60 selected renderings measured (39 ran, 21 not run)"
    assert sentence in beside.read_text()
    assert f"> **I{sentence}" in summary.read_text()
    assert "39 of 60 selected renderings measured." in summary.read_text()
