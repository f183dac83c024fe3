"""The rest of issue 25's field cases, each as a user meets it (real pytest runs, real files, a loopback server):
a read-only version folder, trend's progress line and a version folder without its manifest, Git LFS pointers
in place of cassettes, an absurd repeat count, an interrupted run's or another model's report as a baseline, a
dataset whose only change is CRLF line endings, and the html command without matplotlib."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_sys1cal.dataset import load_dataset
from tests.field import environ, subset, tree_hashes
from tests.loopback import LoopbackServer
from tests.runs import CASSETTES, sys1cal

JEV = CASSETTES / "jev" / "jev-1.13.0"
GOLDEN = Path(__file__).resolve().parent / "golden" / "jev-report.json"
POINTER = "version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize 4242\n"


def one_error_line(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-3000:]
    (line,) = [line for line in result.stderr.lines if line]
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text
    return line


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """`folder` refuses new files, for root too: chmod where that binds, else the immutable attribute."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        undo = ["chmod", "755", str(folder)]
    else:
        made = subprocess.run(["chattr", "+i", str(folder)], capture_output=True)
        if made.returncode != 0:
            pytest.skip(f"running as root, and chattr +i is not available here: {made.stderr!r}")
        undo = ["chattr", "-i", str(folder)]
    try:
        yield
    finally:
        subprocess.run(undo, check=True)


# ------------------------------------------------------------------------------------ a read-only version folder


@pytest.mark.parametrize("which", ["version", "model"])
def test_recording_into_a_read_only_folder_is_one_line_before_anything_is_sent(
    pytester: pytest.Pytester, which: str
) -> None:
    """Before: 50 INTERNALERROR lines (PermissionError on the lock's temporary file), exit 3."""
    dataset = pytester.path / "six.jsonl"
    renderings = subset(dataset, 6)
    root = pytester.path / "cassettes"
    version = root / "systemone" / "v1"
    version.mkdir(parents=True)
    locked = version if which == "version" else version.parent
    if which == "model":
        version.rmdir()
    with LoopbackServer.for_renderings(renderings) as server, read_only(locked):
        result = sys1cal(pytester, "--sys1cal-model=systemone", "--sys1cal-model-version=v1", f"--sys1cal-base-url={server.url}", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}", "--sys1cal-record-mode=once")  # fmt: skip
        asked = server.requests
    line = one_error_line(result)
    assert line.startswith(f"ERROR: {version}: cannot record into it: no file can be created in {locked} (")
    assert "record into another cassette folder: pytest --sys1cal" in line
    assert asked == 0 and not list(root.rglob("*.json"))


# ------------------------------------------------------------------------------------ trend


