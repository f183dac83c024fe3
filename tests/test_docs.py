"""The docs hold together: every link in the README and in docs/ resolves (file and heading), docs/index.md lists
every page with one line each, every page links to another, and every section the package, the README or a
page cites by name (`docs/setup.md, "The rule"`) is there under that name."""

from __future__ import annotations

import re
from pathlib import Path

from tests.runs import REPO

DOCS = REPO / "docs"
PAGES = sorted(DOCS.glob("*.md"))
DOCUMENTS = [REPO / "README.md", *PAGES]

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
# A page cited by name, then a section of it in quotes: `docs/recording.md, "Proxies"`, `[setup.md](setup.md),
# "The rule" and "Updating in place"`, `report.md ("The pull-request comment")` (whitespace already collapsed).
CITED_SECTION = re.compile(r'(?<![\w/-])(?:docs/)?([\w-]+\.md)(?:\]\([^)]*\))?,? \(?"([^"]+)"(?: and "([^"]+)")?')


def anchor(heading: str) -> str:
    """GitHub's id for a heading: lower case, punctuation dropped (hyphens and underscores kept), spaces → -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def prose(path: Path) -> str:
    """The text of a Markdown file without its fenced code blocks (a link or heading there is an example)."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def headings(path: Path) -> list[str]:
    return [line.lstrip("#").strip() for line in prose(path).splitlines() if re.match(r"#{1,6} ", line)]


def anchors(path: Path) -> set[str]:
    """Every id a link may name in the file, a repeated heading numbered as GitHub numbers it (-1, -2, …)."""
    seen: dict[str, int] = {}
    out = set()
    for heading in headings(path):
        base = anchor(heading)
        out.add(f"{base}-{seen[base]}" if base in seen else base)
        seen[base] = seen.get(base, 0) + 1
    return out


def links(path: Path) -> list[str]:
    return [target for target in LINK.findall(prose(path)) if not re.match(r"[a-z]+:", target)]


def broken_links(document: Path) -> list[str]:
    broken = []
    for target in links(document):
        file_part, _, fragment = target.partition("#")
        linked = (document.parent / file_part).resolve() if file_part else document
        if not linked.exists():
            broken.append(f"{document.name}: {target}: no file {file_part}")
        elif fragment and (linked.suffix != ".md" or fragment not in anchors(linked)):
            broken.append(f"{document.name}: {target}: no heading #{fragment} in {linked.name}")
    return broken


def test_every_link_in_the_readme_and_the_docs_resolves() -> None:
    broken = [line for document in DOCUMENTS for line in broken_links(document)]
    assert not broken, "\n".join(broken)


def test_the_link_check_catches_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## Two words: `code`\n\n## Title\n\n[a](page.md#two-words-code) [b](#title-1) [c](#nope) "
        "[d](gone.md) [e](https://example.invalid/x)\n\n```bash\n[f](in-a-code-block.md)\n```\n"
    )
    assert anchors(page) == {"title", "two-words-code", "title-1"}
    assert broken_links(page) == ["page.md: #nope: no heading #nope in page.md", "page.md: gone.md: no file gone.md"]


def test_anchors_follow_githubs_rule() -> None:
    assert anchor("`inconclusive: fail | pass`") == "inconclusive-fail--pass"
    assert anchor("1. `POST /v1/systemone`: Jev and any server that speaks it") == (
        "1-post-v1systemone-jev-and-any-server-that-speaks-it"
    )
    assert anchor("Gates: thresholds.yaml") == "gates-thresholdsyaml"


def index_lines() -> dict[str, str]:
    """docs/index.md's list: page file → its one line (continuation lines joined)."""
    entries: dict[str, str] = {}
    last = None
    for line in (DOCS / "index.md").read_text(encoding="utf-8").splitlines():
        entry = re.match(r"- \[[^\]]+\]\(([\w-]+\.md)\) — (.+)", line)
        if entry:
            last = entry.group(1)
            assert last not in entries, f"docs/index.md lists {last} twice"
            entries[last] = entry.group(2)
        elif last and line.startswith("  "):
            entries[last] += " " + line.strip()
        else:
            last = None
    return entries


def test_the_index_lists_every_page_with_one_line() -> None:
    listed = index_lines()
    pages = {page.name for page in PAGES} - {"index.md"}
    assert set(listed) == pages, (
        f"not in docs/index.md: {sorted(pages - set(listed))}; not a page: {sorted(set(listed) - pages)}"
    )
    assert all(text.strip() for text in listed.values())


def test_the_readme_lists_every_page_in_its_docs_section() -> None:
    section = (REPO / "README.md").read_text(encoding="utf-8").split("\n## Docs\n", 1)[1].split("\n## ", 1)[0]
    linked = {Path(target).name for target in LINK.findall(section)}
    assert linked == {page.name for page in PAGES}, sorted({page.name for page in PAGES} - linked)


def test_every_page_is_reachable_from_the_index_and_links_to_another() -> None:
    reachable, queue = {"index.md"}, ["index.md"]
    while queue:
        for target in links(DOCS / queue.pop()):
            name = target.partition("#")[0]
            if name.endswith(".md") and "/" not in name and name not in reachable and (DOCS / name).exists():
                reachable.add(name)
                queue.append(name)
    assert reachable == {page.name for page in PAGES}, sorted({page.name for page in PAGES} - reachable)
    dead_ends = [
        page.name
        for page in PAGES
        if not any(t.partition("#")[0].endswith(".md") and t.partition("#")[0] != page.name for t in links(page))
    ]
    assert not dead_ends, f"pages that link to no other page: {dead_ends}"


def sections(path: Path) -> list[str]:
    """What a citation may name in a page: its headings and its bold run-in titles (`**Proxies** (…)`), without
    their Markdown."""
    text = prose(path)
    run_ins = re.findall(r"(?:^|\n\n)\*\*([^*]+)\*\*", text)
    return [re.sub(r"[`*]", "", name) for name in headings(path) + run_ins]


def test_every_section_cited_by_name_is_there() -> None:
    """`docs/recording.md, "When the server stalls"` in a docstring, `[setup.md](setup.md), "The rule"` on a page:
    the quoted name starts a heading (or a bold run-in title) of that page, so a moved section takes its
    citations with it."""
    sources = [*DOCUMENTS, *sorted((REPO / "pytest_sys1cal").rglob("*.py"))]
    missing, found = [], 0
    for source in sources:
        text = re.sub(r"\s+", " ", source.read_text(encoding="utf-8"))
        for page, *names in CITED_SECTION.findall(text):
            if not (DOCS / page).exists():
                continue
            for name in filter(None, names):
                found += 1
                if not any(section.startswith(name) for section in sections(DOCS / page)):
                    missing.append(f'{source.relative_to(REPO)}: {page}, "{name}"')
    assert found >= 10  # the pattern still finds the citations it was written for
    assert not missing, "\n".join(missing)
