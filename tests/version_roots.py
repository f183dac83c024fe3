"""A cassette root holding two versions of Jev side by side, for the tests of version baselines and the trend:
a copy of the bundled `jev-1.13.0` and, as `jev-1.14.0`, its degraded copy (tests/degraded.py: every answer
mixed half-way with uniform, so Noul and Score get worse and Jev's overconfident Choice gets better)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.degraded import degrade, improve
from tests.runs import REPO

JEV = REPO / "cassettes" / "jev" / "jev-1.13.0"
OLD, NEW = "jev-1.13.0", "jev-1.14.0"
BETTER = "jev-1.13.1"  # the improved copy (better_version)


def two_versions(root: Path) -> Path:
    """`root`/jev/{jev-1.13.0, jev-1.14.0}; returns `root`."""
    shutil.copytree(JEV, root / "jev" / OLD)
    degrade(JEV, root, NEW)
    return root


def better_version(root: Path, share: float = 0.1) -> Path:
    """`root`/jev/jev-1.13.1: the bundled jev-1.13.0 with every answer moved `share` of the way to p* (a
    better model on every primitive); returns its folder."""
    from pytest_sys1cal.dataset import load_dataset

    p_star = {r.short_id: r.p_star for r in load_dataset("sys1cal-v1").renderings}
    return improve(JEV, root, BETTER, share, p_star)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def regression_rows(report: Path) -> list[dict[str, Any]]:
    """The upgrade-gate rows of a saved JSON report, whole (verdicts, Δ, bounds, details)."""
    data = json.loads(report.read_text(encoding="utf-8"))
    return [gate for gate in data["gates"] if gate["name"].startswith("regression.")]


def edit_manifest(folder: Path, **changes: Any) -> None:
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest.update(changes)
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
