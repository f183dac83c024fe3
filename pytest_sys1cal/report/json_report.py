"""The JSON report (``--sys1cal-report``): the run's numbers under the stable keys of docs/report.md; writing it, and
reading one back (baselines, contamination and power checks).

No timestamps or timings: the same cassettes and seed give a byte-identical file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import InputError
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


class ReportError(InputError):
    """A file that is not a readable sys1cal JSON report; the message names the file."""


def dumps(report: Mapping[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"


def write_report(path: Path, report: Mapping[str, Any]) -> None:
    write_atomic(path, dumps(report))


def read_report(path: str | Path) -> dict[str, Any]:
    """Read and minimally validate a JSON report written by ``--sys1cal-report``. Raises ReportError."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: not a JSON file ({exc})") from None
    validate_report(data, str(path))
    return data


def validate_report(data: Any, where: str = "the report") -> None:
    """Raise ReportError unless `data` is a sys1cal report whose items carry what these commands read."""
    found = data.get("schema") if isinstance(data, Mapping) else type(data).__name__
    if found != REPORT_SCHEMA:
        raise ReportError(
            f"{where}: not a sys1cal report (schema {found!r}, expected {REPORT_SCHEMA!r}; write one with --sys1cal-report)"
        )
    items = data.get("items")
    if not isinstance(items, list) or not items:
        raise ReportError(f"{where}: the report has no items[] (no rendering was measured)")
    for key in ("instance_id", "latent_instance_id", "family", "representation", "p_star"):
        if any(not isinstance(item, Mapping) or item.get(key) is None for item in items):
            raise ReportError(f"{where}: an item lacks {key!r}; was it written by an older pytest-sys1cal?")
    for index, item in enumerate(items):
        problem = _unusable(item)
        if problem:
            raise ReportError(
                f"{where}: items[{index}] ({item['instance_id']}): {problem}; a report with unusable values is "
                "refused rather than compared on what is left (write it again with --sys1cal-report)"
            )


def _unusable(item: Mapping[str, Any]) -> str | None:
    """Why an item's values cannot be compared (None when they can): probabilities must be numbers in
    [0, 1] (or null where not asked), repeats a whole number ≥ 1."""
    for key in ("p_star", "p_noul", "p_choice", "p_choice_swapped", "mu_score"):
        value = item.get(key)
        if value is None and key != "p_star":
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            return f"{key} is {json.dumps(value)}, not a probability"
    repeats = item.get("repeats")
    if repeats is not None and (isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1):
        return f"repeats is {json.dumps(repeats)}, not a whole number ≥ 1"
    return None
