"""The JSON reports of the four bundled cassette sets, pinned.

Across machines and library versions the last digits of a float may differ (SIMD paths, numpy releases), so
the pinned files are compared key by key: every key, text, whole number, boolean and null exactly, and every
float within a relative tolerance of 1e-9 (absolute 1e-12 near zero). Byte-identity is the promise for one
machine and one set of libraries: the same run twice, and with ``-n 2`` against ``-n 0``, give the same bytes.

When a change to the report is intended, rewrite the pinned files from the repository root with

    pytest --sys1cal --model jev --sys1cal-report=tests/golden/jev-report.json
    pytest --sys1cal --model semif --sys1cal-report=tests/golden/semif-report.json
    pytest --sys1cal --model semif --sys1cal-model-version=gemma-3-270m-q4_k_m --sys1cal-report=tests/golden/gemma-report.json
    pytest --sys1cal --model systemone --sys1cal-model-version=typed-gguf-smollm2-135m --sys1cal-report=tests/golden/typed-gguf-report.json

and review their diff with the change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.reports import differences
from tests.runs import GOLDEN, REPO, sys1cal

SETS = {
    "jev": ("--model=jev",),
    "semif": ("--model=semif",),
    "gemma": ("--model=semif", "--sys1cal-model-version=gemma-3-270m-q4_k_m"),
    "typed-gguf": ("--model=systemone", "--sys1cal-model-version=typed-gguf-smollm2-135m"),
}


def run_report(pytester: pytest.Pytester, path: Path, *args: str) -> bytes:
    result = sys1cal(
        pytester,
        *args,
        f"--sys1cal-cassettes={REPO / 'cassettes'}",
        f"--sys1cal-thresholds={REPO / 'thresholds.yaml'}",
        f"--sys1cal-report={path}",
        cheap=False,  # the pinned reports are the default run's, intervals and splits included
    )
    assert result.ret == 0, result.stdout.str()[-2000:]
    return path.read_bytes()


@pytest.mark.parametrize("name", sorted(SETS))
def test_the_bundled_report_equals_the_pinned_one_within_the_tolerance(
    pytester: pytest.Pytester, tmp_path: Path, name: str
) -> None:
    new = json.loads(run_report(pytester, tmp_path / "report.json", *SETS[name]))
    pinned = GOLDEN / f"{name}-report.json"
    changed = differences(new, json.loads(pinned.read_text(encoding="utf-8")))
    assert not changed, f"the {name} report differs from {pinned.name} at:\n" + "\n".join(changed[:20])


def test_one_machine_gives_the_same_bytes_twice_and_with_xdist(pytester: pytest.Pytester, tmp_path: Path) -> None:
    first = run_report(pytester, tmp_path / "first.json", *SETS["jev"])
    again = run_report(pytester, tmp_path / "again.json", *SETS["jev"])
    distributed = run_report(pytester, tmp_path / "distributed.json", *SETS["jev"], "-n", "2")
    assert again == first
    assert distributed == first


def test_the_comparison_sees_a_float_beyond_the_tolerance_and_a_changed_type() -> None:
    pinned = {"a": {"x": 0.5, "n": 3, "t": "FAILED"}, "items": [{"p": 1e-13}]}
    assert differences(json.loads(json.dumps(pinned)), pinned) == []
    assert differences({"a": {"x": 0.5 * (1 + 5e-10), "n": 3, "t": "FAILED"}, "items": [{"p": 0.0}]}, pinned) == []
    assert differences({"a": {"x": 0.5 * (1 + 2e-9), "n": 3, "t": "FAILED"}, "items": [{"p": 1e-13}]}, pinned) == [
        f"a.x: {0.5 * (1 + 2e-9)!r}, pinned 0.5"
    ]
    assert differences({"a": {"x": 0.5, "n": 3.0, "t": "failed"}, "items": []}, pinned) == [
        "a.n: 3.0, pinned 3",
        "a.t: 'failed', pinned 'FAILED'",
        "items: 0 entries, pinned 1",
    ]
    assert differences({"a": {"x": 0.5, "n": 3, "t": "FAILED", "new": 1}, "items": [{"p": 1e-13}]}, pinned) == [
        "a.new: only in the new report"
    ]
