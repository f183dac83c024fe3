"""Every command fails in one line with status 4 where it cannot write (issue 36): the `html` command into a
read-only folder (a read-only bind mount) and onto a full disk (a small tmpfs) printed a Python traceback. As
root only; elsewhere these skip, saying why."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands.test_update_careful import GOLDEN, mounted, needs


def html(cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_sys1cal", "html", str(GOLDEN / "jev-report.json"), "-o", "report.html"]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 4, done.stderr[-2000:]
    (line,) = done.stderr.splitlines()
    return line


@pytest.mark.e2e  # the html command in a process of its own
def test_html_into_a_read_only_folder(tmp_path: Path) -> None:
    needs("mount")
    source, folder = tmp_path / "source", tmp_path / "ro"
    source.mkdir()
    folder.mkdir()
    subprocess.run(["mount", "--bind", str(source), str(folder)], capture_output=True)
    with mounted("mount", "-o", "remount,ro,bind", str(folder)):
        line = one_line(html(folder))
    subprocess.run(["umount", str(folder)], capture_output=True)
    assert line == (
        "error: report.html: Read-only file system; the command stopped there (a file it writes is written whole or "
        "not at all)"
    )
    assert list(source.iterdir()) == []


@pytest.mark.e2e  # the html command in a process of its own
def test_html_onto_a_full_disk(tmp_path: Path) -> None:
    needs("mount")
    folder = tmp_path / "small"
    folder.mkdir()
    with mounted("mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(folder)):
        with contextlib.suppress(OSError):
            (folder / "fill").write_bytes(b"\0" * 65536)
        line = one_line(html(folder))
        assert sorted(p.name for p in folder.iterdir()) == ["fill"]  # no half page, no temporary file left
    assert line.startswith("error: report.html: No space left on device; the command stopped there")
