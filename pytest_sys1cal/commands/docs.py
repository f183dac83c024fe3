"""`python -m pytest_sys1cal docs [PAGE]`: the pages the plugin's messages, the files `init` writes and the
README cite ("docs/setup.md", "docs/thresholds.md", …), read from the installation itself (the wheel carries
docs/ under _bundled/; a checkout reads its own). Without a page it lists them; a page is named as it is cited
(`docs/setup.md`), by its file name (`setup.md`) or by its stem (`setup`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..bundled import bundled
from ..errors import EXIT_INPUT


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("page", nargs="?", help="the page to print, e.g. thresholds or docs/setup.md; none: list them")


def pages() -> dict[str, Path]:
    """Stem → file of every page the installation carries."""
    folder = bundled("docs")
    return {path.stem: path for path in sorted(folder.glob("*.md"))} if folder is not None else {}


def main(args: argparse.Namespace) -> int:
    found = pages()
    if not found:
        print("error: this installation carries no docs; reinstall pytest-sys1cal", file=sys.stderr)
        return EXIT_INPUT
    if args.page is None:
        print("Pages (python -m pytest_sys1cal docs PAGE prints one):")
        for stem, path in found.items():
            print(f"  {stem:<14} {_title(path)}")
        return 0
    stem = Path(args.page).name.removesuffix(".md")
    if stem not in found:
        print(f"error: no page {args.page!r}; the pages are: {', '.join(found)}", file=sys.stderr)
        return EXIT_INPUT
    sys.stdout.write(found[stem].read_text(encoding="utf-8"))
    return 0


def _title(path: Path) -> str:
    """The page's first heading, without its #."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return ""
