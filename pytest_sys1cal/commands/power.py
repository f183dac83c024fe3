"""`python -m pytest_sys1cal power REPORT.json --drop 0.02`: the options, reading the reports, printing the
plan as text or JSON, and the exit status (2 on an unusable report or option)."""

from __future__ import annotations

import argparse
import sys

from ..analysis.power import DEFAULT_SIGMA_DELTA, DEFAULT_SIGMA_W, DESIGNS, PowerError, plan_power
from ..argtypes import open_probability
from ..document import ReportError, dumps, read_report
from ..errors import EXIT_INPUT
from ..report.power_text import format_plan
from ..vocabulary import PRIMITIVES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", metavar="REPORT.json", help="a JSON report written by --sys1cal-report")
    parser.add_argument(
        "--drop", type=open_probability, required=True, help="the drop in mean OVL to detect, e.g. 0.02"
    )
    parser.add_argument("--alpha", type=open_probability, default=0.05, help="one-sided level (default 0.05)")
    parser.add_argument("--power", type=open_probability, default=0.8, help="power (default 0.8)")
    parser.add_argument(
        "--primitive", choices=PRIMITIVES, default="choice", help="which primitive's mean OVL (default choice)"
    )
    parser.add_argument(
        "--design",
        choices=DESIGNS,
        default="paired",
        help="paired: upgrade gate on the same renderings (default); unpaired: this set against a fresh one",
    )
    parser.add_argument(
        "--sigma-w", type=float, help=f"repeat noise σ_w to assume (default: measured, else {DEFAULT_SIGMA_W})"
    )
    parser.add_argument(
        "--sigma-delta",
        type=float,
        help=f"σ_Δ of the paired design (default: from --baseline, else {DEFAULT_SIGMA_DELTA})",
    )
    parser.add_argument(
        "--baseline", metavar="OTHER.json", help="a report of another run on the same dataset: measures σ_Δ and ρ_Δ"
    )
    parser.add_argument(
        "--renderings-per-problem",
        type=float,
        help="renderings per latent problem of the planned dataset (default: the report's)",
    )
    parser.add_argument("--json", action="store_true", help="print the plan as JSON instead of text")


def main(args: argparse.Namespace) -> int:
    try:
        report = read_report(args.report)
        baseline = read_report(args.baseline) if args.baseline else None
        result = plan_power(
            report,
            drop=args.drop,
            primitive=args.primitive,
            alpha=args.alpha,
            power=args.power,
            design=args.design,
            sigma_w=args.sigma_w,
            sigma_delta=args.sigma_delta,
            baseline=baseline,
            renderings_per_problem=args.renderings_per_problem,
        )
    except (ReportError, PowerError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    if args.json:
        sys.stdout.write(dumps(result))  # the reports' JSON style: sorted keys, indent 2, UTF-8, final newline
    else:
        print(format_plan(result))
    return 0
