"""The output boundary (outputs.py) through real runs: a report path that cannot hold the file or would destroy
an input is refused before anything runs (exit 4, one line naming the path and the fix, nothing written,
nothing lost); "written to" is said only after a write succeeded, and a report not written fails the run."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.runs import CASSETTES, REPO, sys1cal

REPORT = REPO / "tests" / "golden" / "jev-report.json"  # any complete report


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return sys1cal(pytester, f"--sys1cal-cassettes={CASSETTES}", *args)


def refused(result: pytest.RunResult, line: str) -> None:
    """Exit 4 before any item ran, with `line` as the one error line, and no traceback."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    errors = [text for text in result.stderr.lines if text.startswith("ERROR:")]
    assert errors == [f"ERROR: {line}"], result.stderr.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert "passed" not in result.stdout.str()


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_report_on_the_baselines_path_is_refused_and_the_baseline_kept(pytester: pytest.Pytester) -> None:
    path = pytester.path / "X.json"
    shutil.copyfile(REPORT, path)
    result = run(pytester, f"--sys1cal-report={path}", f"--sys1cal-baseline={path}")
    refused(
        result,
        f"--sys1cal-report {path}: this file is also this run's --sys1cal-baseline, which writing the report would "
        "destroy; write the report somewhere else",
    )
    assert path.read_bytes() == REPORT.read_bytes()


def test_the_report_through_a_symlink_to_the_baseline_is_refused(pytester: pytest.Pytester) -> None:
    baseline, link = pytester.path / "baseline.json", pytester.path / "link.json"
    shutil.copyfile(REPORT, baseline)
    link.symlink_to(baseline)
    result = run(pytester, f"--sys1cal-report={link}", f"--sys1cal-baseline={baseline}")
    refused(
        result,
        f"--sys1cal-report {link}: this file is also this run's --sys1cal-baseline, which writing the report would destroy; write the report somewhere else",
    )
    assert baseline.read_bytes() == REPORT.read_bytes() and link.is_symlink()


@pytest.mark.parametrize("option", ["thresholds", "dataset"])
def test_the_report_on_an_input_file_is_refused(pytester: pytest.Pytester, option: str) -> None:
    source = {
        "thresholds": REPO / "thresholds.yaml",
        "dataset": REPO / "fixtures" / "sys1cal-v1" / "v0.1.0_tiny_cleanvars_parallel_primitives.jsonl",
    }[option]
    path = pytester.path / source.name
    shutil.copyfile(source, path)
    result = run(pytester, f"--sys1cal-report={path}", f"--sys1cal-{option}={path}")
    refused(
        result,
        f"--sys1cal-report {path}: this file is also this run's --sys1cal-{option}, which writing the report would destroy; write the report somewhere else",
    )
    assert path.read_bytes() == source.read_bytes()


def test_the_report_inside_the_cassette_root_is_refused(pytester: pytest.Pytester) -> None:
    root = pytester.path / "cassettes"
    shutil.copytree(CASSETTES / "jev", root / "jev")
    before = snapshot(root)
    path = root / "jev" / "report.json"
    result = sys1cal(pytester, f"--sys1cal-cassettes={root}", f"--sys1cal-report={path}")
    refused(
        result,
        f"--sys1cal-report {path}: this file is also this run's --sys1cal-cassettes, which writing the report would destroy; write the report somewhere else",
    )
    assert snapshot(root) == before


@pytest.mark.parametrize(
    ("other", "line"),
    [  # the JUnit XML is checked first, then the JSON report, then the HTML
        ("--junitxml", "--sys1cal-report {path}: the same file as --junitxml; give each report its own path"),
        ("--sys1cal-html", "--sys1cal-html {path}: the same file as --sys1cal-report; give each report its own path"),
    ],
)
def test_two_outputs_on_one_path_are_refused(pytester: pytest.Pytester, other: str, line: str) -> None:
    if other == "--sys1cal-html":
        pytest.importorskip("matplotlib")
    path = pytester.path / "out.json"
    result = run(pytester, f"{other}={path}", f"--sys1cal-report={path}")
    refused(result, line.format(path=path))
    assert not path.exists()


