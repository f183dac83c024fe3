"""A full disk during a recording (issue 36): the cassette folder fills up (a tmpfs of a few memory pages), the
report's disk has room. The run used to end in "could not finish the analysis: OSError" with exit 3 and no JSON
report; now it names the cassette that could not be saved and the manifest that was not written, and why, and
still writes the JSON report. A disk full from the start refuses in one line before any request. Needs root to
mount the tmpfs; elsewhere it skips, saying why.

The tmpfs is sized in pages (a file takes at least one) and recorded one request at a time, so how many
cassettes fit does not depend on the machine's page size or on how writes in flight interleave (with 8 in
flight, their temporary files could fill a 64 KiB disk before the first was saved)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_sys1cal.store.lock import LOCK_NAME
from tests.field import environ, subset
from tests.loopback import LoopbackServer

pytestmark = pytest.mark.e2e  # a pytest process against a loopback server, on a file system made for it


def mounted(folder: Path, pages: int) -> Iterator[Path]:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs (the full disk)")
    folder.mkdir()
    size = pages * os.sysconf("SC_PAGE_SIZE")
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """Room for the lock, the manifest and a dozen cassettes, not for all thirty."""
    yield from mounted(tmp_path / "small", pages=16)


@pytest.fixture
def one_page_disk(tmp_path: Path) -> Iterator[Path]:
    """Room for the recording lock and nothing more: the manifest written before the first request fails."""
    yield from mounted(tmp_path / "tiny", pages=1)


def record(tmp_path: Path, cassettes: Path) -> subprocess.CompletedProcess[str]:
    renderings = subset(tmp_path / "thirty.jsonl", 30)
    with LoopbackServer.for_renderings(renderings) as server:
        return subprocess.run(
            [
                sys.executable, "-m", "pytest", "--sys1cal", "--sys1cal-model=systemone", f"--sys1cal-base-url={server.url}",
                "--sys1cal-dataset=thirty.jsonl", f"--sys1cal-cassettes={cassettes}", "--sys1cal-concurrency=1",
                "--sys1cal-record-mode=once", "--sys1cal-repeats=1", "--sys1cal-retry-budget=0",
                "--sys1cal-report=report.json", "-p", "no:cacheprovider", "-p", "no:randomly",
            ],
            cwd=tmp_path, env=environ(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip


def test_a_full_cassette_disk_names_what_was_not_written_and_keeps_the_report(tmp_path: Path, small_disk: Path) -> None:
    folder = small_disk / "cassettes" / "systemone" / "jev-latest"
    done = record(tmp_path, small_disk / "cassettes")
    output = done.stdout + done.stderr
    assert done.returncode not in (pytest.ExitCode.OK, pytest.ExitCode.INTERNAL_ERROR), output[-3000:]
    assert "could not finish the analysis" not in output and "Traceback" not in output
    assert "No space left on device" in output
    assert f"cannot save {folder}/" in output  # the cassette that did not fit
    assert f"sys1cal: {folder / 'manifest.json'} NOT written: No space left on device;" in output
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert report["interrupted"]["measured"] == report["counts"]["measured"] > 0


def test_a_disk_full_from_the_start_refuses_in_one_line_before_any_request(tmp_path: Path, one_page_disk: Path) -> None:
    done = record(tmp_path, one_page_disk / "cassettes")
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, output[-3000:]
    assert "Traceback" not in output and "INTERNALERROR" not in output
    manifest = Path("tiny") / "cassettes" / "systemone" / "jev-latest" / "manifest.json"
    assert (
        f"cannot start recording: {manifest} could not be written (No space left on device); nothing was sent" in output
    )
    assert "--sys1cal-cassettes=DIR" in output
    folder = one_page_disk / "cassettes" / "systemone" / "jev-latest"
    assert folder.is_dir() and not (folder / LOCK_NAME).exists()  # the lock it took is released


def test_the_file_a_failed_atomic_write_was_for_is_named(tmp_path: Path) -> None:
    from pytest_sys1cal.files import written_for as _written

    default = tmp_path / "manifest.json"
    assert _written(OSError(28, "No space left on device"), default) == default
    tmp = OSError(28, "No space left on device", str(tmp_path / ".replay-index.tsv.0a1b2c3d4e5f.tmp"))
    assert _written(tmp, default) == tmp_path / "replay-index.tsv"
    plain = OSError(30, "Read-only file system", str(tmp_path / "report.json"))
    assert _written(plain, default) == tmp_path / "report.json"
