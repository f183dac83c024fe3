"""`python -m pytest_sys1cal trend --model jev`: every recorded version of a model replayed offline, in version
order, side by side (trend.py), printed as tables; ``--markdown`` and ``--html`` write them to files too.
A progress line goes to stderr. Every usage error is one line on stderr and exit status 4. docs/trend.md."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import NoReturn, TextIO

from ..dataset import load_dataset
from ..errors import EXIT_INPUT, InputError
from ..files import cannot_create_in, write_atomic

THRESHOLDS_FILE = "thresholds.yaml"
INSTALL = "pip install 'pytest-sys1cal[html]'"


class TrendError(InputError):
    """A usage error of the trend command (an option, a path), as one line."""


def _usage_error(message: str) -> NoReturn:
    print(f"error: trend: {message}", file=sys.stderr)
    raise SystemExit(EXIT_INPUT)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.error = _usage_error  # type: ignore[method-assign]  # one line and exit 4, like every usage error
    parser.add_argument("--model", default="jev", help="the model whose versions to replay (default jev)")
    parser.add_argument(
        "--cassettes", type=Path, default=Path("cassettes"), help="cassette root (default: ./cassettes)"
    )
    parser.add_argument(
        "--dataset", default="sys1cal-v1", help="a Sys1Cal JSONL file or a bundled name (default sys1cal-v1)"
    )
    parser.add_argument(
        "--thresholds",
        type=Path,
        help=f"gate file for each version's verdict (default: ./{THRESHOLDS_FILE} if present, else no gates)",
    )
    parser.add_argument("--seed", default="0", help="seed of every resampling (default 0)")
    parser.add_argument("--html", type=Path, metavar="PATH", help="also write the tables and figures as HTML")
    parser.add_argument("--markdown", type=Path, metavar="PATH", help="also write the tables as Markdown")


def main(args: argparse.Namespace) -> int:
    from ..versions.trend import TrendInputs, build_trend

    try:
        inputs = TrendInputs(
            model=args.model,
            root=args.cassettes,
            dataset=load_dataset(args.dataset),
            thresholds=_thresholds(args.thresholds),
            seed=_seed(args.seed),
            environ=os.environ,
        )
        _check_outputs(args)
        progress = _Progress(sys.stderr)
        trend = build_trend(inputs, started=progress.started, progress=progress.update)
        progress.finish()
    except InputError as exc:
        print(f"error: trend: {exc}", file=sys.stderr)
        return EXIT_INPUT
    from ..report.trend_text import trend_markdown, trend_text

    sys.stdout.write(trend_text(trend))
    if args.markdown is not None:
        write_atomic(args.markdown, trend_markdown(trend))
        print(f"Markdown written to {args.markdown}")
    if args.html is not None:
        from ..report.trend_html import render_trend_html

        write_atomic(args.html, render_trend_html(trend))
        print(f"HTML written to {args.html}")
    return 0


def _seed(text: str) -> int:
    if not text.isdigit():
        raise TrendError(f"--seed {text}: expected a whole number ≥ 0")
    return int(text)


def _thresholds(given: Path | None) -> Path | None:
    if given is None:
        default = Path(THRESHOLDS_FILE)
        return default if default.is_file() else None
    if not given.is_file():
        raise TrendError(f"--thresholds {given}: no such file")
    return given


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before replaying anything, an output that cannot be written."""
    if args.html is not None and importlib.util.find_spec("matplotlib") is None:
        raise TrendError(f"--html needs matplotlib: {INSTALL}")
    for flag, path in (("--markdown", args.markdown), ("--html", args.html)):
        if path is None:
            continue
        if path.is_dir():
            raise TrendError(f"{flag} {path}: a folder, not a file; name the file to write")
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir() or cannot_create_in(parent, path.name):
            raise TrendError(f"{flag} {path}: cannot write in {parent} (no such folder, or not writable)")
    if args.html is not None and args.html == args.markdown:
        raise TrendError(f"--html and --markdown are the same file {args.html}; give each its own")


def _replayed(done: int, total: int, failed: int) -> str:
    """ "replayed 30/365 renderings (335 could not be: no cassette or a damaged one)": true to the folder."""
    line = f"replayed {done - failed}/{total} renderings"
    return f"{line} ({failed} could not be: no cassette or a damaged one)" if failed else line


class _Progress:
    """One progress line on stderr: rewritten in place on a terminal, one line per version otherwise."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.live = stream.isatty()
        self.label = ""
        self.began = self.shown = time.perf_counter()
        self.last = (0, 0, 0)

    def started(self, version: str, index: int, count: int) -> None:
        self._close_line()
        self.label = f"trend: {version} ({index} of {count})"
        self.began = time.perf_counter()

    def update(self, done: int, total: int, failed: int = 0) -> None:
        self.last = (done, total, failed)
        now = time.perf_counter()
        if self.live and (now - self.shown > 0.1 or done == total):
            self.shown = now
            self.stream.write(f"\r{self.label}: {_replayed(done, total, failed)}")
            self.stream.flush()

    def _close_line(self) -> None:
        """The finished version's line: what was replayed and how long it took with its analysis."""
        if not self.label:
            return
        done, total, failed = self.last
        seconds = time.perf_counter() - self.began
        what = f"{_replayed(done, total, failed)} and analysed" if total else "not replayed"
        self.stream.write(f"{chr(13) if self.live else ''}{self.label}: {what}, {seconds:.1f} s\n")
        self.stream.flush()
        self.last = (0, 0, 0)

    def finish(self) -> None:
        self._close_line()
