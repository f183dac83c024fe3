"""`python -m pytest_sys1cal contamination PUBLIC.json FRESH.json`: the options, reading the two reports (and
hashing the bundled public file, to know a report of it), printing the check as text or JSON, and the exit
status (2 on an unusable input, 1 with --fail-if-suspicious when a primitive is suspicious)."""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from ..analysis.contamination import DEFAULT_STRATA, check_contamination
from ..analysis.contamination_sides import PUBLIC_DATASET, ContaminationError
from ..dataset import DatasetError, resolve_path
from ..defaults import UPGRADE_RESAMPLES
from ..document import ReportError, dumps, read_report
from ..errors import EXIT_INPUT
from ..report.contamination_text import format_check


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("public", type=Path, metavar="PUBLIC.json", help="JSON report of the model on the public set")
    parser.add_argument("fresh", type=Path, metavar="FRESH.json", help="JSON report of the same model on a fresh set")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument(
        "--resamples",
        type=int,
        default=UPGRADE_RESAMPLES,
        help=f"bootstrap resamples (default {UPGRADE_RESAMPLES})",
    )
    parser.add_argument("--level", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    parser.add_argument(
        "--stratify",
        default=DEFAULT_STRATA,
        metavar="KEYS",
        help="reweight the fresh set to the public mix of these strata: names from family, band (of p*), "
        f"representation joined by '+', or 'none' (default {DEFAULT_STRATA})",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        metavar="NAME",
        help="leave a family, representation or family:representation out of both reports (repeatable); "
        "'none' keeps everything. Default: the public file's leaking renderings (prose, sequential_bayes) "
        "when PUBLIC.json is a report of the bundled sys1cal-v1",
    )
    parser.add_argument(
        "--margin", type=float, default=0.0, help="public advantage that must be exceeded to flag it (default 0)"
    )
    parser.add_argument(
        "--ignore-repeats", action="store_true", help="compare reports with different repeat counts anyway"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of text")
    parser.add_argument("--fail-if-suspicious", action="store_true", help="exit 1 when any primitive is suspicious")


def bundled_public_sha() -> str | None:
    """The sha256 of the bundled public file (sys1cal-v1); None when this installation lacks it."""
    try:
        _, path = resolve_path(PUBLIC_DATASET)
    except DatasetError:
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(args: argparse.Namespace) -> int:
    try:
        public, fresh = read_report(args.public), read_report(args.fresh)
        result = check_contamination(
            public,
            fresh,
            seed=args.seed,
            resamples=args.resamples,
            level=args.level,
            stratify=args.stratify,
            exclude=args.exclude,
            margin=args.margin,
            ignore_repeats=args.ignore_repeats,
            bundled_sha256=bundled_public_sha(),
        )
    except (ReportError, ContaminationError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    if args.json:
        sys.stdout.write(dumps(result))  # the reports' JSON style: sorted keys, indent 2, UTF-8, final newline
    else:
        print(format_check(result))
    return 1 if args.fail_if_suspicious and result["suspicious"] else 0