def trend(root: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_sys1cal", "trend", "--model", "jev", "--cassettes", str(root)]
    return subprocess.run(command, cwd=cwd, env=environ(), capture_output=True, text=True, timeout=600)


@pytest.mark.e2e  # runs the trend command in a process of its own
def test_trends_progress_line_says_how_many_were_replayed_and_no_folder_is_left_out(tmp_path: Path) -> None:
    """Before: "replayed 365/365 renderings" for a folder holding 30; a folder without a manifest not shown."""
    root = tmp_path / "cassettes"
    partial = root / "jev" / "jev-1.13.0"
    shutil.copytree(JEV, partial)
    files = sorted(partial.glob("*/*.json"))
    for path in files[30:]:
        path.unlink()
    orphan = root / "jev" / "jev-1.14.0"
    shutil.copytree(JEV, orphan)
    (orphan / "manifest.json").unlink()
    done = trend(root, tmp_path)
    assert "trend: jev-1.13.0 (1 of 2): replayed 30/365 renderings (335 could not be: no cassette or a damaged " in (
        done.stderr
    )
    assert "trend: jev-1.14.0 (2 of 2): not replayed" in done.stderr
    assert f"jev-1.14.0: not replayed: {orphan / 'manifest.json'}: no such manifest" in done.stdout
    assert "restore its manifest.json from version control, or re-record the folder" in done.stdout


# ------------------------------------------------------------------------------------ Git LFS pointers


def test_a_folder_of_lfs_pointers_is_named_once_with_git_lfs_pull(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """Before: 365 identical lines advising git checkout or a re-recording."""
    root = tmp_path / "cassettes"
    folder = root / "jev" / "jev-1.13.0"
    shutil.copytree(JEV, folder)
    for index, path in enumerate(sorted(folder.glob("*/*.json"))):
        path.write_text(POINTER.format(f"{index:064x}"), encoding="utf-8")
    before = tree_hashes(tmp_path)
    result = sys1cal(pytester, f"--sys1cal-cassettes={root}")
    line = one_error_line(result)
    assert line.startswith(f"ERROR: {folder}: 365 of 365 cassettes are Git LFS pointers, not the recorded files ")
    assert "run git lfs pull in the repository" in line
    assert tree_hashes(tmp_path) == before


def test_one_lfs_pointer_among_cassettes_says_so_in_its_line(pytester: pytest.Pytester, tmp_path: Path) -> None:
    root = tmp_path / "cassettes"
    folder = root / "jev" / "jev-1.13.0"
    shutil.copytree(JEV, folder)
    pointer = sorted(folder.glob("*/*.json"))[-1]
    pointer.write_text(POINTER.format("0" * 64), encoding="utf-8")
    result = sys1cal(pytester, f"--sys1cal-cassettes={root}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [f"*{pointer}: not a readable cassette (*); it is a Git LFS pointer, not the cassette (*): run git lfs pull"]
    )
    assert "git checkout" not in result.stdout.str()


def test_a_manifest_that_is_an_lfs_pointer_says_so(pytester: pytest.Pytester, tmp_path: Path) -> None:
    root = tmp_path / "cassettes"
    folder = root / "jev" / "jev-1.13.0"
    shutil.copytree(JEV, folder)
    (folder / "manifest.json").write_text(POINTER.format("1" * 64), encoding="utf-8")
    line = one_error_line(sys1cal(pytester, f"--sys1cal-cassettes={root}"))
    assert (
        line
        == f"ERROR: {folder / 'manifest.json'}: it is a Git LFS pointer, not the cassette (the LFS objects were not fetched): run git lfs pull, then run this again"
    )


# ------------------------------------------------------------------------------------ an absurd repeat count


@pytest.mark.parametrize("given", ["option", "ini"])
def test_an_absurd_repeat_count_is_refused_before_anything_is_priced_or_sent(
    pytester: pytest.Pytester, given: str
) -> None:
    dataset = pytester.path / "six.jsonl"
    renderings = subset(dataset, 6)
    root = pytester.path / "cassettes"
    repeats = ["--sys1cal-repeats=1000000"] if given == "option" else []
    if given == "ini":
        pytester.makeini("[pytest]\nsys1cal_repeats = 1000000\n")
    with LoopbackServer.for_renderings(renderings) as server:
        result = sys1cal(pytester, "--sys1cal-model=systemone", f"--sys1cal-base-url={server.url}", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}", "--sys1cal-record-mode=once", *repeats)  # fmt: skip
        asked = server.requests
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = result.stderr.str()
    assert "1,000,000 repeats is more than the 100 a run may ask" in said
    assert "recording" not in result.stdout.str() and "$" not in result.stdout.str()  # nothing priced
    assert asked == 0 and not root.exists()


def test_a_hundred_repeats_are_still_allowed() -> None:
    from pytest_sys1cal.argtypes import MAX_REPEATS, repeat_count

    assert repeat_count(str(MAX_REPEATS)) == MAX_REPEATS


# ------------------------------------------------------------------------------------ baselines


def baseline_run(pytester: pytest.Pytester, baseline: Path) -> pytest.RunResult:
    return sys1cal(pytester, f"--sys1cal-cassettes={CASSETTES}", f"--sys1cal-baseline={baseline}", "-k", "compound")


def test_an_interrupted_runs_report_is_refused_as_a_baseline(pytester: pytest.Pytester) -> None:
    report = json.loads(GOLDEN.read_text(encoding="utf-8"))
    report["interrupted"] = {"reason": "SIGTERM", "selected": 365, "measured": 40}
    baseline = pytester.path / "report.interrupted.json"
    baseline.write_text(json.dumps(report), encoding="utf-8")
    line = one_error_line(baseline_run(pytester, baseline))
    assert line.startswith(
        f"ERROR: --sys1cal-baseline {baseline}: the report of an interrupted run (SIGTERM: 40 of 365 selected "
        "renderings measured), which describes only part of its run; compare with a complete run's report"
    )


def test_another_models_report_is_refused_as_a_baseline(pytester: pytest.Pytester) -> None:
    report = json.loads(GOLDEN.read_text(encoding="utf-8"))
    report["model"]["name"] = "semif"
    baseline = pytester.path / "semif.json"
    baseline.write_text(json.dumps(report), encoding="utf-8")
    line = one_error_line(baseline_run(pytester, baseline))
    assert line == (
        f"ERROR: --sys1cal-baseline {baseline}: a report of model 'semif', and this run measures 'jev'; the upgrade "
        "gate compares two versions of one model: give a report of jev, or a recorded version of it"
    )


# ------------------------------------------------------------------------------------ CRLF


def test_a_dataset_whose_only_change_is_crlf_says_so(pytester: pytest.Pytester) -> None:
    dataset = pytester.path / "sys1cal-v1.jsonl"
    dataset.write_bytes(load_dataset("sys1cal-v1").path.read_bytes().replace(b"\n", b"\r\n"))
    assert len(load_dataset(str(dataset)).renderings) == 365  # the same renderings, read alike
    line = one_error_line(sys1cal(pytester, f"--sys1cal-cassettes={CASSETTES}", f"--sys1cal-dataset={dataset}"))
    assert "these cassettes were recorded for dataset sha256" in line
    assert (
        "(the only difference is the line endings: this file has CRLF line endings where the one recorded had LF, "
        f"as git's core.autocrlf makes on checkout; convert them back with dos2unix {dataset}, or check the file out "
        "again after git config core.autocrlf false)"
    ) in line


def test_another_dataset_gets_no_line_ending_hint(pytester: pytest.Pytester) -> None:
    dataset = pytester.path / "six.jsonl"
    subset(dataset, 6)
    line = one_error_line(sys1cal(pytester, f"--sys1cal-cassettes={CASSETTES}", f"--sys1cal-dataset={dataset}"))
    assert "these cassettes were recorded for dataset sha256" in line and "line endings" not in line


# ------------------------------------------------------------------------------------ the html command


@pytest.mark.e2e  # runs the command in a process of its own
def test_the_html_command_without_matplotlib_names_the_install(tmp_path: Path) -> None:
    shutil.copy(GOLDEN, tmp_path / "report.json")
    hidden = (
        "import runpy, sys\n"
        "sys.modules['matplotlib'] = None  # as if it were not installed\n"
        "sys.argv = ['pytest_sys1cal', 'html', 'report.json']\n"
        "runpy.run_module('pytest_sys1cal', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", hidden], cwd=tmp_path, env=environ(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 4, done.stderr
    assert done.stderr == "error: html: drawing the HTML report needs matplotlib: pip install 'pytest-sys1cal[html]'\n"
    assert not (tmp_path / "report.html").exists()
