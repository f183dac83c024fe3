"""The HTML report (report/html.py and the figures): drawn from a report alone, self-contained, every figure
with its title and caption, every table, unique ids, and the same bytes for the same report."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib", reason="the HTML report needs the html extra: pip install 'pytest-sys1cal[html]'")

from pytest_sys1cal.report.html import _header, render_html, table_html  # noqa: E402
from pytest_sys1cal.report.paper_tables import build_tables  # noqa: E402
from pytest_sys1cal.report.table import Table  # noqa: E402
from pytest_sys1cal.run_report import Report  # noqa: E402
from tests.reports import golden, shifted_baseline, with_comparison  # noqa: E402
from tests.runs import REPO

# Draws every figure of whole runs with matplotlib.
pytestmark = pytest.mark.slow

EVERY_RUN = ["transfer", "reliability", "score", "score-choice", "sensitivity", "groups", "readout", "why"]


@pytest.fixture(scope="module")
def jev_page() -> str:
    return render_html(Report.read_back(golden("jev")))


@pytest.fixture(scope="module")
def compared() -> tuple[dict, dict]:
    """The semif run (it asked the swapped Choice) against a baseline made from it."""
    report = golden("semif")
    baseline = shifted_baseline(report, version="semif-base")
    return with_comparison(report, baseline), baseline


@pytest.fixture(scope="module")
def compared_page(compared: tuple[dict, dict]) -> str:
    return render_html(Report.read_back(compared[0]), compared[1])


def figures(page: str) -> dict[str, str]:
    return dict(re.findall(r'<figure id="fig-([\w-]+)">(.*?)</figure>', page, re.S))


def test_every_figure_of_a_plain_run_with_title_axes_and_caption(jev_page: str) -> None:
    found = figures(jev_page)
    assert list(found) == EVERY_RUN  # no option swap (not measured on these cassettes), no baseline figure
    for key, body in found.items():
        assert re.search(r"<h3>[^<]+</h3>", body), key
        assert re.search(r"<figcaption>[^<]{40,}</figcaption>", body), key
        assert body.count("<svg ") == 1 and body.count("</svg>") == 1, key
        assert f'id="svg-{key}"' in body and 'role="img"' in body, key


def test_a_comparison_adds_the_option_swap_overlays_and_the_family_delta(compared_page: str) -> None:
    found = figures(compared_page)
    assert list(found) == [*EVERY_RUN[:6], "option-swap", "readout", "why", "family-delta"]
    assert "baseline" in found["transfer"] and "baseline" in found["reliability"]  # the overlays' legends
    assert "Upgrade comparison by family: Δ mean OVL" in compared_page  # the table beside the verdicts
    assert "Moved most: " in compared_page


def test_the_page_holds_the_header_the_gates_and_every_table(compared: tuple[dict, dict], compared_page: str) -> None:
    report, _ = compared
    assert "<title>Sys1Cal calibration: semif smollm2-135m-instruct-q4_1</title>" in compared_page
    assert report["dataset"]["sha256"] in compared_page
    assert "gate(s) FAILED" in compared_page or "every gate in force passed" in compared_page
    assert "<caption>Gates</caption>" in compared_page
    assert "<caption>Upgrade comparison against the baseline report (paired by rendering)</caption>" in compared_page
    for table in build_tables(report):
        assert f"<caption>{table.title.replace('&', '&amp;')}</caption>" in compared_page
    assert "<caption>Table 1 by family</caption>" in compared_page
    for gate in report["gates"]:
        assert f"<td>{gate['name']}</td>" in compared_page


def test_the_page_asks_for_nothing_outside_itself(compared_page: str) -> None:
    assert 'http-equiv="Content-Security-Policy" content="default-src \'none\'' in compared_page
    for tag in ("<script", "<link", "<img", "<iframe", "<object", "<embed", "@import", "<!DOCTYPE svg", "<?xml"):
        assert tag not in compared_page, tag
    assert not re.search(r"\ssrc=", compared_page)
    assert set(re.findall(r'\bhref="(.)', compared_page)) == {"#"}
    assert set(re.findall(r"url\((.)", compared_page)) == {"#"}
    # The only URLs left are XML namespace names, which are never fetched.
    urls = set(re.findall(r"https?://[^\s\"')<]+", compared_page))
    assert urls == {"http://www.w3.org/1999/xlink", "http://www.w3.org/2000/svg"}


def test_ids_are_unique_and_every_reference_resolves(compared_page: str) -> None:
    ids = re.findall(r'\bid="([^"]+)"', compared_page)
    assert len(ids) == len(set(ids))
    references = set(re.findall(r'href="#([^"]+)"', compared_page)) | set(re.findall(r"url\(#([^)]+)\)", compared_page))
    assert references <= set(ids)


def test_text_from_the_report_is_escaped() -> None:
    report = golden("jev")
    report["model"] = {**report["model"], "version": "<b>1.0</b> & co"}
    header = "".join(_header(Report.read_back(report), None, "t"))
    assert "<b>1.0</b>" not in header and "&lt;b&gt;1.0&lt;/b&gt; &amp; co" in header
    cell = table_html(Table(title="<T>", columns=["a|b"], rows=[["<x>"], ["FAILED"]], notes=["1 < 2"]))
    assert "<caption>&lt;T&gt;</caption>" in cell and "<td>&lt;x&gt;</td>" in cell and "1 &lt; 2" in cell
    assert '<td class="v-FAILED">FAILED</td>' in cell


@pytest.mark.e2e
def test_the_same_report_gives_the_same_bytes_in_any_process(
    compared: tuple[dict, dict], compared_page: str, jev_page: str
) -> None:
    assert render_html(Report.read_back(compared[0]), compared[1]) == compared_page
    code = (
        "import hashlib; from tests.reports import golden; from pytest_sys1cal.report.html import render_html; "
        "from pytest_sys1cal.run_report import Report; "
        "print(hashlib.sha256(render_html(Report.read_back(golden('jev'))).encode()).hexdigest())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == hashlib.sha256(jev_page.encode()).hexdigest()


def test_no_date_creator_or_random_id_in_the_figures(compared_page: str) -> None:
    assert "<dc:date>" not in compared_page and "Matplotlib v" not in compared_page
    assert "<metadata>" not in compared_page


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        ({}, []),  # every rendering failed: a page with the tables and no figure
        ({"choice": 0.5}, ["transfer", "reliability", "sensitivity", "groups", "readout", "why"]),  # Choice alone
        ({"noul": 0.3, "choice": 0.5, "mu": 0.4}, EVERY_RUN),
    ],
)
def test_a_thin_run_draws_what_it_can(answers: dict, expected: list[str]) -> None:
    from pytest_sys1cal.analysis import analyze
    from pytest_sys1cal.document import report_document
    from tests.analysis.conftest import build_item

    error = None if answers else "server error"
    items = [
        build_item(f"bayes__{j}", f"r{r}", 0.3 + 0.2 * j, error=error, **answers) for j in range(2) for r in range(2)
    ]
    model = {"name": "m", "version": "v", "source": "recorded", "server_model": None}
    dataset = {"name": "d", "sha256": "0" * 64, "renderings": 4, "latent_problems": 2}
    report = report_document(
        model=model, dataset=dataset, repeats=1, seed=0, analysis=analyze(items, bootstrap=0), gates=[]
    )
    page = render_html(Report.read_back(report))
    assert list(figures(page)) == expected
    assert ("No figure: no rendering was measured" in page) == (not expected)
