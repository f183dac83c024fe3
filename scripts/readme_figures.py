"""Draw the README's figures of the bundled Jev run: docs/figures/jev-transfer.svg and jev-score-choice.svg.

    python scripts/readme_figures.py            # replay the bundled cassettes offline, then draw
    python scripts/readme_figures.py --report R # draw from a JSON report of that run instead

Replays cassettes/jev/jev-1.13.0 (`pytest --sys1cal --model jev --sys1cal-report=...`, no network) and
draws the probability-transfer and Score→Choice figures with the HTML report's own code
(pytest_sys1cal/report/figure_registry.py). Needs the html extra. Rerunning writes identical files with the
same matplotlib, whose version each file names; tests/test_readme_figures.py fails when they are stale.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "figures"
# README file name → the HTML report's figure key.
README_FIGURES = {"jev-transfer.svg": "transfer", "jev-score-choice.svg": "score-choice"}
STAMP = "<!-- scripts/readme_figures.py: the bundled Jev run (cassettes/jev/jev-1.13.0), matplotlib {version} -->"


def draw(report: Mapping[str, Any]) -> dict[str, str]:
    """File name → SVG text, stamped with the matplotlib version that drew it (its bytes depend on it)."""
    sys.path.insert(0, str(ROOT))
    import matplotlib

    from pytest_sys1cal.report.figure_registry import SPECS
    from pytest_sys1cal.report.figures import Inputs, draw_all
    from pytest_sys1cal.run_report import Report

    specs = [spec for spec in SPECS if spec.key in README_FIGURES.values()]
    inputs = Inputs.of(report, Report.read_back(report).gates)
    drawn = {figure.key: figure.svg for figure in draw_all(specs, inputs)}
    stamp = STAMP.format(version=matplotlib.__version__)
    out = {}
    for name, key in README_FIGURES.items():
        declaration, _, rest = drawn[key].partition("\n")
        out[name] = f"{declaration}\n{stamp}\n{rest}"
    return out


def replay() -> dict[str, Any]:
    """The bundled Jev run's JSON report, from an offline replay of its cassettes."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [sys.executable, "-m", "pytest", "--sys1cal", "--model=jev", f"--sys1cal-report={report}"]
        subprocess.run([*command, "-q", "-p", "no:cacheprovider"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        return json.loads(report.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, help="a JSON report of the bundled Jev run (default: replay it)")
    args = parser.parse_args(argv)
    report = json.loads(args.report.read_text(encoding="utf-8")) if args.report else replay()
    FIGURES.mkdir(parents=True, exist_ok=True)
    for name, svg in draw(report).items():
        (FIGURES / name).write_text(svg, encoding="utf-8", newline="\n")
        print(f"wrote {(FIGURES / name).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
