"""`python -m pytest_sys1cal` as a shell runs it: output piped to a reader that stops early (`docs | head`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.runs import REPO

pytestmark = pytest.mark.e2e  # starts processes


def test_a_reader_that_stops_early_gets_no_traceback() -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line: every write meets a broken pipe
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest_sys1cal", "docs"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write)
    assert done.returncode == 1
    assert done.stderr == ""


def test_a_reader_that_reads_everything_gets_it_all() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest_sys1cal", "docs"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == (REPO / "docs" / "index.md").read_text(encoding="utf-8")  # the front page, whole