def test_a_report_path_naming_a_folder_is_refused(pytester: pytest.Pytester) -> None:
    folder = pytester.path / "reports"
    (folder / "keep").mkdir(parents=True)
    result = run(pytester, f"--sys1cal-report={folder}")
    refused(
        result,
        f"--sys1cal-report {folder}: a folder, not a file; name the file to write, e.g. {folder / 'report.json'}",
    )
    assert [p.name for p in folder.iterdir()] == ["keep"]


def test_a_report_path_under_a_file_is_refused(pytester: pytest.Pytester) -> None:
    parent = pytester.path / "notes.txt"
    parent.write_text("mine")
    path = parent / "report.json"
    result = run(pytester, f"--sys1cal-report={path}")
    refused(result, f"--sys1cal-report {path}: {parent} is a file, not a folder; write the report in a folder")
    assert parent.read_text() == "mine"


def unwritable_folder(tmp_path: Path) -> Path:
    """A folder this process cannot create a file in. Permission bits do not stop root: then a place the
    kernel refuses to root (/sys, /proc), or a skip saying why."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        return folder
    for candidate in (Path("/sys"), Path("/proc")):
        try:
            fd, probe = tempfile.mkstemp(dir=candidate)
        except OSError:
            return candidate
        os.close(fd)
        os.unlink(probe)
    pytest.skip("running as root, where chmod does not stop writes, and /sys and /proc take files here")


def test_a_report_in_a_folder_that_cannot_be_written_is_refused_before_the_run(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    folder = unwritable_folder(tmp_path)
    path = folder / "report.json"
    try:
        result = run(pytester, f"--sys1cal-report={path}")
    finally:
        if folder.is_relative_to(tmp_path):
            folder.chmod(0o755)  # so that pytest can remove it
    why = _why(result)  # the system's reason: Permission denied, Read-only file system, …
    assert why in ("Permission denied", "Read-only file system", "No such file or directory"), why
    refused(result, f"--sys1cal-report {path}: cannot write in {folder} ({why}); write the report elsewhere")
    assert not path.exists()


def _why(result: pytest.RunResult) -> str:
    line = next(text for text in result.stderr.lines if text.startswith("ERROR:"))
    return line[line.rindex("(") + 1 : line.rindex(")")]


def test_a_read_only_report_file_is_refused(pytester: pytest.Pytester) -> None:
    if os.geteuid() == 0:
        pytest.skip("running as root, which may write any file whatever its permission bits")
    path = pytester.path / "report.json"
    shutil.copyfile(REPORT, path)
    path.chmod(0o444)
    result = run(pytester, f"--sys1cal-report={path}")
    refused(result, f"--sys1cal-report {path}: the file is read-only; make it writable or write the report elsewhere")
    assert path.read_bytes() == REPORT.read_bytes()


def test_a_write_that_fails_at_the_end_is_not_claimed_and_fails_the_run(pytester: pytest.Pytester) -> None:
    # The disk fills up between the check at configure and the write at the end.
    pytester.makeconftest(
        """
        import errno
        import pytest_sys1cal.session.outputs as outputs

        def full(path, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def pytest_configure(config):
            config.add_cleanup(lambda saved=outputs.write_atomic: setattr(outputs, "write_atomic", saved))
            outputs.write_atomic = full
        """
    )
    path = pytester.path / "report.json"
    result = run(pytester, "-k", "compound", f"--sys1cal-report={path}")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines([f"JSON report NOT written to {path}: No space left on device"])
    assert "written to" not in result.stdout.str().replace("NOT written to", "")
    assert not path.exists()


def test_the_report_written_is_said_after_the_write(pytester: pytest.Pytester) -> None:
    path = pytester.path / "new" / "folder" / "report.json"
    result = run(pytester, "-k", "compound", f"--sys1cal-report={path}")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"JSON report written to {path}"])
    assert path.is_file() and not list(path.parent.glob(".*"))  # no probe or temporary file left behind
