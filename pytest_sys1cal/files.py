"""Writing files so that a reader never sees half of one: cassettes, manifests and reports alike."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomic(
    path: Path, text: str, *, mode: int | None = None, before_replace: Callable[[], None] | None = None
) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half a file. The file
    gets the permissions the user's umask gives any new file: it is created with mode 0o666, which the kernel
    masks (mkstemp would make it 0600, and reading the umask would mean setting it, for the whole process);
    `mode` keeps an edited file's own instead. `before_replace` runs once the new text is on disk, right before
    the rename, and may raise to leave the file as it was (an editor's "changed since read" check)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and not exc.filename:
            exc.filename = str(path)  # a write or close that failed (a full disk) says which file it was for
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


def written_for(exc: OSError, default: Path | None = None) -> Path | None:
    """The file an OSError was about: for a failed `write_atomic`, the file it was writing (not its temporary
    `.NAME.<random>.tmp` beside it); `default` when the error names none."""
    if not exc.filename:
        return default
    failed = Path(str(exc.filename))
    name = failed.name
    if name.startswith(".") and name.endswith(".tmp"):
        return failed.with_name(name[1:].rsplit(".", 2)[0])
    return failed
