"""The hand comments of the gate sections `thresholds --update` replaces, carried into the new ones (issue 36).

An update replaces what a report decides (a model's or a version's ``noul``, ``choice``, ``score`` and
``uncertainty``), and the comments this command wrote there go with it: the derivation beside each limit
(``measured ∓ margin = limit``), the notes on gates left out, the λ test's paragraph. Anything else in those
lines was written by a person, and an editor would keep it; so does this module (docs/setup.md, "Updating in
place"):

- a comment block right above a section's key or a limit's key stays right above that key in the new section;
- a remark after a limit (``max_ece: 0.08  # 15 bins``, or after the derivation: ``… = 0.0542   (Table 6)``)
  stays after the new limit's derivation;
- where the new section has no such key (a gate left out this time), its remarks stay at the end of that
  section, ``# key: remark``; where the new block has no such section at all, at the end of the block.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

END = "\0end"  # the notes after a section's last limit
KEY_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w.+-]*):(?P<value>[^#]*?)(?:\s+#\s?(?P<comment>.*))?$")
COMMENT_LINE = re.compile(r"^(?P<indent> *)#\s?(?P<text>.*)$")
# What this command writes in a gate section (report/thresholds_text.py): a limit's derivation (with what set its
# margin), a null's reason, the notes on gates left out, the λ test's paragraph.
DERIVATION = re.compile(
    r"^-?\d+\.\d+ [−+] \S+ = -?\d+\.\d+(?: {3}\((?:repeat noise|minimum slack); [^)]*\))?|^.*; null drops \S+'s limit$|"
    r"^drops \S+'s λ gate$"
)
OWN_PARAGRAPH = re.compile(r"^(?:[\w.+-]+: (?:left out|no gates), |The valid one-sided test of λ = 0|No λ gate: )")


@dataclass
class HandNotes:
    """Hand comments of the replaced sections, by (section, limit key; None for the section's own key)."""

    above: dict[tuple[str, str | None], list[str]] = field(default_factory=dict)  # comment texts, no '# '
    after: dict[tuple[str, str | None], str] = field(default_factory=dict)  # a remark after the line
    consumed: set[int] = field(default_factory=set)  # lines above a section's key, now carried with it

    def sections(self) -> list[str]:
        return list(dict.fromkeys(section for section, _key in [*self.above, *self.after]))


def gather(lines: Sequence[str], spans: Iterable[tuple[str, int, int]]) -> HandNotes:
    """The hand comments of each replaced section, given as (key, first line, end line) of `lines`."""
    notes = HandNotes()
    for section, start, end in spans:
        above = _block_above(lines, start)
        if above:
            notes.above[(section, None)] = [text for _i, text in above]
            notes.consumed.update(i for i, _text in above)
        _body(lines, section, start, end, notes)
    return notes


def above_lines(lines: Sequence[str], start: int) -> list[int]:
    """The indexes of the hand comment lines right above line `start` (see `_block_above`)."""
    return [index for index, _text in _block_above(lines, start)]


def _block_above(lines: Sequence[str], start: int) -> list[tuple[int, str]]:
    """The comment lines right above line `start` at its column (no blank line between), unless this command
    wrote them (they name it): those are replaced with the block, as before."""
    column = _indent(lines[start])
    found: list[tuple[int, str]] = []
    index = start - 1
    while index >= 0 and (match := COMMENT_LINE.match(lines[index].rstrip("\n"))) and len(match["indent"]) == column:
        found.insert(0, (index, match["text"]))
        index -= 1
    if any("python -m pytest_sys1cal thresholds" in text for _i, text in found):
        return []
    return found


def _body(lines: Sequence[str], section: str, start: int, end: int, notes: HandNotes) -> None:
    key_line = KEY_LINE.match(lines[start].rstrip("\n"))
    if key_line and key_line["comment"]:
        notes.after[(section, None)] = key_line["comment"]
    pending: list[str] = []
    for line in lines[start + 1 : end]:
        text = line.rstrip("\n")
        comment = COMMENT_LINE.match(text)
        if comment:
            pending.append(comment["text"])
            continue
        limit = KEY_LINE.match(text)
        if not text.strip() or limit is None:
            continue
        if hand := _hand_paragraphs(pending):
            notes.above[(section, limit["key"])] = hand
        pending = []
        remark = _remark(limit["comment"] or "")
        if remark:
            notes.after[(section, limit["key"])] = remark
    if hand := _hand_paragraphs(pending):
        notes.above[(section, END)] = hand


def _hand_paragraphs(texts: list[str]) -> list[str]:
    """The comment lines without this command's own paragraphs (a paragraph: lines up to an empty comment)."""
    kept: list[str] = []
    own = False
    for index, text in enumerate(texts):
        if index == 0 or not texts[index - 1].strip():
            own = bool(OWN_PARAGRAPH.match(text))
        if not own:
            kept.append(text)
    return kept


def _remark(comment: str) -> str:
    """What a person added after a limit: the comment without this command's derivation."""
    own = DERIVATION.match(comment)
    return (comment[own.end() :] if own else comment).strip()


def place(block: Sequence[str], notes: HandNotes, section_indent: int) -> list[str]:
    """`block` (the new lines) with the hand notes at their keys; see the module's docstring."""
    out: list[str] = []
    section: str | None = None
    left = dict(notes.above)
    after = dict(notes.after)
    for line in block:
        match = KEY_LINE.match(line.rstrip("\n"))
        indent = _indent(line) if line.strip() else None
        if section is not None and indent is not None and indent <= section_indent:
            out += _section_end(section, left, after, section_indent)
            section = None
        if match and indent == section_indent:
            section = match["key"]
            out += _comments(left.pop((section, None), []), indent)
            out.append(_with_remark(line, after.pop((section, None), "")))
            continue
        if match and section is not None and indent is not None and indent > section_indent:
            out += _comments(left.pop((section, match["key"]), []), indent)
            out.append(_with_remark(line, after.pop((section, match["key"]), "")))
            continue
        out.append(line)
    if section is not None:
        out += _section_end(section, left, after, section_indent)
    for name in notes.sections():  # sections the new block does not have
        out += _section_end(name, left, after, section_indent, whole=True)
    return out


Above = dict[tuple[str, str | None], list[str]]
After = dict[tuple[str, str | None], str]


def _section_end(section: str, left: Above, after: After, indent: int, *, whole: bool = False) -> list[str]:
    """The section's notes whose key the new section lacks, as comments after its last line."""
    inner = indent if whole else indent + 2
    texts: list[str] = []
    for (name, key), comments in list(left.items()):
        if name == section and key is not None:
            texts += comments if key == END else [f"{key}: {comments[0]}", *comments[1:]]
            del left[(name, key)]
    if whole and (section, None) in left:
        texts = [f"{section}: {left.pop((section, None))[0]}", *texts]
    for (name, key), remark in list(after.items()):
        if name == section:
            texts.append(f"{key or section}: {remark}")
            del after[(name, key)]
    return _comments(texts, inner)


def _comments(texts: Sequence[str], indent: int) -> list[str]:
    return [f"{' ' * indent}# {text}".rstrip() + "\n" for text in texts]


def _with_remark(line: str, remark: str) -> str:
    if not remark:
        return line
    body = line.rstrip("\n")
    joined = f"{body}   {remark}" if "#" in body else f"{body}  # {remark}"
    return joined + "\n"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))
