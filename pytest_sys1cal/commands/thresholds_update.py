"""`python -m pytest_sys1cal thresholds REPORT.json --update`: rewrite one model's gates, or one version's block,
in the thresholds file itself, the way syrupy's --snapshot-update rewrites a snapshot: in place, every other line
of the file as it was (comments included), and the change printed as a unified diff to review and commit.

The file is edited as text, so that what a person wrote stays: the lines a model's section spans are found from
the YAML reader's own positions and the indentation of block style. A version's block is its key and the
lines indented under it; the model's gates are its section keys (noul … regression) with the lines under
them, while its version blocks and the comments between entries stay. A comment block right above the
replaced key that this command wrote (it names `python -m pytest_sys1cal thresholds`) is replaced with it; the
hand comments in and right above the replaced sections go with their keys (thresholds_comments.py); any other
comment stays where it is. A section written in flow style (`jev: {noul: …}`) is not rewritten: that is a
usage error saying so. The caller renders the new block and checks the result with the plugin's own reader
before anything is written (commands/thresholds.py).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import yaml

from ..errors import InputError
from ..gates.schema import MODEL_KEYS
from ..vocabulary import PRIMITIVES
from .thresholds_comments import above_lines, gather
from .thresholds_comments import place as carry

GENERATED_MARK = "python -m pytest_sys1cal thresholds"  # in the header comment of every block this command writes
# What a report decides: the gates. The settings (decisions, regression) are the team's and stay as they are.
REPLACED = (*PRIMITIVES, "uncertainty")


class UpdateError(InputError):
    """The file cannot be rewritten in place as asked; the message names the file and what to do instead."""


@dataclass(frozen=True)
class Entry:
    """One key of the model's section: its name and the lines it spans, [start, end)."""

    key: str
    start: int
    end: int
    children: tuple[Entry, ...] = ()  # a version block's own sections

    @property
    def replaced(self) -> bool:
        return self.key in REPLACED


@dataclass(frozen=True)
class Layout:
    """Where the model's section lies in the file's lines (kept with their line ends)."""

    path: str
    lines: list[str]
    model_line: int | None = None  # index of `model:`; None when the model has no section
    end: int = 0  # the section's lines are [model_line, end): trailing blanks and the next model's comments excluded
    child_indent: int = 2
    entries: list[Entry] = field(default_factory=list)
    empty: bool = False  # `model:` with no value (null, ~ or {}): no entries yet

    def entry(self, key: str) -> Entry | None:
        return next((e for e in self.entries if e.key == key), None)


def layout(text: str, model: str, path: str) -> Layout:
    """The model's section in `text` (a file the plugin's reader has accepted)."""
    lines = text.splitlines(keepends=True)
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(root, yaml.MappingNode):
        return Layout(path, lines)
    keys = list(root.value)
    mine = next((i for i, (key, _value) in enumerate(keys) if key.value == model), None)
    if mine is None:
        return Layout(path, lines)
    key, value = keys[mine]
    start = key.start_mark.line
    end = keys[mine + 1][0].start_mark.line if mine + 1 < len(keys) else len(lines)
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1  # the comments right above the next model are that model's
    if isinstance(value, yaml.MappingNode) and value.flow_style:
        if value.value:
            raise UpdateError(
                f"{path}:{start + 1}: {model}'s section is written in flow style ({{…}}), which this command does "
                "not rewrite; write it in block style, or print the section with --paste and place it by hand"
            )
        return Layout(path, lines, start, end, empty=True)
    if not isinstance(value, yaml.MappingNode):  # null: `model:` alone, `model: null`, `model: ~`
        return Layout(path, lines, start, end, empty=True)
    entries = _entries(lines, value, end)
    return Layout(path, lines, start, end, entries[0].indent if entries else 2, [e.entry for e in entries])


@dataclass(frozen=True)
class _Found:
    entry: Entry
    indent: int


def _entries(lines: list[str], mapping: yaml.MappingNode, end: int) -> list[_Found]:
    """The keys of a block mapping with the lines each spans (up to `end`), a version's sections with them."""
    children = mapping.value
    found = []
    for index, (child, node) in enumerate(children):
        indent = child.start_mark.column
        first = child.start_mark.line
        last = children[index + 1][0].start_mark.line if index + 1 < len(children) else end
        while last > first + 1 and _belongs_to_next(lines[last - 1], indent):
            last -= 1
        inner: tuple[Entry, ...] = ()
        if str(child.value) not in MODEL_KEYS and isinstance(node, yaml.MappingNode) and not node.flow_style:
            inner = tuple(f.entry for f in _entries(lines, node, last))
        found.append(_Found(Entry(str(child.value), first, last, inner), indent))
    return found


