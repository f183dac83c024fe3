"""Text from outside (what a server sends: the model id it reports, its error bodies, its headers; and any
name a user's file carries) made inert for the medium it is written to, so it reads as data and never as the
plugin's own markup or lines. Every Markdown writer (the job summary, table.py's Markdown tables, the trend's
``--markdown``) passes such text through `markdown_text`; every terminal line (the summary, the header, an
item's failure, pytest's stop reason) through `one_line`. HTML is escaped where it is built (html.py).

- Terminal: a line break, carriage return, tab, ANSI escape code or any other control character, and the
  Unicode controls that reorder or split lines (bidi overrides, line and paragraph separators), are shown
  as escapes (``\\n``, ``\\r``, ``\\x1b``, ``\\u202e``): one line stays one line and nothing is overwritten,
  recoloured or reordered.
- Markdown (GitHub's): the same, then every character that could start markup escaped: no heading, list,
  quote, table cell, link, image, HTML tag, code span, emphasis, strikethrough or math can come out of it.
  GitHub's own links are broken too, with a zero-width space (``&#8203;``, as Renovate does): an ``@name``
  would notify that person or team from a pull-request comment, and a bare ``https://…`` or ``www.…`` would
  become a link a server chose.
"""

from __future__ import annotations

import json
import re
import unicodedata

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Format characters that reorder text or hide it (bidi embeddings, overrides and isolates, marks).
_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Characters that open inline Markdown anywhere: backslash-escaped (ASCII punctuation, so CommonMark honours it).
_INLINE = set("\\`*[]|~$")
_HTML = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
# GitHub's mentions (@name, @org/team) and its autolinks (scheme://, www.): broken after their trigger.
_GITHUB_LINKS = re.compile(r"(@)(?=[A-Za-z0-9])|(:)(?=//)|(?<![A-Za-z0-9])(www)(?=\.)", re.IGNORECASE)
_ZWSP = "&#8203;"
# What starts a block when it begins a line: a heading, a bullet, an ordered list's number, a setext underline or
# a thematic break (a quote's ">" is already an entity; "*" and "_" are escaped anyway). "-0.161" starts none.
_BLOCK_START = re.compile(r"#{1,6}(?=[ \t]|$)|[+\-](?=[ \t]|$)|(\d{1,9})(?=[.)](?:[ \t]|$))|[=\-]+[ \t]*$")


def _controlled(char: str) -> bool:
    return char in _BIDI or unicodedata.category(char) in ("Cc", "Zl", "Zp")


def _shown(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def one_line(text: str) -> str:
    """`text` as one terminal line: every control character shown as its escape (see the module's docstring)."""
    if text.isprintable() and not _BIDI.intersection(text):
        return text  # the common case, untouched
    return "".join(_shown(char) if _controlled(char) else char for char in text)


def markdown_text(text: str) -> str:
    """`text` as inert GitHub Markdown, on one line: it renders as the characters it holds, wherever it is put
    (a heading's text, a quote, a table cell, a list item)."""
    flat = one_line(text)
    out = []
    for index, char in enumerate(flat):
        if char in _HTML:
            out.append(_HTML[char])
        elif char in _INLINE:
            out.append("\\" + char)
        elif char == "_" and not _inside_word(flat, index):
            out.append("\\_")  # an underscore inside a word (min_mean_ovl) emphasises nothing
        else:
            out.append(char)
    escaped = _GITHUB_LINKS.sub(lambda found: found.group(0) + _ZWSP, "".join(out))
    start = _BLOCK_START.match(escaped)
    if start is None:
        return escaped
    number = start.group(1)
    if number:
        return f"{number}\\{escaped[len(number) :]}"  # 1. → 1\.
    return "\\" + escaped


class Code(str):
    """A Markdown code span made by `code_span`: already inert, so a table leaves it as it is."""


def code_span(text: str) -> Code:
    """`text` as an inline code span that shows it literally (a node id, a gate name): fenced by one backtick
    more than its longest run of them, on one line, with ``|`` escaped (a GitHub table cell ends at a bare one,
    even inside a span; the backslash there is not shown)."""
    flat = one_line(text).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return Code(f"{fence}{pad}{flat}{pad}{fence}")


def _inside_word(text: str, index: int) -> bool:
    before = text[index - 1] if index else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    return before.isalnum() and after.isalnum()


# What a model id is made of on the wires in use (jev-1.13.0, org/model, llama3:8b, name@rev): shown as it is.
_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+:@/-]{0,119}")


def quoted(text: str, limit: int = 120) -> str:
    """A server's word (the model id it reported) inside a sentence of the plugin's: as it is when it looks like
    a model id, else in JSON quotes and cut at `limit` characters, so that it reads as a quotation, never as
    more of the plugin's sentence."""
    if _PLAIN_ID.fullmatch(text):
        return text
    cut = text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"
    return json.dumps(cut, ensure_ascii=False)


def html_text(text: str) -> str:
    """`text` escaped for HTML (html.py's one escape): markup as entities, and the control characters a page
    would hide or act on (escape codes, bidi overrides) shown as escapes; line breaks and tabs are whitespace
    there, and stay."""
    import html

    if not text.isprintable():
        text = "".join(_shown(c) if _controlled(c) and c not in "\n\r\t" else c for c in text)
    elif _BIDI.intersection(text):
        text = "".join(_shown(c) if c in _BIDI else c for c in text)
    return html.escape(text)
