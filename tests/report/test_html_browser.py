"""The HTML report in a real browser: headless Chromium opens the file from disk, renders every figure, logs
no console error, requests nothing, and shows a page that is not blank (tests/browser.py drives it).

Skipped, saying why, where Chromium (Debian's `chromium` package; .ci/run installs it), websocket-client
or matplotlib (the test extra) is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import CHROMIUM, needs_chromium, not_blank, open_page
from tests.reports import golden, shifted_baseline, with_comparison

pytest.importorskip("matplotlib", reason="the HTML report needs the html extra: pip install 'pytest-sys1cal[html]'")
pytest.importorskip("websocket", reason="the browser is driven with websocket-client (the test extra)")
# Drives headless Chromium.
pytestmark = [pytest.mark.e2e, needs_chromium]

# The semif run asked the swapped Choice, and the baseline adds the comparison: every figure there is.
EVERY_FIGURE = [
    "transfer",
    "reliability",
    "score",
    "score-choice",
    "sensitivity",
    "groups",
    "option-swap",
    "readout",
    "why",
    "family-delta",
]


def test_chromium_renders_every_figure_without_errors_or_requests(tmp_path: Path) -> None:
    from pytest_sys1cal.report.html import write_html
    from pytest_sys1cal.run_report import Report

    report = golden("semif")
    baseline = shifted_baseline(report, version="semif-base")
    page_file = tmp_path / "report.html"
    write_html(page_file, Report.read_back(with_comparison(report, baseline)), baseline)

    page = open_page(CHROMIUM, page_file)
    (tmp_path / "screenshot.png").write_bytes(page.screenshot)  # kept with the test's tmp_path, to look at

    assert page.title == "Sys1Cal calibration: semif smollm2-135m-instruct-q4_1"
    assert page.console_errors == [] and page.exceptions == [] and page.log_errors == []
    assert page.requests == [page.url], "the page asked for something besides itself"
    assert [f["id"] for f in page.figures] == [f"fig-{key}" for key in EVERY_FIGURE]
    for figure in page.figures:
        # Laid out at a readable size, drawn (marks are the SVG's paths and point markers), titled and captioned.
        assert figure["width"] > 400 and figure["height"] > 200, figure
        assert figure["marks"] > 40, figure
        assert figure["title"] and len(figure["caption"]) > 40, figure
    inked, colours = not_blank(page.screenshot)
    assert inked > 0.05 and colours > 200, f"the screenshot looks blank: {inked:.1%} inked, {colours} colours"
