"""The run's one output boundary for files: the JSON report, the HTML report, the pull-request comment
(``--sys1cal-markdown``) and the GitHub job summary.

Their paths are checked before anything runs (exit 4 naming the path and the fix): a folder, a place that
cannot be written (tried for real, with a probe file removed at once: permission bits do not stop root, a
read-only file system or /proc does), a read-only file, two outputs on one path (the JUnit XML included), a
path that is also one of the run's inputs. Each file is written whole (atomically) and passed through the
run's redactor; "written to" is said only after the write succeeded, "NOT written to … : why" otherwise.

A report of an interrupted run (its ``interrupted`` block) never replaces the complete report of an earlier
run at the same path: it goes beside it (``report.interrupted.json``), and the line says where and why. A
Ctrl-C while a file is drawn stops the drawing, leaves the file as it was and says so.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError
from ..files import cannot_create_in, write_atomic
from ..report.terminal import RED, Line
from ..vocabulary import REPORT_SCHEMA
from .signals import signal_name

if TYPE_CHECKING:
    from ..redact import Redactor
    from ..run_report import Baseline, Report
    from .options import Settings

# (what, the option that named it, its path, how to draw it)
Document = tuple[str, str, Path, Callable[[], str]]
WHAT = {"--sys1cal-report": "JSON report", "--sys1cal-html": "HTML report", "--sys1cal-markdown": "Markdown comment"}


class Outputs:
    """`pytest_outputs`: {flag: (path, what)} of the files pytest and its plugins write (--junitxml, --log-file,
    --report-log, pytest-html's --html, …; options.py finds them) and the folder --basetemp names, checked
    against the inputs and the others like the plugin's own (pytest writes them, not this class). After
    `write`: `failed` when a file could not be written, `interrupted` when a Ctrl-C stopped the drawing."""

    def __init__(self, settings: Settings, pytest_outputs: Mapping[str, tuple[Path, str]] | None = None):
        self.settings = settings
        self.files = {
            name: path
            for name, path in (
                ("--sys1cal-report", settings.report),
                ("--sys1cal-html", settings.html),
                ("--sys1cal-markdown", settings.markdown),
            )
            if path is not None
        }
        self.pytest_outputs = dict(pytest_outputs or {})
        self.failed = False
        self.interrupted = False

    def inputs(self) -> dict[str, Path]:
        """The files and folders this run reads, which no output may overwrite."""
        s = self.settings
        found = {
            "--sys1cal-baseline": Path(s.baseline) if s.baseline else None,  # a version name matches no file
            "--sys1cal-thresholds": s.thresholds,
            "--sys1cal-cassettes": s.cassettes,
            "--sys1cal-dataset": _dataset_path(s.dataset),
            "--sys1cal-recalibration": s.recalibration,
        }
        return {name: path for name, path in found.items() if path is not None}

    def check(self) -> None:
        """Refuse, before any item runs, an output path that cannot hold the file or would destroy an input."""
        if self.settings.html is not None:
            from ..report.html import check_available

            check_available()
        inputs = {_key(path): name for name, path in self.inputs().items()}
        self._check_pytest_outputs(inputs)
        seen = {_key(path): name for name, (path, _) in self.pytest_outputs.items() if name != "--basetemp"}
        for name, path in self.files.items():
            key = _key(path)
            if key in seen:
                raise InputError(f"{name} {path}: the same file as {seen[key]}; give each report its own path")
            seen[key] = name
            clash = _clash(key, inputs)
            if clash:
                raise InputError(
                    f"{name} {path}: this file is also this run's {clash}, which writing the report would destroy; "
                    "write the report somewhere else"
                )
            _check_writable(name, path)

    def _check_pytest_outputs(self, inputs: dict[Path, str]) -> None:
        """pytest's outputs are outputs too: one that names an input (or, --basetemp, a folder holding one) would
        destroy it, as the plugin's own reports would, and is refused alike before anything is written."""
        for name, (path, what) in self.pytest_outputs.items():
            key = _key(path)
            if name == "--basetemp":
                inside = next(((k, n) for k, n in inputs.items() if k == key or k.is_relative_to(key)), None)
                if inside:
                    raise InputError(
                        f"--basetemp {path}: this run's {inside[1]} ({inside[0]}) is in it, and pytest empties that "
                        "folder for its temporary files; give --basetemp another folder"
                    )
                continue
            clash = _clash(key, inputs)
            if clash:
                raise InputError(
                    f"{name} {path}: this file is also this run's {clash}, which pytest would overwrite with {what}; "
                    f"give {name} another path"
                )

    def write(
        self, report: Report, baseline: Baseline | None, redactor: Redactor, advice: Sequence[str] = ()
    ) -> list[Line]:
        """Write the JSON and HTML reports and append the job summary (with `advice`, what to do after a failed
        gate, under the gates); one line per file written or not."""
        documents = self._documents(report, baseline)
        partial = "interrupted" in report.data
        lines: list[Line] = []
        done = 0
        try:
            for what, _, path, draw in documents:
                lines.append(self._write(what, path, draw, redactor, partial=partial))
                done += 1
            summary = os.environ.get("GITHUB_STEP_SUMMARY")
            if summary:
                lines += self._append_summary(Path(summary), report, redactor, advice)
        except KeyboardInterrupt as exc:
            self.interrupted = True
            why = f"interrupted ({signal_name(exc)}) while it was drawn"
            lines += self.not_written(why, [d[2] for d in documents[done:]])
        return [line for line in lines if line[0]]

    def not_written(self, why: str, paths: list[Path] | None = None) -> list[Line]:
        """A line for each output (or each of `paths`) that this run did not write, and why; what was at the
        path before is left as it was."""
        named = {path: name for name, path in self.files.items()}
        lines = []
        for path in self.files.values() if paths is None else paths:
            what = WHAT.get(named.get(path, ""), "HTML report")
            kept = f"; {path} left as it was" if path.exists() else ""
            lines.append((f"{what} NOT written to {path}: {why}{kept}", RED))
        return lines

    def _documents(self, report: Report, baseline: Baseline | None) -> list[Document]:
        from ..document import dumps

        documents: list[Document] = []
        if self.settings.report is not None:
            documents.append(("JSON report", "--sys1cal-report", self.settings.report, lambda: dumps(report.data)))
        if self.settings.html is not None:
            from ..report.html import render_html

            def page() -> str:
                return render_html(report, baseline.report if baseline else None)

            documents.append(("HTML report", "--sys1cal-html", self.settings.html, page))
        if self.settings.markdown is not None:
            from ..report.pr_comment import comment_markdown

            def comment() -> str:
                return comment_markdown(report, html=self.settings.html, environ=os.environ, workdir=Path.cwd())

            documents.append(("Markdown comment", "--sys1cal-markdown", self.settings.markdown, comment))
        return documents

    def _write(self, what: str, path: Path, draw: Callable[[], str], redactor: Redactor, *, partial: bool) -> Line:
        """Draw and write one file; a partial report goes beside a complete one rather than over it."""
        target, kept = path, ""
        # A pull-request comment speaks for the latest run, interrupted or not: it is replaced, never set beside.
        if partial and what != "Markdown comment" and _complete(path):
            target = beside(path)
            kept = f"; {path} holds a complete run's report and was left as it was"
            if _key(target) in {_key(p) for p in self.inputs().values()}:
                self.failed = True
                return (f"{what} NOT written: {target}, beside {path}, is one of this run's inputs{kept}", RED)
        # In HTML the marker is escaped (&lt;REDACTED&gt;): a bare <REDACTED> would be an unknown tag, unseen.
        text = (redactor.text if what == "JSON report" else redactor.markup)(draw())
        try:
            write_atomic(target, text)
        except OSError as exc:
            self.failed = True
            return (f"{what} NOT written to {target}: {exc.strerror or exc}", RED)
        label = f"{what} of this interrupted run" if partial else what
        return (f"{label} written to {target}{kept}", {"yellow": True} if kept else {})

    def _append_summary(self, path: Path, report: Report, redactor: Redactor, advice: Sequence[str] = ()) -> list[Line]:
        """On GitHub Actions, the tables and gates also go to the job's summary page, as Markdown, and after a
        failed gate what to do about it (the commands as code, so that Markdown leaves them as printed)."""
        from ..report.markdown import summary_markdown

        text = summary_markdown(report, html=self.settings.html, environ=os.environ, workdir=Path.cwd())
        if advice:
            text += "\n**What to do**\n\n" + "".join(f"- {_code_spans(line)}\n" for line in advice)
        text = redactor.markup(text)
        try:
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            self.failed = True
            return [(f"job summary NOT appended to {path}: {exc.strerror or exc}", {"red": True})]
        return []


def beside(path: Path) -> Path:
    """Where the report of an interrupted run goes when a complete one is at `path`: report.interrupted.json."""
    return path.with_name(f"{path.stem}.interrupted{path.suffix}")


def _complete(path: Path) -> bool:
    """Whether `path` holds a report (JSON or HTML) of a run that went through its selection."""
    from ..report.html import INTERRUPTED_MARK

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if path.suffix.lower() in (".html", ".htm") or text.lstrip().startswith("<"):
        return "<title>Sys1Cal calibration" in text and f'class="{INTERRUPTED_MARK}"' not in text
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("schema") == REPORT_SCHEMA and "interrupted" not in data


def _clash(key: Path, inputs: Mapping[Path, str]) -> str | None:
    """The input an output at `key` would destroy: that very file, or anything under the cassette root."""
    return inputs.get(key) or next(
        (n for k, n in inputs.items() if n == "--sys1cal-cassettes" and key.is_relative_to(k)), None
    )


def _dataset_path(spec: str) -> Path | None:
    from ..dataset import resolve_path

    try:
        return resolve_path(spec)[1]
    except InputError:  # a dataset that cannot be found is refused with its own message, right after
        return None


def _key(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _check_writable(name: str, path: Path) -> None:
    """A file can be written at `path`: not a folder, nor a read-only file, and its folder (or the nearest
    that exists, which the write would create the rest under) takes a new file."""
    if path.is_dir():
        raise InputError(f"{name} {path}: a folder, not a file; name the file to write, e.g. {path / 'report.json'}")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is None or not parent.is_dir():
        raise InputError(f"{name} {path}: {parent} is a file, not a folder; write the report in a folder")
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"{name} {path}: the file is read-only; make it writable or write the report elsewhere")
    why = cannot_create_in(parent, path.name)
    if why:
        raise InputError(f"{name} {path}: cannot write in {parent} ({why}); write the report elsewhere")


def _code_spans(text: str) -> str:
    """An advice line for Markdown: each command in it (from `pytest --sys1cal` or `python -m` up to the next
    ", then ", "; ", " (" or the end of the line) as a code span, so that `*`, `_` and `<` in paths and options
    stay as printed."""
    import re

    def span(match: re.Match[str]) -> str:
        command = match.group(0)
        fence = "``" if "`" in command else "`"
        return f"{fence}{command}{fence}"

    return re.sub(r"(?:pytest --sys1cal|python -m pytest_sys1cal)(?:(?!, then |; | \().)*", span, text)
