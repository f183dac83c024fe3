"""Markdown for pull-request comments and GitHub's job summary (``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..vocabulary import FAILED
from .gates import gate_table
from .paper_tables import build_tables
from .table import markdown


def summary_markdown(result: Mapping[str, Any]) -> str:
    model, dataset = result["model"], result["dataset"]
    failed = [g for g in result.get("gates", []) if g.get("verdict") == FAILED]
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
        lines += markdown(table)
    return "\n".join(lines) + "\n"
