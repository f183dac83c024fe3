"""The run's one output boundary for files: the JSON report, the HTML report and the GitHub job summary.
Their paths are checked before anything runs (exit 4 naming the path: a folder, a place that cannot be
written, a path that is also one of the run's inputs); each file is written whole (atomically) and passed
through the run's redactor; "written to" is said only after the write succeeded."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InputError
from .files import write_atomic

if TYPE_CHECKING:
    from .options import Settings
    from .redact import Redactor
    from .run_report import Baseline, Report

Line = tuple[str, dict[str, bool]]


class Outputs:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.files = {
            name: path
            for name, path in (("--sys1cal-report", settings.report), ("--sys1cal-html", settings.html))
            if path is not None
        }

    def inputs(self) -> dict[str, Path]:
        """The files and folders this run reads, which no output may overwrite."""
        s = self.settings
        found = {
            "--sys1cal-baseline": Path(s.baseline) if s.baseline else None,  # a version name matches no file
            "--sys1cal-thresholds": s.thresholds,
            "--sys1cal-cassettes": s.cassettes,
            "--sys1cal-dataset": Path(s.dataset) if os.sep in s.dataset or s.dataset.endswith(".jsonl") else None,
        }
        return {name: path for name, path in found.items() if path is not None}

    def check(self) -> None:
        """Refuse, before any item runs, an output path that cannot hold the file or would destroy an input."""
        if self.settings.html is not None:
            from .report.html import check_available

            check_available()
        seen: dict[Path, str] = {}
        inputs = {_key(path): name for name, path in self.inputs().items()}
        for name, path in self.files.items():
            key = _key(path)
            if key in seen:
                raise InputError(f"{name} {path}: the same file as {seen[key]}; give each report its own path")
            seen[key] = name
            clash = inputs.get(key) or next(
                (n for k, n in inputs.items() if n == "--sys1cal-cassettes" and key.is_relative_to(k)), None
            )
            if clash:
                raise InputError(
                    f"{name} {path}: this file is also this run's {clash}, which writing the report would destroy; "
                    "write the report somewhere else"
                )
            _check_writable(name, path)

    def write(self, report: Report, baseline: Baseline | None, redactor: Redactor) -> list[Line]:
        """Write the JSON and HTML reports and append the job summary; one line per file written or not."""
        from .report.json_report import dumps

        lines: list[Line] = []
        if self.settings.report is not None:
            lines.append(_write("JSON report", self.settings.report, redactor.text(dumps(report.data))))
        if self.settings.html is not None:
            from .report.html import render_html

            page = render_html(report.data, baseline.report if baseline else None)
            lines.append(_write("HTML report", self.settings.html, redactor.text(page)))
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            lines += _append_summary(Path(summary), report.data, self.settings.html, redactor)
        return [line for line in lines if line[0]]


def _key(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _check_writable(name: str, path: Path) -> None:
    if path.is_dir():
        raise InputError(f"{name} {path}: a folder, not a file; name the file to write, e.g. {path / 'report.json'}")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is None or not parent.is_dir():
        raise InputError(f"{name} {path}: {parent} is not a folder, so the report cannot be written there")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{name} {path}: cannot write in {parent} (permission denied); write the report elsewhere")


def _write(what: str, path: Path, text: str) -> Line:
    try:
        write_atomic(path, text)
    except OSError as exc:
        return (f"{what} NOT written to {path}: {exc.strerror or exc}", {"red": True, "bold": True})
    return (f"{what} written to {path}", {})


def _append_summary(path: Path, data: Mapping[str, Any], html: Path | None, redactor: Redactor) -> list[Line]:
    """On GitHub Actions, the tables and gates also go to the job's summary page, as Markdown."""
    from .report.markdown import summary_markdown

    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(redactor.text(summary_markdown(data, html=html, environ=os.environ)))
    except OSError as exc:
        return [(f"job summary NOT appended to {path}: {exc.strerror or exc}", {"red": True})]
    return []
