"""Reading a saved JSON report back (``--sys1cal-baseline``, ``python -m pytest_sys1cal power | contamination |
html``): the file read, parsed and checked to be a sys1cal report whose items carry what those readers use.
Writing one is report/json_report.py's."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import InputError
from .vocabulary import REPORT_SCHEMA


class ReportError(InputError):
    """A file that is not a readable sys1cal JSON report; the message names the file."""


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
