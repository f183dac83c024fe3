"""The pull-request comment (report/pr_comment.py) as a reviewer reads it (issue 37): real pytest runs (pytester)
replaying a degraded copy of the bundled Jev set against jev-1.13.0 from cassettes on disk, the comment rendered
as GitHub renders a comment (markdown-it-py, GitHub's table and code styles) in headless Chromium at GitHub's
880 px comment width, screenshotted and measured: every value column visible without scrolling, the inputs'
notices quoted, the scale of chance under the renderings, and without a baseline a heading that says no upgrade
comparison was made.

The browser test is skipped, saying why, where Chromium or websocket-client is missing."""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

import pytest

from tests.browser import CHROMIUM, needs_chromium, open_page
from tests.runs import sys1cal
from tests.version_roots import NEW, OLD, REPO, edit_manifest, two_versions

COMMENT_WIDTH = 880  # GitHub's comment body column on a desktop browser, in CSS pixels
# What GitHub's stylesheet does to a comment's tables and code (the parts that decide the width): a table is a
# scrolling block no wider than the column, cells padded 6px 13px, code at 85 % in a monospace font.
GITHUB_CSS = f"""
body {{ margin: 0; background: #fff; }}
.markdown-body {{ width: {COMMENT_WIDTH}px; box-sizing: border-box; padding: 16px; font: 14px/1.5 -apple-system,
  "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; color: #1f2328; word-wrap: break-word; }}
.markdown-body table {{ display: block; width: max-content; max-width: 100%; overflow: auto;
  border-spacing: 0; border-collapse: collapse; }}
.markdown-body td, .markdown-body th {{ padding: 6px 13px; border: 1px solid #d0d7de; }}
.markdown-body code {{ padding: .2em .4em; font-size: 85%; background: rgba(175,184,193,.2); border-radius: 6px;
  font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "Liberation Mono", monospace; }}
.markdown-body sub {{ font-size: 75%; }}
"""
# Per table: its width as laid out, the width it needs (scrollWidth), and the right edge of each header cell.
TABLES_JS = """JSON.stringify([...document.querySelectorAll('table')].map(t => ({
  client: t.clientWidth, scroll: t.scrollWidth, right: t.getBoundingClientRect().right,
  headers: [...t.querySelectorAll('th')].map(h => ({text: h.textContent, right: h.getBoundingClientRect().right}))
})))"""
BODY_RIGHT_JS = "JSON.stringify(document.querySelector('.markdown-body').getBoundingClientRect().right)"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """jev-1.13.0 and its degraded copy jev-1.14.0, whose server reported another model than the one pinned."""
    cassettes = two_versions(tmp_path_factory.mktemp("comment") / "cassettes")
    edit_manifest(cassettes / "jev" / NEW, server_model="jevcompat-mock-0.1")
    return cassettes


def comment_of(pytester: pytest.Pytester, root: Path, *options: str) -> str:
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    (pytester.path / "cassettes").symlink_to(root, target_is_directory=True)
    comment = pytester.path / "comment.md"
    result = sys1cal(
        pytester, "--sys1cal-cassettes=cassettes", "--sys1cal-thresholds=thresholds.yaml",
        f"--sys1cal-markdown={comment}", f"--sys1cal-report={pytester.path / 'report.json'}", *options,
    )  # fmt: skip
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-2000:]
    return comment.read_text(encoding="utf-8")


def github_page(markdown: str, path: Path) -> Path:
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    path.write_text(
        f"<!DOCTYPE html><meta charset=utf-8><title>comment</title><style>{GITHUB_CSS}</style>"
        f"<div class=markdown-body>{body}</div>",
        encoding="utf-8",
    )
    return path


def test_the_comment_names_the_other_model_and_the_scale_of_chance(pytester: pytest.Pytester, root: Path) -> None:
    comment = comment_of(pytester, root, f"--sys1cal-model-version={NEW}", f"--sys1cal-baseline={OLD}")
    # The notice that matters is read where the verdict is, not behind "see the job summary".
    assert "> ⚠️ **Notice:** The server reported model jevcompat-mock-0.1, not the pinned jev-1.14.0" in comment
    assert "see the job summary" not in comment
    # Holm's steps under the Δ table; the scale of chance under the renderings, from the report's own numbers.
    assert "Holm's step-down, shown worse: Noul p 0.0005 ≤ 0.0167, Score p 0.0005 ≤ 0.025, Choice p 0.9995 > 0.05" in (
        comment
    )
    chance = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))["comparison"]["primitives"]
    noul = chance["noul"]["chance"]
    assert noul["basis"] == "within-problem"  # reconstructed cassettes: the repeat noise is unknown
    assert f"Noul SD {noul['sd']:.3f}, lowest of 365 ≈ {noul['lowest']:+.3f}" in comment
    # The values come first; each node id that re-runs a rendering is listed by its row number.
    assert (
        "| \\# | Noul: D (base → new) | Choice: D (base → new) | Score: D (base → new) | p\\* | representation |"
        in (comment)
    )
    assert "1. `sys1cal::jev[explicit_probability/explicit_probability__seed_000061__repr_prose]`" in comment


def test_without_a_baseline_the_heading_says_no_upgrade_comparison_was_made(
    pytester: pytest.Pytester, root: Path
) -> None:
    comment = comment_of(pytester, root, f"--sys1cal-model-version={OLD}")
    heading = comment.splitlines()[1]
    assert heading == (
        "### ✅ Sys1Cal calibration: jev jev-1.13.0 — every gate in force passed; no upgrade comparison made"
    )
    assert "**No upgrade comparison was made:**" in comment
    assert "`BASELINE_VERSION`" in comment and "`--sys1cal-baseline=VERSION`" in comment


@needs_chromium
def test_every_value_column_is_visible_at_githubs_comment_width(
    pytester: pytest.Pytester, root: Path, tmp_path: Path
) -> None:
    pytest.importorskip("websocket", reason="the browser is driven with websocket-client (the test extra)")
    assert CHROMIUM is not None
    comment = comment_of(pytester, root, f"--sys1cal-model-version={NEW}", f"--sys1cal-baseline={OLD}")
    # <details> shown open, as a reviewer who unfolds the renderings sees it.
    page_file = github_page(comment.replace("<details>", "<details open>"), tmp_path / "comment.html")
    page = open_page(CHROMIUM, page_file, probes={"tables": TABLES_JS, "body": BODY_RIGHT_JS})
    (tmp_path / "comment-880.png").write_bytes(page.screenshot)  # kept with the test's tmp_path, to look at
    tables, body_right = page.probes["tables"], page.probes["body"]
    assert len(tables) == 2  # the Δ table and the renderings table
    for table in tables:
        headers = [cell["text"] for cell in table["headers"]]
        assert table["scroll"] <= table["client"], f"{headers} needs {table['scroll']} px, has {table['client']}"
        assert all(cell["right"] <= body_right for cell in table["headers"]), headers
    assert [h["text"] for h in tables[1]["headers"]][:4] == [
        "#", "Noul: D (base → new)", "Choice: D (base → new)", "Score: D (base → new)",
    ]  # fmt: skip
    assert html.escape("jevcompat-mock-0.1") in page_file.read_text(encoding="utf-8")
