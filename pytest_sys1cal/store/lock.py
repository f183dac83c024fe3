"""The lock a recording holds on its cassette folder, so that two recordings into one folder at once do not
both pay for the same renderings (and the second does not sweep the first's half-written files).

The lock is a file, ``<version folder>/.recording.lock``, holding the pid, host and start time of the
recording that holds it. It is created atomically with its content (a temporary file hard-linked to the
lock's name, which fails when the name exists: exclusive on local disks and NFS alike), and removed when
the recording ends, cleanly or not. A lock left by a recording that was killed (``kill -9``) names a
process that no longer runs on this host: the next recording takes it over and says so. A lock held from
another host cannot be judged: the recording is refused, saying which file to delete if nothing runs there.
The lock is a dot-file at the folder's top, so it is never taken for a cassette (``<family>/<id>.json``).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import socket
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import InputError

LOCK_NAME = ".recording.lock"


class FolderLocked(InputError):
    """Another live recording holds the folder."""


@dataclass(frozen=True)
class Holder:
    """Who holds a lock: the process, its host, and when its recording started (UTC)."""

    pid: int
    host: str
    started: str

    @classmethod
    def this_process(cls) -> Holder:
        now = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
        return cls(os.getpid(), socket.gethostname(), now)

    def describe(self) -> str:
        if self.pid < 0:
            return "the lock file cannot be read, so who holds it is unknown"
        return f"pid {self.pid} on host {self.host}, started {self.started}"

    def running(self) -> bool | None:
        """Whether the holder still runs: None when it is on another host (it cannot be told from here)."""
        if self.host != socket.gethostname():
            return None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # another user's process: alive
            return True
        except OSError:
            return None
        return True


UNREADABLE = Holder(-1, "(unknown: the lock file is not readable)", "(unknown)")


class FolderLock:
    """The recording lock of the folder `folder` (created if need be when the lock is taken)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.path = folder / LOCK_NAME
        self.held: Holder | None = None

    def acquire(self) -> str | None:
        """Take the lock, or raise FolderLocked naming the recording that holds it and what to do. Returns a
        notice when it took over the lock of a recording that no longer runs, else None."""
        me = Holder.this_process()
        notice = None
        for _attempt in range(5):  # the lock may vanish or be replaced between two looks at it
            if self._created(me):
                self.held = me
                return notice
            holder = self._read()
            if holder is None:
                continue
            running = holder.running()
            if running is not False or holder.pid == me.pid:
                raise FolderLocked(self._refusal(holder, running))
            if self._remove_stale(holder):
                notice = (
                    f"sys1cal: took over {self.path}: the recording that held it ({holder.describe()}) no longer "
                    "runs; what it left half-written is swept, and what it saved is kept"
                )
        raise FolderLocked(f"{self.path}: could not take the recording lock (it kept changing); try again")

    def release(self) -> None:
        """Remove the lock if this process holds it (idempotent)."""
        if self.held is None:
            return
        if self._read() == self.held:
            with contextlib.suppress(OSError):
                self.path.unlink()
        self.held = None

    def _created(self, holder: Holder) -> bool:
        """`_create`, a folder in which no file can be created (read-only, full) refused in one line."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            return self._create(holder)
        except OSError as exc:
            raise FolderLocked(
                f"{self.folder}: cannot take the recording lock, no file can be created there "
                f"({exc.strerror or type(exc).__name__}); make the folder writable or record into another one. "
                "Nothing was sent"
            ) from None

    def _create(self, holder: Holder) -> bool:
        """Create the lock with `holder` in it, atomically; False when it exists."""
        temporary = self.folder / f"{LOCK_NAME}.{holder.pid}.tmp"
        temporary.write_text(json.dumps(asdict(holder)) + "\n", encoding="utf-8")
        try:
            os.link(temporary, self.path)
        except (FileExistsError, FileNotFoundError):
            return False
        finally:
            with contextlib.suppress(OSError):
                temporary.unlink()
        return True

    def _read(self) -> Holder | None:
        """The holder named in the lock; None when there is no lock."""
        return _read_holder(self.path)

    def _remove_stale(self, holder: Holder) -> bool:
        """Move the stale lock aside and delete it. When the lock was replaced in between (another recording
        took it over first), it is put back and False returned."""
        aside = self.folder / f"{LOCK_NAME}.stale.{os.getpid()}"
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return False
        moved = _read_holder(aside)
        if moved != holder:
            with contextlib.suppress(OSError):
                os.link(aside, self.path)
            aside.unlink(missing_ok=True)
            return False
        aside.unlink(missing_ok=True)
        return True

    def _refusal(self, holder: Holder, running: bool | None) -> str:
        state = "is running" if running else "may be running (it cannot be checked from this host)"
        return (
            f"{self.folder}: another recording into this folder {state} ({holder.describe()}; lock file "
            f"{self.path}); two recordings at once would both pay for the same renderings. Nothing was sent: "
            "wait for it to end, then run this again (record mode once records only what is still missing), "
            f"or, if no recording is running there, delete {self.path}"
        )


def _read_holder(path: Path) -> Holder | None:
    """The holder a lock file names; None when there is no such file. A file that cannot be read as a lock is
    reported as held by an unknown process on an unknown host: never silently taken over."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Holder(int(data["pid"]), str(data["host"]), str(data["started"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return UNREADABLE
