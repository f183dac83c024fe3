"""A rendering's row as it travels from its item (maybe on an xdist worker) to the analysis: the samples
packed as doubles when they are floats (what the built-in adapters give), as JSON otherwise, and read back
exactly as they were given, through the wire too."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from pytest_sys1cal.dataset import load_dataset
from pytest_sys1cal.results import ResultRow

RENDERING = load_dataset("sys1cal-v1").renderings[0]


def _sample(seed: int) -> dict[str, Any]:
    """A systemone-shaped sample with awkward floats (tiny, irrational, a subnormal)."""
    score = [math.pi / (seed + j + 1) / 100 for j in range(9)]
    score.append(5e-324 if seed % 2 else 1.0 - sum(score))
    return {"noul": 1 / 3 + seed * 1e-17, "choice": 0.1 * seed % 1, "choice_swapped": 2**-40, "score": score}


def _through_the_wire(row: ResultRow) -> ResultRow:
    """As an xdist worker's report carries it: JSON-able (pytest-reportlog writes it as JSON too)."""
    return ResultRow.from_wire(json.loads(json.dumps(row.to_wire())))


@pytest.mark.parametrize("repeats", [1, 3, 10])
def test_float_samples_are_packed_and_read_back_exactly(repeats: int) -> None:
    samples = [_sample(seed) for seed in range(repeats)]
    row = ResultRow.measured(RENDERING, samples, server_model="m", recorded=True)
    assert row.values is not None and row.samples_json is None  # packed: no JSON text kept
    assert row.samples == samples  # exactly: == on every float, keys in their order
    assert [list(sample) for sample in row.samples] == [list(sample) for sample in samples]
    back = _through_the_wire(row)
    assert back == row and back.samples == samples
    assert back.layout is row.layout  # one shape tuple shared by every row of that shape
    assert hash(back) == hash(row)


@pytest.mark.parametrize(
    "samples",
    [
        [{"noul": 1, "score": [0.5, 0.5]}],  # an integer
        [{"noul": 0.5, "extra": None}],
        [{"noul": 0.5, "nested": {"a": 0.1}}],
        [{"noul": 0.5, "score": []}],
        [{"noul": 0.5, "score": [0.5, 1]}],
        [{"noul": 0.5}, {"noul": 0.5, "choice": 0.2}],  # repeats of different shapes
        [{"noul": 0.5}, {"choice": 0.2}],
        [],
    ],
    ids=["int", "none", "nested", "empty-list", "int-in-list", "more-keys", "other-keys", "no-samples"],
)
def test_other_samples_stay_json_and_read_back_as_given(samples: list[dict[str, Any]]) -> None:
    row = ResultRow.measured(RENDERING, samples)
    assert row.values is None and row.samples_json is not None
    assert row.samples == samples
    assert _through_the_wire(row).samples == samples


def test_a_failed_row_has_no_samples_through_the_wire_too() -> None:
    row = ResultRow.failed(RENDERING, "why")
    assert row.samples == [] and row.error == "why"
    back = _through_the_wire(row)
    assert back == row and back.samples == []
