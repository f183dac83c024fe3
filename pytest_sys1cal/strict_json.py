"""JSON read so that no object holds the same key twice. Python's reader (like most) keeps the last of two equal
keys without a word, so a line added beside the original one in a manifest (a second digest) or a second
``logprobs`` in a server's answer would silently decide what the plugin reads. Every manifest and every server
answer is read here instead: a repeated key is refused, named, with the line it repeats on."""

from __future__ import annotations

import json
from typing import Any

from .errors import InputError


class DuplicateKey(InputError, ValueError):
    """An object with one key twice; a ValueError too, so a caller that refuses unreadable JSON refuses this."""

    def __init__(self, key: str, line: int | None):
        self.key, self.line = key, line
        self.unplaced = f"the key {json.dumps(key, ensure_ascii=False)} appears twice in one object"
        super().__init__(self.unplaced + (f" (line {line})" if line is not None else ""))


def loads(text: str | bytes) -> Any:
    """`json.loads`, raising DuplicateKey for an object that repeats a key."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        found = dict(pairs)  # in C: the usual case (no key twice) pays one length comparison more
        if len(found) != len(pairs):
            seen: set[str] = set()
            key = next(key for key, _value in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
            raise DuplicateKey(key, _last_line(text, key))
        return found

    return json.loads(text, object_pairs_hook=unique)


def _last_line(text: str | bytes, key: str) -> int | None:
    """The line of the key's last occurrence written as a key (its JSON string and a colon), for the message;
    None when it cannot be found so (a key written with escapes)."""
    source = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    written = json.dumps(key, ensure_ascii=False)
    index, at = -1, source.rfind(written)
    while at >= 0:
        if source[at + len(written) :].lstrip().startswith(":"):
            index = at
            break
        at = source.rfind(written, 0, at)
    return None if index < 0 else source.count("\n", 0, index) + 1
