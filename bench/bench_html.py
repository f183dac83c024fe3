"""The HTML report's figures, drawn as the plugin draws them (each figure once, by the SVG canvas) and as
matplotlib's savefig would (a layout pass with rendering off, then the drawing), side by side.

    python bench/bench_html.py [--rounds N]

The input is the bundled reference set's JSON report (a replay of cassettes/jev/jev-1.13.0, written to a
temporary folder first). Rounds alternate the two ways in one process, so machine noise hits both alike; it
prints each way's median seconds for all the figures, their ratio, and whether the SVG bytes are the same.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import matplotlib

from pytest_sys1cal.gates.rows import summarize
from pytest_sys1cal.report import figures
from pytest_sys1cal.report.figure_registry import SPECS
from pytest_sys1cal.report.figures import Inputs, draw_all

REPO = Path(__file__).resolve().parents[1]


def savefig_svg(figure: Any, key: str) -> str:
    buffer = io.StringIO()
    with matplotlib.rc_context(cast(Any, {**figures.STYLE, "svg.id": key})):
        figure.savefig(buffer, format="svg", metadata=figures.METADATA)
    return figures.numbered_ids(buffer.getvalue())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.json"
        run = [sys.executable, "-m", "pytest", "--sys1cal", "-q", "-p", "no:cacheprovider", f"--sys1cal-report={path}"]
        subprocess.run(run, cwd=folder, check=True, capture_output=True)
        report = json.loads(path.read_text(encoding="utf-8"))
    inputs = Inputs.of(report, summarize([]))
    ways = {"once (the plugin)": figures.to_svg, "savefig": savefig_svg}
    times: dict[str, list[float]] = {name: [] for name in ways}
    svgs: dict[str, str] = {}
    plugin_way = figures.to_svg
    for _ in range(args.rounds):
        for name, way in ways.items():
            figures.to_svg = way
            started = time.perf_counter()
            drawn = draw_all(SPECS, inputs)
            times[name].append(time.perf_counter() - started)
            svgs[name] = "".join(figure.svg for figure in drawn)
    figures.to_svg = plugin_way
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        print(f"{name:>18}: {value:.2f} s for {len(drawn)} figures (median of {args.rounds})")
    print(f"ratio once / savefig: {medians['once (the plugin)'] / medians['savefig']:.2f}")
    print(f"same SVG bytes: {len(set(svgs.values())) == 1}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
