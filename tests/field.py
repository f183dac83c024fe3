"""What the field-case tests (issues 25 and 28: names, server text, pytest's outputs, other plugins, SIGTERM)
share: a dataset of a few renderings written to a file of its own, a hash of every file under a folder, and
the command line of a recording against a loopback server."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pytest_sys1cal.dataset import Rendering, load_dataset


def subset(path: Path, count: int, start: int = 0) -> list[Rendering]:
    """`count` renderings of the bundled dataset (from `start`), as a dataset file of their own at `path`."""
    dataset = load_dataset("sys1cal-v1")
    chosen = list(dataset.renderings[start : start + count])
    source = dataset.path.read_text(encoding="utf-8").splitlines()
    path.write_text("".join(source[r.line - 1] + "\n" for r in chosen), encoding="utf-8")
    return chosen


def first_problems(path: Path, problems: int) -> Path:
    """The renderings of the bundled dataset's first `problems` latent problems, as a dataset file of their own."""
    dataset = load_dataset("sys1cal-v1")
    wanted = set(list(dict.fromkeys(r.latent_instance_id for r in dataset.renderings))[:problems])
    source = dataset.path.read_text(encoding="utf-8").splitlines()
    chosen = [r for r in dataset.renderings if r.latent_instance_id in wanted]
    path.write_text("".join(source[r.line - 1] + "\n" for r in chosen), encoding="utf-8")
    return path


def tree_hashes(root: Path) -> dict[str, str]:
    """The sha256 of every file under `root` and the name of every folder (an empty one included), by path:
    two snapshots are equal only when nothing under `root` was written, created, removed or renamed."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        for name in dirs:
            found[str((base / name).relative_to(root)) + "/"] = "folder"
        for name in files:
            path = base / name
            found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def environ(**extra: str) -> dict[str, str]:
    """The environment of a pytest subprocess: no PYTEST_*, SYS1CAL_* or GitHub summary of this run's own."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "SYS1CAL_", "TYPESAFE_")) and k != "GITHUB_STEP_SUMMARY"
    }
    return {**kept, **extra}
