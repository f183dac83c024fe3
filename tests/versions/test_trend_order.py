"""The trend orders versions by when they were recorded (issue 37): a manifest's `recorded_at`, not the name (a
team's names need not sort: prod-green, then prod-aqua, then prod-blue); folders without a time (the bundled
reference, reconstructed from published outputs) first; ties by name in version order. Real folders on disk,
replayed by the trend itself."""

from __future__ import annotations

import shutil
from pathlib import Path

from pytest_sys1cal.versions.replay import version_folders
from tests.degraded import degrade
from tests.version_roots import JEV, edit_manifest


def test_versions_follow_their_recording_times_not_their_names(tmp_path: Path) -> None:
    from tests.versions.test_trend import trend_of

    root = tmp_path / "cassettes"
    shutil.copytree(JEV, root / "jev" / "jev-1.13.0")  # recorded_at: null (reconstructed)
    times = {"prod-green": "2026-11-02T09:00:00+00:00", "prod-aqua": "2026-11-20T18:30:00+01:00",
             "prod-blue": "2026-11-20T18:00:00+00:00"}  # fmt: skip
    for weight, (name, when) in zip((0.1, 0.2, 0.3), times.items(), strict=True):
        edit_manifest(degrade(JEV, root, name, weight=weight), recorded_at=when)
    expected = ["jev-1.13.0", "prod-green", "prod-aqua", "prod-blue"]  # 18:30+01:00 is 17:30 UTC, before 18:00
    assert version_folders(root, "jev") == expected
    trend = trend_of(root, thresholds=None)
    assert [row["version"] for row in trend["versions"]] == expected
    assert [(step["from"], step["to"]) for step in trend["steps"]] == list(zip(expected, expected[1:], strict=False))


def test_without_recording_times_the_names_decide_in_version_order(tmp_path: Path) -> None:
    root = tmp_path / "cassettes"
    for name in ("jev-1.10.0", "jev-1.9.0", "jev-1.13.0"):
        shutil.copytree(JEV, root / "jev" / name)
    edit_manifest(root / "jev" / "jev-1.9.0", recorded_at="not a time")  # unreadable: as if none
    assert version_folders(root, "jev") == ["jev-1.9.0", "jev-1.10.0", "jev-1.13.0"]
