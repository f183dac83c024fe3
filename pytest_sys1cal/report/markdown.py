"""Markdown for pull-request comments and GitHub's job summary (``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .gates import gate_table
from .tables import Table, build_tables


def _escape(cell: str) -> str:
    return cell.replace("|", "\\|")


def format_table(table: Table) -> list[str]:
    lines = [f"**{table.title}**", "", "| " + " | ".join(map(_escape, table.columns)) + " |"]
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(table.columns) - 1)) + "|")
    lines += ["| " + " | ".join(_escape(cell) for cell in row) + " |" for row in table.rows]
    lines += [""] + [f"_{note}_  " for note in table.notes]
    return lines + [""]


def summary_markdown(result: Mapping[str, Any]) -> str:
    model, dataset = result["model"], result["dataset"]
    failed = [g for g in result.get("gates", []) if g.get("verdict") == "FAILED"]
    verdict = f"❌ {len(failed)} gate(s) FAILED" if failed else "✅ all measured gates passed"
    lines = [
        f"### Sys1Cal calibration: {model['name']} {model['version']} — {verdict}",
        "",
        f"{model['source']} cassettes, {result['repeats']} repeat(s), dataset {dataset['name']} "
        f"(sha256 `{dataset['sha256'][:12]}`), {result['counts']['measured']} renderings measured.",
        "",
    ]
    gates = gate_table(result)
    tables = ([gates] if gates else []) + build_tables(result)
    for table in tables:
        lines += format_table(table)
    return "\n".join(lines) + "\n"
