"""Names that become parts of paths are names, never paths.

A model version names its cassette folder (``<cassette root>/<model>/<version>``), a model's name (a built-in
adapter's, or one a plugin registers) the folder above it, and a dataset's family and instance id the folder
and file of each cassette; a baseline or trend version names a folder under the cassette root. Taken as they
come, ``x/../jev-1.13.0`` would overwrite another version's cassettes, ``../../x`` write outside the cassette
root, ``.`` write a manifest into the model's folder. So each is checked against one plain-name pattern before
anything is read or written, and refused in one line that says what is allowed (exit status 4).

Allowed: letters, digits and ``. _ + -``, starting with a letter or a digit (so never ``.`` or ``..``), at most
128 characters: no ``/`` or ``\\``, no space or control character, nothing a file system on Windows or macOS
would refuse or read otherwise (``:``, ``*``, ``?``, ``"``, ``<``, ``>``, ``|``).
"""

from __future__ import annotations

import re

from .errors import InputError

PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")
ALLOWED = (
    "letters, digits and . _ + - (starting with a letter or a digit, at most 128 characters; no /, \\, spaces "
    "or other characters)"
)


class NotAName(InputError):
    """A value that becomes part of a path is not a plain name."""


def is_plain_name(value: object) -> bool:
    """Whether `value` can stand as one folder or file name (see the module's docstring)."""
    return isinstance(value, str) and PLAIN_NAME.fullmatch(value) is not None


def check_name(value: str, what: str, why: str = "it names a folder") -> str:
    """`value`, when it is a plain name; else NotAName, worded for the user: `what` names the value (an option,
    a field), `why` says which path it becomes part of."""
    if not is_plain_name(value):
        raise NotAName(f"{what} {value!r}: {why}, so it must be a plain name: {ALLOWED}")
    return value
