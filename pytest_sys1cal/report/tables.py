"""The paper's tables as plain data, shared by the terminal and Markdown renderers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a table cell; '—' for a statistic that could not be computed."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table1(result: Mapping[str, Any]) -> Table:
    prims = result["primitives"]
    rows = [
        [name.capitalize(), str(stats["n"]), fmt(stats["mean_tv"], 4), fmt(stats["mean_ovl"]), fmt(stats["median_ovl"])]
        for name, stats in prims.items()
    ]
    return Table(
        title="Table 1: distance to the exact p* (OVL = 1 − TV)",
        columns=["primitive", "n", "mean TV", "mean OVL", "median OVL"],
        rows=rows,
        notes=["Score uses its expectation μ_S = Σ q_j·j/9; each value is the mean over repeats."],
    )


# The order in which the summary prints the tables; each builder returns None when it has nothing to show.
TABLES: list[Callable[[Mapping[str, Any]], Table | None]] = [table1]


def build_tables(result: Mapping[str, Any]) -> list[Table]:
    return [table for build in TABLES if (table := build(result)) is not None]
