"""The baseline of the upgrade gate (``--sys1cal-baseline``): an earlier JSON report, read and checked here
before any item runs, so a baseline that cannot be compared stops the run at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .gates.regression import BaselineError, check_baseline
from .report_file import ReportError, read_report
from .run_report import Baseline


def load_baseline(path: str | Path) -> dict[str, Any]:
    """Read a JSON report written by --sys1cal-report. Raises BaselineError naming the file."""
    try:
        return read_report(path)
    except ReportError as exc:
        raise BaselineError(f"baseline {exc}") from None


def averaged_repeats(report: dict[str, Any] | Any) -> int:
    """How many model repeats each rendering's value in a report averages."""
    return int(report.get("repeats") or 1) * int(report.get("repeats_per_answer") or 1)


def saved_baseline(path: Path, dataset_sha256: str) -> Baseline:
    """The saved report at `path` as this run's baseline; it must come from the same dataset."""
    name = f"--sys1cal-baseline {path}"
    report = load_baseline(path)
    check_baseline(report, dataset_sha256, name)
    return Baseline(report, str(path))


def check_repeats(baseline: Baseline, repeats: int, repeats_per_answer: int) -> None:
    """Per-item OVL of a repeat mean depends on the number of repeats averaged: compare like with like."""
    theirs, ours = averaged_repeats(baseline.report), repeats * repeats_per_answer
    if theirs != ours:
        raise BaselineError(
            f"--sys1cal-baseline {baseline.name}: each of its answers averages {theirs} model repeat(s), "
            f"this run's {ours}; the OVL of a mean depends on how many repeats it averages, so record both with "
            f"as many repeats (--sys1cal-repeats={theirs // repeats_per_answer or 1})"
        )
