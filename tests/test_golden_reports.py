"""The JSON reports of the bundled cassettes, pinned byte for byte.

A change that moves any number, key or byte of the report fails here, so a refactoring can show it changed
nothing. When a change to the report is intended, rewrite the pinned files from the repository root with

    pytest --sys1cal --model jev --sys1cal-report=tests/golden/jev-report.json
    pytest --sys1cal --model semif --sys1cal-report=tests/golden/semif-report.json

and review their diff with the change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden"


def differing_keys(new: dict, old: dict, prefix: str = "") -> list[str]:
    """The key paths whose values differ, as far down as both sides are objects (items by position)."""
    keys = sorted(set(new) | set(old))
    out = []
    for key in keys:
        a, b = new.get(key), old.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += differing_keys(a, b, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key}")
    return out


@pytest.mark.parametrize("model", ["jev", "semif"])
def test_the_bundled_report_is_byte_identical_to_the_pinned_one(
    pytester: pytest.Pytester, tmp_path: Path, model: str
) -> None:
    report = tmp_path / "report.json"
    result = pytester.runpytest(
        "--sys1cal",
        f"--model={model}",
        f"--sys1cal-cassettes={REPO / 'cassettes'}",
        f"--sys1cal-thresholds={REPO / 'thresholds.yaml'}",
        f"--sys1cal-report={report}",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == 0, result.stdout.str()[-2000:]
    pinned = GOLDEN / f"{model}-report.json"
    new, old = report.read_bytes(), pinned.read_bytes()
    if new != old:
        changed = differing_keys(json.loads(new), json.loads(old))
        pytest.fail(f"the {model} report differs from {pinned.name} at: {', '.join(changed[:20])}", pytrace=False)
