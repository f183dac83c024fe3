"""The JSON report (``--sys1cal-report``): the run's numbers under the stable keys of docs/report.md, and writing
it. Reading one back (baselines, the offline commands) is report_file.py's.

No timestamps or timings: the same cassettes and seed give a byte-identical file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..files import write_atomic
from ..vocabulary import REPORT_SCHEMA


def report_document(
    *,
    model: Mapping[str, Any],
    dataset: Mapping[str, Any],
    repeats: int,
    seed: int,
    analysis: Mapping[str, Any],
    gates: Sequence[Mapping[str, Any]] = (),
    repeats_per_answer: int = 1,
    notices: Sequence[str] = (),
) -> dict[str, Any]:
    """The JSON report's document from its parts (run_report.py builds the run's). repeats: samples per
    rendering; repeats_per_answer: model repeats averaged into each sample (10 for cassettes reconstructed
    from published means)."""
    return {
        "schema": REPORT_SCHEMA,
        "generator": f"pytest-sys1cal {__version__}",
        "model": dict(model),
        "dataset": dict(dataset),
        "repeats": repeats,
        "repeats_per_answer": repeats_per_answer,
        "seed": seed,
        **analysis,
        "gates": list(gates),
        "notices": list(notices),
    }


def dumps(report: Mapping[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"


def write_report(path: Path, report: Mapping[str, Any]) -> None:
    write_atomic(path, dumps(report))
