"""What a reviewer sees of why a version moved (issue 38), in a real headless Chromium (tests/browser.py): the HTML
report's triptych (reliability with its consistency band, ROC, MCB against DSC with both versions) and the
pull-request comment with its diagnosis, rendered as GitHub renders Markdown (CommonMark with tables, here by
markdown-it). Both are screenshotted (kept in the test's tmp_path, to look at) and checked: no console error, no
request, drawn, and the diagnosis right under the verdict.

Skipped, saying why, where Chromium, websocket-client or matplotlib is missing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from html import escape
from pathlib import Path

import pytest

from tests.browser import CHROMIUM, needs_chromium, not_blank, open_page
from tests.field import environ
from tests.runs import QUIET, REAL_ANALYSIS, THRESHOLDS
from tests.version_roots import JEV, OLD
from tests.why_copies import distorted

pytest.importorskip("matplotlib", reason="the HTML report needs the html extra: pip install 'pytest-sys1cal[html]'")
pytest.importorskip("websocket", reason="the browser is driven with websocket-client (the test extra)")
pytestmark = [pytest.mark.e2e, needs_chromium]
DISTORTED = "jev-1.14.0"
WHY_JS = """JSON.stringify({
  lines: [...document.querySelectorAll('#upgrade-verdict .diagnosis')].map(p => p.textContent),
  links: [...document.querySelectorAll('#regressed a')].map(a => [a.getAttribute('href'),
          !!document.getElementById(a.getAttribute('href').slice(1))]),
})"""


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run for both tests (a pytest subprocess: pytester is one test's), its outputs in the folder returned."""
    folder = tmp_path_factory.mktemp("why")
    root = folder / "cassettes"
    shutil.copytree(JEV, root / "jev" / OLD)
    distorted(JEV, root, DISTORTED)
    command = [sys.executable, "-m", "pytest", *QUIET, "--sys1cal",
               *REAL_ANALYSIS,  # the triptych draws the intervals and the consistency band
               f"--sys1cal-cassettes={root}", f"--sys1cal-thresholds={THRESHOLDS}",
               f"--sys1cal-model-version={DISTORTED}", f"--sys1cal-baseline={OLD}",
               f"--sys1cal-html={folder / 'report.html'}", f"--sys1cal-markdown={folder / 'comment.md'}"]  # fmt: skip
    done = subprocess.run(command, cwd=folder, env=environ(), capture_output=True, text=True, timeout=600)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, (done.stdout + done.stderr)[-2000:]
    return folder


def test_the_triptych_and_the_diagnosis_in_the_html_report(outputs: Path) -> None:
    page = open_page(CHROMIUM, outputs / "report.html", figure_shots=True, probes={"why": WHY_JS})
    assert page.console_errors == [] and page.exceptions == [] and page.log_errors == []
    assert page.requests == [page.url]
    (outputs / "triptych.png").write_bytes(page.figure_shots["fig-why"])  # looked at: docs/html-report.md
    figure = next(f for f in page.figures if f["id"] == "fig-why")
    assert figure["width"] > 900 and figure["height"] > 900 and figure["marks"] > 200, figure
    inked, colours = not_blank(page.figure_shots["fig-why"])
    assert inked > 0.05 and colours > 100, (inked, colours)
    why = page.probes["why"]
    assert [line.split(" — ")[0] for line in why["lines"]] == [
        "Why: Noul: miscalibration",
        "Why: Choice: miscalibration",
        "Why: Score: miscalibration",
    ]
    assert why["links"] and all(target for _, target in why["links"])  # every worst rendering's row is there


def test_the_pull_request_comment_says_why_under_the_verdict(outputs: Path) -> None:
    from markdown_it import MarkdownIt

    comment = (outputs / "comment.md").read_text(encoding="utf-8")
    body = MarkdownIt("commonmark").enable("table").render(comment)
    style = "body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;max-width:900px;margin:16px;font-size:14px}"
    style += "table{border-collapse:collapse}td,th{border:1px solid #d0d7de;padding:4px 8px}"
    page_file = outputs / "comment.html"
    page_file.write_text(f"<!DOCTYPE html><meta charset='utf-8'><title>{escape('comment')}</title><style>{style}</style>{body}",
                         encoding="utf-8")  # fmt: skip
    page = open_page(
        CHROMIUM,
        page_file,
        probes={"items": "JSON.stringify([...document.querySelectorAll('li')].map(li => li.textContent))"},
    )
    (outputs / "comment.png").write_bytes(page.screenshot)
    assert page.console_errors == [] and page.requests == [page.url]
    items = [item for item in page.probes["items"] if item.startswith("Why: ")]
    assert [item.split(" — ")[0] for item in items] == [
        "Why: Noul: miscalibration",
        "Why: Choice: miscalibration",
        "Why: Score: miscalibration",
    ]
    assert comment.index("**Noul Δ") < comment.index("- **Why:**") < comment.index("| primitive |")
    assert json.dumps(items, ensure_ascii=False).count("within the margin 0.02") == 3
