"""Terminal summary lines from one result object; the plugin writes them through pytest's reporter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .tables import Table, build_tables

# (text, markup) pairs: markup is passed to TerminalReporter.write_line (e.g. {"red": True}).
Line = tuple[str, dict[str, bool]]


def format_table(table: Table) -> list[Line]:
    widths = [max(len(str(cell)) for cell in column) for column in zip(table.columns, *table.rows, strict=True)]

    def row(cells: list[str]) -> str:
        # First column left-aligned (labels), the rest right-aligned (numbers).
        return "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    lines: list[Line] = [
        (table.title, {"bold": True}),
        (row(table.columns), {}),
        ("  ".join("-" * w for w in widths), {}),
    ]
    lines += [(row(cells), {}) for cells in table.rows]
    lines += [(f"  {note}", {}) for note in table.notes]
    return lines


def summary_lines(result: Mapping[str, Any]) -> list[Line]:
    model, dataset = result["model"], result["dataset"]
    counts = result["counts"]
    lines: list[Line] = [
        (
            f"{model['name']} {model['version']} ({model['source']} cassettes, {result['repeats']} repeat"
            f"{'s' if result['repeats'] != 1 else ''}) on {dataset['name']}: {counts['measured']} of "
            f"{counts['renderings']} selected renderings measured, {counts['latent_problems']} latent problems",
            {},
        )
    ]
    if counts["failed"]:
        lines.append((f"{counts['failed']} rendering(s) failed and are left out of every table below", {"red": True}))
    for table in build_tables(result):
        lines.append(("", {}))
        lines += format_table(table)
    return lines
