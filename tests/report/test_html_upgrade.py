"""The HTML report of an upgrade run reads like a review: real runs (a degraded and a better copy of the bundled
Jev set against jev-1.13.0, as subprocesses writing real files), opened in headless Chromium where it is
installed: the verdict banner above everything, the absolute gates' line beside it, every paired rendering in a
static table sorted by D, the paired-differences histogram with Δ̂ and the margins, the by-family figure's
overall row; and, drawn directly, legends off the data and an exact-zero swap shift drawn as zero."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser import CHROMIUM, needs_chromium, open_page
from tests.reports import golden, shifted_baseline
from tests.runs import CHEAP, QUIET, REPO
from tests.version_roots import BETTER, NEW, OLD, better_version, two_versions

pytest.importorskip("matplotlib", reason="the HTML report needs the html extra: pip install 'pytest-sys1cal[html]'")
PROBES = {
    # Top to bottom, what a reviewer sees first: the first elements of the page and where they sit.
    "order": "JSON.stringify([...document.querySelectorAll('header > *')].slice(0, 3).map(e => e.id || e.tagName))",
    "banner": "JSON.stringify((() => { const b = document.getElementById('upgrade-verdict').getBoundingClientRect();"
    " return {top: b.top + scrollY, height: b.height, text: document.getElementById('upgrade-verdict').innerText}; })())",
    "absolute": "JSON.stringify(document.getElementById('absolute-gates').innerText)",
    "rows": "JSON.stringify([...document.querySelectorAll('#renderings tbody tr')].map(r =>"
    " [...r.children].map(c => c.innerText)))",
    "scripts": "JSON.stringify(document.scripts.length)",
}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The HTML reports of the two upgrade runs, FAILED (jev-1.14.0, degraded) and passed (jev-1.13.1, better)."""
    work = tmp_path_factory.mktemp("html-upgrade")
    cassettes = two_versions(work / "cassettes")
    better_version(cassettes)
    out = {}
    for name, version in (("failed", NEW), ("passed", BETTER)):
        page = work / f"{name}.html"
        done = subprocess.run(
            [
                sys.executable, "-m", "pytest", "--sys1cal", f"--sys1cal-cassettes={cassettes}",
                f"--sys1cal-thresholds={REPO / 'thresholds.yaml'}", f"--sys1cal-model-version={version}",
                f"--sys1cal-baseline={OLD}", f"--sys1cal-html={page}", *QUIET, *CHEAP, "-q",
            ],
            cwd=work, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 1, done.stdout[-3000:]  # absolute gates fail in both runs: exit status as before
        out[name] = page
    return out


@pytest.mark.e2e  # its pages come from two pytest processes (the `pages` fixture)
@needs_chromium
@pytest.mark.parametrize(
    ("kind", "head", "absolute"),
    [
        ("failed", "✗ Upgrade jev-1.13.0 → jev-1.14.0, 10-call mean: FAILED", "Absolute gates: 10 of 21 FAILED"),
        ("passed", "✓ Upgrade jev-1.13.0 → jev-1.13.1, 10-call mean: passed", "Absolute gates: 2 of 21 FAILED"),
    ],
)
def test_the_verdict_is_what_a_reviewer_sees_first(
    pages: dict[str, Path], tmp_path: Path, kind: str, head: str, absolute: str
) -> None:
    assert CHROMIUM is not None
    page = open_page(CHROMIUM, pages[kind], probes=PROBES)
    (tmp_path / f"upgrade-{kind}.png").write_bytes(page.screenshot)  # kept with the test's tmp_path, to look at
    assert page.console_errors == [] and page.exceptions == [] and page.log_errors == []
    assert page.requests == [page.url], "the page asked for something besides itself"
    probes = page.probes
    assert probes["order"] == ["upgrade-verdict", "absolute-gates", "H1"]  # the verdict above everything
    assert probes["banner"]["top"] < 60 and probes["banner"]["text"].startswith(head)
    assert "Baseline jev jev-1.13.0 (reconstructed cassettes): the version folder " in probes["banner"]["text"]
    assert probes["absolute"].startswith(absolute)
    assert probes["scripts"] == 0
    # Every paired rendering, in a static table sorted by the lowest D of the row.
    rows = probes["rows"]
    assert len(rows) == 365 and rows[0][1].startswith("sys1cal::jev[")
    lowest = [min(float(cell.splitlines()[-1]) for cell in row[4:]) for row in rows]  # "base → new" over D
    assert lowest == sorted(lowest)
    figures = [f["id"] for f in page.figures]
    # Drawn in the upgrade section, under the verdict: why it moved, then the paired differences and the families.
    assert figures[:3] == ["fig-why", "fig-paired-d", "fig-family-delta"]


@pytest.mark.e2e  # its pages come from two pytest processes (the `pages` fixture)
def test_the_page_keeps_its_content_security_policy(pages: dict[str, Path]) -> None:
    html = pages["failed"].read_text(encoding="utf-8")
    assert "default-src 'none'; style-src 'unsafe-inline'; img-src data:" in html and "<script" not in html


# ------------------------------------------------------------------------------------------ the figures, drawn


def figure_of(key: str, report: dict, baseline: dict | None = None):  # noqa: ANN201 - a matplotlib Figure
    from pytest_sys1cal.report.figure_registry import SPECS
    from pytest_sys1cal.report.figures import Inputs
    from pytest_sys1cal.run_report import Report

    spec = next(s for s in SPECS if s.key == key)
    return spec.draw(Inputs.of(report, Report.read_back(report).gates, baseline))


def test_an_exact_zero_swap_shift_is_drawn_as_zero() -> None:
    report = golden("semif")
    for item in report["items"]:  # an order-blind model: every shift exactly 0
        item["p_choice_swapped"] = item["p_choice"]
    figure = figure_of("option-swap", report)
    hist = figure.axes[1]
    (bar,) = [patch for patch in hist.patches if patch.get_height() > 0]
    assert bar.get_height() == 365
    assert bar.get_x() == pytest.approx(-bar.get_width() / 2)  # centred on 0, not [0, 0.05)
    assert "365 with shift exactly 0" in hist.get_title()


def test_the_baseline_legend_sits_off_the_data() -> None:
    report = golden("jev")
    baseline = shifted_baseline(report)
    for key in ("transfer", "reliability"):
        figure = figure_of(key, report, baseline)
        assert all(ax.get_legend() is None for ax in figure.axes), key  # no legend on a panel
        (legend,) = figure.legends
        assert [text.get_text() for text in legend.get_texts()] == ["baseline", "this run"]


@pytest.mark.e2e  # its pages come from two pytest processes (the `pages` fixture)
def test_the_by_family_figure_has_the_overall_row_the_verdicts_read(pages: dict[str, Path]) -> None:
    import json

    report_path = pages["failed"].with_suffix(".json")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--sys1cal", f"--sys1cal-cassettes={pages['failed'].parent / 'cassettes'}",
         f"--sys1cal-model-version={NEW}", f"--sys1cal-baseline={OLD}", f"--sys1cal-report={report_path}",
         *QUIET, *CHEAP, "-q"],
        cwd=pages["failed"].parent, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:]  # no thresholds file: the upgrade gate alone, FAILED
    report = json.loads(report_path.read_text(encoding="utf-8"))
    figure = figure_of("family-delta", report)
    ax = figure.axes[0]
    labels = [tick.get_text() for tick in ax.get_yticklabels()]
    assert labels[-1] == "all: the gate's Δ"  # on top
    top = len(labels) - 1
    drawn = [tuple(xy) for c in ax.collections for xy in c.get_offsets()]
    for prim, row in report["comparison"]["primitives"].items():
        assert any(x == row["difference"] and abs(y - top) < 0.5 for x, y in drawn), prim
