"""A full disk during a recording (issue 36): the cassette folder fills up (a 64 KiB tmpfs), the report's disk
has room. The run used to end in "could not finish the analysis: OSError" with exit 3 and no JSON report; now
it names the cassette that could not be saved and the manifest that was not written, and why, and still writes
the JSON report. Needs root to mount the tmpfs; elsewhere it skips, saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.field import environ, subset
from tests.loopback import LoopbackServer

pytestmark = pytest.mark.e2e  # a pytest process against a loopback server, on a file system made for it


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs (the full disk)")
    folder = tmp_path / "small"
    folder.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_full_cassette_disk_names_what_was_not_written_and_keeps_the_report(tmp_path: Path, small_disk: Path) -> None:
    renderings = subset(tmp_path / "thirty.jsonl", 30)
    folder = small_disk / "cassettes" / "systemone" / "jev-latest"
    with LoopbackServer.for_renderings(renderings) as server:
        done = subprocess.run(
            [
                sys.executable, "-m", "pytest", "--sys1cal", "--sys1cal-model=systemone", f"--sys1cal-base-url={server.url}",
                "--sys1cal-dataset=thirty.jsonl", f"--sys1cal-cassettes={small_disk / 'cassettes'}",
                "--sys1cal-record-mode=once", "--sys1cal-repeats=1", "--sys1cal-retry-budget=0",
                "--sys1cal-report=report.json", "-p", "no:cacheprovider", "-p", "no:randomly",
            ],
            cwd=tmp_path, env=environ(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode not in (pytest.ExitCode.OK, pytest.ExitCode.INTERNAL_ERROR), output[-3000:]
    assert "could not finish the analysis" not in output and "Traceback" not in output
    assert "No space left on device" in output
    assert f"cannot save {folder}/" in output  # the cassette that did not fit
    assert f"sys1cal: {folder / 'manifest.json'} NOT written: No space left on device;" in output
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["interrupted"]["measured"] == report["counts"]["measured"] > 0


def test_the_file_a_failed_atomic_write_was_for_is_named(tmp_path: Path) -> None:
    from pytest_sys1cal.files import written_for as _written

    default = tmp_path / "manifest.json"
    assert _written(OSError(28, "No space left on device"), default) == default
    tmp = OSError(28, "No space left on device", str(tmp_path / ".replay-index.tsv.0a1b2c3d4e5f.tmp"))
    assert _written(tmp, default) == tmp_path / "replay-index.tsv"
    plain = OSError(30, "Read-only file system", str(tmp_path / "report.json"))
    assert _written(plain, default) == tmp_path / "report.json"
