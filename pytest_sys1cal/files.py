"""Writing files so that a reader never sees half of one: cassettes, manifests and reports alike."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

# Files get the permissions the user's umask gives any new file (mkstemp alone would make them 0600). Read
# once, at import, on the main thread: os.umask can only be read by setting it.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            os.fchmod(handle.fileno(), 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cannot_create_in(folder: Path, name: str) -> str | None:
    """Why no new file can be created in `folder` (tried for real with a probe file beside `name`, removed at
    once: permission bits do not stop root, a read-only file system or /proc does), or None when one can."""
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{name}.", suffix=".probe", dir=folder)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None
