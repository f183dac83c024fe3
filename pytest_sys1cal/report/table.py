"""The one table type of every renderer, its cell formats, and its two layouts: aligned text (terminal and
the offline commands) and Markdown (job summary)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..defaults import P_FLOOR
from ..escape import Code, markdown_text


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


def fmt_interval(bounds: list[float] | None, digits: int = 3) -> str:
    return "—" if bounds is None else f"[{fmt(bounds[0], digits)}, {fmt(bounds[1], digits)}]"


def fmt_p(p: float | None, floored: bool = False) -> str:
    """floored: a test's p-value, reported floored at P_FLOOR (the paper's own statistics are not)."""
    if p is None:
        return "—"
    if floored and p <= P_FLOOR:
        return f"≤{P_FLOOR:g}"
    return f"{p:.2g}" if p < 1e-3 else f"{p:.3f}"


def fmt_t(t: float | None, df: int | None) -> str:
    return "—" if t is None else f"{t:.2f} ({df})"


def aligned(columns: list[str], rows: list[list[str]]) -> list[str]:
    """Header, rule and rows in aligned columns: the first (labels) left-aligned, the rest (numbers) right."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(columns, *rows, strict=True)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            str(cell).ljust(width) if i == 0 else str(cell).rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(columns), "  ".join("-" * w for w in widths), *(line(row) for row in rows)]


def markdown(table: Table) -> list[str]:
    """The table as GitHub Markdown: bold title, header, rows (numbers right-aligned), notes in italics. Every
    text is data (escape.py): a cell may hold a family name from a dataset, a version, a server's words; a cell
    that is already a code span (escape.code_span) is kept as it is."""

    def escape(text: str) -> str:
        return text if isinstance(text, Code) else markdown_text(text)

    lines = [f"**{escape(table.title)}**", "", "| " + " | ".join(map(escape, table.columns)) + " |"]
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(table.columns) - 1)) + "|")
    lines += ["| " + " | ".join(escape(cell) for cell in row) + " |" for row in table.rows]
    lines += [""] + [f"_{escape(note)}_  " for note in table.notes]
    return lines + [""]