def _belongs_to_next(line: str, indent: int) -> bool:
    """A blank line, or a comment at the entries' own column or left of it: not part of the entry above."""
    stripped = line.strip()
    return not stripped or (stripped.startswith("#") and len(line) - len(line.lstrip(" ")) <= indent)


def header_start(lines: list[str], key_line: int) -> int:
    """The first line of the comment block this command wrote right above `key_line` (same column, no blank
    line between), or key_line when there is none."""
    column = len(lines[key_line]) - len(lines[key_line].lstrip(" "))
    first = key_line
    while first > 0:
        above = lines[first - 1]
        if not above.strip().startswith("#") or len(above) - len(above.lstrip(" ")) != column:
            break
        first -= 1
    return first if any(GENERATED_MARK in line for line in lines[first:key_line]) else key_line


def kept_settings(place: Layout, version: str | None) -> tuple[str, ...]:
    """The settings (reading, decisions, regression) that stay as they are in the block being replaced."""
    block = place.entry(version) if version is not None else None
    entries = place.entries if version is None else (block.children if block is not None else ())
    return tuple(e.key for e in entries if not e.replaced and e.key in MODEL_KEYS)


def replace_version(place: Layout, version: str, block: str) -> str:
    """The file with `version`'s block under the model replaced by `block` (rendered at the entries' column;
    its own decisions and regression stay), or added at the end of the model's section when it has none.
    The model must have a section."""
    assert place.model_line is not None
    lines = list(place.lines)
    body = _lines(block)
    entry = place.entry(version)
    if entry is not None:
        start = header_start(lines, entry.start)
        notes = gather(lines, [(e.key, e.start, e.end) for e in entry.children if e.replaced])
        kept = [
            line
            for e in entry.children
            if not e.replaced
            for line in [*(lines[i] for i in above_lines(lines, e.start)), *lines[e.start : e.end]]
        ]
        inner = _column(lines[entry.children[0].start]) if entry.children else 2 * place.child_indent
        return "".join(lines[:start] + carry(_trim(body), notes, inner) + kept + lines[entry.end :])
    head = _model_key(lines, place)
    return "".join(
        lines[: place.model_line] + head + lines[place.model_line + 1 : place.end] + body + lines[place.end :]
    )


def replace_model(place: Layout, section: str) -> str:
    """The file with the model's gate sections (and the header this command wrote above it) replaced by
    `section` (rendered with the model's key); its decisions, regression, version blocks and the other comments
    under it stay."""
    assert place.model_line is not None
    lines = list(place.lines)
    start = header_start(lines, place.model_line)
    kept = set(range(place.model_line + 1, place.end))
    for entry in place.entries:
        if entry.replaced:
            kept -= set(range(entry.start, entry.end))
    notes = gather(lines, [(e.key, e.start, e.end) for e in place.entries if e.replaced])
    kept -= notes.consumed  # a hand comment right above a replaced key goes with it
    rest = _single_blanks([lines[i] for i in sorted(kept)])
    new = carry(_trim(_lines(section)), notes, place.child_indent)
    if rest and rest[0].strip():
        rest = ["\n", *rest]  # a blank line between the new gates and what the section keeps
    return "".join(lines[:start] + new + rest + lines[place.end :])


def append(text: str, block: str) -> str:
    """`block` added at the end of the file, as `>>` would add it (the block starts with a blank line)."""
    if text and not text.endswith("\n"):
        text += "\n"
    return text + block


def unified(before: str, after: str, path: str) -> str:
    """The change as a unified diff, for the terminal."""
    diff = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"{path} (before)", f"{path} (after)"
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in diff)


def _model_key(lines: list[str], place: Layout) -> list[str]:
    """The model's key line, rewritten to open a block (`model:`) when its section is empty (`model: null`)."""
    assert place.model_line is not None
    line = lines[place.model_line]
    if not place.empty:
        return [line]
    key = line.split(":", 1)[0]
    return [f"{key}:\n"]


def _column(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _trim(lines: list[str]) -> list[str]:
    """Without the blank lines the renderer puts first (for `>>`)."""
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    return lines[start:]


def _single_blanks(lines: list[str]) -> list[str]:
    """No two blank lines in a row (the replaced entries leave their gaps behind)."""
    out: list[str] = []
    for line in lines:
        if not line.strip() and out and not out[-1].strip():
            continue
        out.append(line)
    return out
