"""Names that become parts of paths are names, never paths.

A model version names its cassette folder (``<cassette root>/<model>/<version>``), a model's name (a built-in
adapter's, or one a plugin registers) the folder above it, and a dataset's family and instance id the folder
and file of each cassette; a baseline or trend version names a folder under the cassette root. Taken as they
come, ``x/../jev-1.13.0`` would overwrite another version's cassettes, ``../../x`` write outside the cassette
root, ``.`` write a manifest into the model's folder. So each is checked against one plain-name pattern before
anything is read or written, and refused in one line that says what is allowed (exit status 4).

Allowed: letters, digits and ``. _ + -``, starting with a letter or a digit (so never ``.`` or ``..``), at most
128 characters: no ``/`` or ``\\``, no space or control character, nothing a file system on Windows or macOS
would refuse or read otherwise (``:``, ``*``, ``?``, ``"``, ``<``, ``>``, ``|``), no trailing dot (Windows drops
it), and none of the names Windows reserves for devices (``CON``, ``PRN``, ``AUX``, ``NUL``, ``COM0``–``COM9``,
``LPT0``–``LPT9``, in any case and with any extension: ``nul.txt`` is the device too). A team's checkout may be on
Windows or macOS, whose file systems also fold case: a version or model folder beside one whose name differs
only in case (``V1`` beside ``v1``) is one folder there, so `case_twin` finds such a twin for the caller to
refuse.
"""

from __future__ import annotations

import re
from pathlib import Path

from .errors import InputError

PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")
RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"{port}{n}" for port in ("com", "lpt") for n in range(10))})
ALLOWED = (
    "letters, digits and . _ + - (starting with a letter or a digit, not ending with a dot, at most 128 "
    "characters; no /, \\, spaces or other characters; not a name Windows reserves: CON, PRN, AUX, NUL, COM0-9, "
    "LPT0-9, with or without an extension)"
)


class NotAName(InputError):
    """A value that becomes part of a path is not a plain name."""


def is_plain_name(value: object) -> bool:
    """Whether `value` can stand as one folder or file name (see the module's docstring)."""
    return (
        isinstance(value, str)
        and PLAIN_NAME.fullmatch(value) is not None
        and not value.endswith(".")
        and value.split(".", 1)[0].lower() not in RESERVED
    )


def check_name(value: str, what: str, why: str = "it names a folder") -> str:
    """`value`, when it is a plain name; else NotAName, worded for the user: `what` names the value (an option,
    a field), `why` says which path it becomes part of."""
    if not is_plain_name(value):
        raise NotAName(f"{what} {value!r}: {why}, so it must be a plain name: {ALLOWED}")
    return value


def case_twin(parent: Path, name: str) -> str | None:
    """The name of another entry of `parent` that differs from `name` only in case (one folder on a file system
    that folds case), or None. An unreadable or missing `parent` has none."""
    try:
        names = [entry.name for entry in parent.iterdir()]
    except OSError:
        return None
    return next((other for other in sorted(names) if other != name and other.casefold() == name.casefold()), None)
