"""`python -m pytest_sys1cal docs [PAGE]`: the pages the plugin's messages, the files `init` writes and the
README cite ("docs/setup.md", "docs/thresholds.md", …), read from the installation itself (the wheel carries
docs/ under _bundled/; a checkout reads its own). Without a page it prints the front page, docs/index.md, which
lists every page with a line on each; a page is named as it is cited (`docs/setup.md`), by its file name
(`setup.md`) or by its stem (`setup`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..bundled import bundled
from ..errors import EXIT_INPUT

# The front page: what `docs` prints when no page is named.
INDEX = "index"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "page", nargs="?", help="the page to print, e.g. thresholds or docs/setup.md; none: the index of every page"
    )


def pages() -> dict[str, Path]:
    """Stem → file of every page the installation carries."""
    folder = bundled("docs")
    return {path.stem: path for path in sorted(folder.glob("*.md"))} if folder is not None else {}


def main(args: argparse.Namespace) -> int:
    found = pages()
    if INDEX not in found:
        print("error: this installation carries no docs (docs/index.md); reinstall pytest-sys1cal", file=sys.stderr)
        return EXIT_INPUT
    stem = INDEX if args.page is None else Path(args.page).name.removesuffix(".md")
    if stem not in found:
        print(f"error: no page {args.page!r}; the pages are: {', '.join(found)}", file=sys.stderr)
        return EXIT_INPUT
    sys.stdout.write(found[stem].read_text(encoding="utf-8"))
    return 0
