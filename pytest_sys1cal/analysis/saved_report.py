"""What the offline commands (power, contamination) read from a saved JSON report: each rendering's OVL,
the dataset's sha256, and the model's name, version and source."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .paired import COLUMNS
from .primitives import ovl


def rendering_ovl(items: Sequence[Mapping[str, Any]], primitive: str) -> np.ndarray:
    """OVL_i = 1 − |p̄_i − p*_i| of each rendering (p̄_i its repeat mean, as in Table 1); NaN where the
    primitive was not asked."""
    column = COLUMNS[primitive][0]
    p = np.asarray([np.nan if item.get(column) is None else float(item[column]) for item in items])
    return ovl(p, np.asarray([float(item["p_star"]) for item in items]))


def dataset_sha(report: Mapping[str, Any]) -> str | None:
    return (report.get("dataset") or {}).get("sha256")


def model_source(report: Mapping[str, Any]) -> str | None:
    """How the report's answers were obtained: "recorded", or "reconstructed" from published outputs."""
    return (report.get("model") or {}).get("source")


def model_and_version(model: Mapping[str, Any]) -> str:
    """A report's `model` block as words, e.g. "jev jev-1.13.0"."""
    return f"{model.get('name')} {model.get('version')}"
