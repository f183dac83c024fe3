"""The HTML report's file name in the job summary and the pull-request comment (issue 36): it was quoted in a
one-backtick code span, so a name holding backticks closed the span and left the rest live Markdown (an image,
HTML, a link). Rendered by a real CommonMark parser, every name now comes out as one inline code span holding
the name, and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from pytest_sys1cal.document import read_report
from pytest_sys1cal.report.markdown import summary_markdown
from pytest_sys1cal.report.pr_comment import comment_markdown
from pytest_sys1cal.run_report import Report

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "jev-report.json"
NAMES = [
    "report.html",
    "a`<img src=x onerror=alert(1)>`b.html",
    "``![t](t.png)``.html",
    "`` ` ``[x](javascript:alert(1)).html",
    "x|y`|z.html",
]
GITHUB = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "7"}


def sentence_tokens(markdown: str) -> list:
    (line,) = [line for line in markdown.splitlines() if line.startswith("📊")]
    (inline,) = [t for t in MarkdownIt("commonmark").enable("table").parse(line) if t.type == "inline"]
    return inline.children or []


@pytest.mark.parametrize("render", [summary_markdown, comment_markdown], ids=["summary", "comment"])
@pytest.mark.parametrize("name", NAMES)
def test_any_html_file_name_stays_one_code_span(render, name: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    tokens = sentence_tokens(render(Report.read_back(read_report(GOLDEN)), tmp_path / name, GITHUB))
    assert not [t for t in tokens if t.type in ("image", "html_inline")]
    (code,) = [t for t in tokens if t.type == "code_inline"]
    # The span shows the name (GitHub hides the backslash before a |, which ends a table cell otherwise).
    assert code.content.strip() in (name, name.replace("|", "\\|"))
    links = [t.attrs.get("href") for t in tokens if t.type == "link_open"]
    assert links == ["https://github.com/o/r/actions/runs/7#artifacts"]  # the artifacts link, and no other
