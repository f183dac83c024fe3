"""`python -m pytest_sys1cal html REPORT.json`: the HTML report of a saved JSON report (the page that
--sys1cal-html wrote for that run, byte for byte)."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from ..document import ReportError, read_report
from ..errors import EXIT_INPUT
from ..report.html import INSTALL, HtmlUnavailable, check_available, write_html
from ..run_report import Report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", metavar="REPORT.json", help="a JSON report written by --sys1cal-report")
    parser.add_argument(
        "--baseline", metavar="OTHER.json", help="the run's --sys1cal-baseline report: overlaid in the figures"
    )
    parser.add_argument("-o", "--out", type=Path, default=Path("report.html"), help="where to write (report.html)")


def main(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("matplotlib") is None:  # this command's own words, not the pytest option's
        print(f"error: html: drawing the HTML report needs matplotlib: {INSTALL}", file=sys.stderr)
        return EXIT_INPUT
    try:
        check_available()
        report = read_report(args.report)
        baseline = read_report(args.baseline) if args.baseline else None
    except (ReportError, HtmlUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    write_html(args.out, Report.read_back(report), baseline)
    print(f"HTML report written to {args.out}")
    return 0
