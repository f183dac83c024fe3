"""`python -m pytest_sys1cal docs [PAGE]` in process: the front page without a page, any page as it is cited, and
one line naming the pages for a page that is not there."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pytest_sys1cal.commands import docs
from tests.runs import REPO


def run(capsys: pytest.CaptureFixture[str], page: str | None) -> tuple[int, str, str]:
    status = docs.main(argparse.Namespace(page=page))
    out, err = capsys.readouterr()
    return status, out, err


def test_without_a_page_it_prints_the_index(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, None)
    assert (status, err) == (0, "")
    assert out == (REPO / "docs" / "index.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("cited", ["output", "output.md", "docs/output.md", "architecture", "index"])
def test_a_page_is_printed_as_it_is_cited(capsys: pytest.CaptureFixture[str], cited: str) -> None:
    status, out, err = run(capsys, cited)
    assert (status, err) == (0, "")
    assert out == (REPO / "docs" / f"{Path(cited).stem}.md").read_text(encoding="utf-8")


def test_a_page_that_is_not_there_is_one_line_naming_the_pages(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "docs/layout.md")
    assert (status, out) == (4, "")
    assert err.count("\n") == 1 and err.startswith("error: no page 'docs/layout.md'; the pages are: architecture, ")
    assert ", index, " in err and ", output, " in err
