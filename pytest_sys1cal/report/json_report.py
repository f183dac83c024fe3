"""The JSON report (``--sys1cal-report``): the run's numbers under the stable keys of SPEC.md.

No timestamps or timings: the same cassettes and seed give a byte-identical file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..cassettes import write_atomic

SCHEMA = "sys1cal-report/1"


def build_report(
    *,
    model: Mapping[str, Any],
    dataset: Mapping[str, Any],
    repeats: int,
    seed: int,
    analysis: Mapping[str, Any],
    gates: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "generator": f"pytest-sys1cal {__version__}",
        "model": dict(model),
        "dataset": dict(dataset),
        "repeats": repeats,
        "seed": seed,
        **analysis,
        "gates": list(gates),
    }


def dumps(report: Mapping[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"


def write_report(path: Path, report: Mapping[str, Any]) -> None:
    write_atomic(path, dumps(report))
