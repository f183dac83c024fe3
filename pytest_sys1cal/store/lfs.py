"""Git LFS pointers where cassettes should be: a repository that keeps its cassettes in Git LFS, cloned without
the LFS objects (no ``git lfs pull``, an ``actions/checkout`` without ``lfs: true``), holds in each file a
three-line pointer (``version https://git-lfs.github.com/spec/v1``, ``oid sha256:…``, ``size …``) instead of the
cassette. Restoring from git or re-recording would not help; fetching the objects does. So a folder of pointers
is one usage error saying so, once, before any item runs, and a pointer met later (one file of many) says so in
its item's line."""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError

HEADER = b"version https://git-lfs.github.com/spec/"
FETCH = "git lfs pull"
ADVICE = f"it is a Git LFS pointer, not the cassette (the LFS objects were not fetched): run {FETCH}"


class LfsPointers(InputError):
    """The cassettes (or the manifest) of a folder are Git LFS pointers."""


def is_pointer(path: Path | str) -> bool:
    """Whether the file at `path` is a Git LFS pointer (False when it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(HEADER)) == HEADER
    except OSError:
        return False


def check_not_lfs_pointers(folder: Path) -> None:
    """Refuse a version folder whose cassettes are LFS pointers, in one line counting them. Cheap when they are
    not: one file is looked at."""
    files = folder.glob("*/*.json")
    first = next(files, None)
    if first is None or not is_pointer(first):
        return
    everything = [first, *files]
    pointers = sum(1 for path in everything if is_pointer(path))
    raise LfsPointers(
        f"{folder}: {pointers} of {len(everything)} cassettes are Git LFS pointers, not the recorded files (the "
        f"LFS objects were not fetched): run {FETCH} in the repository (git lfs install first where Git LFS is "
        "new; on GitHub Actions, actions/checkout with lfs: true), then run this again"
    )
