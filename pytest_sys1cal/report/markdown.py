"""Markdown for pull-request comments and GitHub's job summary (``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..vocabulary import FAILED, INCONCLUSIVE, PASSED
from .gates import gate_table
from .paper_tables import build_tables
from .table import markdown


def summary_markdown(result: Mapping[str, Any]) -> str:
    model, dataset = result["model"], result["dataset"]
    all_gates = result.get("gates", [])
    failed = [g for g in all_gates if g.get("verdict") == FAILED]
    undecided = [g for g in all_gates if g.get("verdict") == INCONCLUSIVE]
    if failed:
        verdict = f"❌ {len(failed)} gate(s) FAILED"
    elif undecided:
        verdict = f"⚠️ {len(undecided)} comparison(s) inconclusive: not passed"
    elif any(g.get("verdict") == PASSED for g in all_gates):
        verdict = "✅ every gate in force passed"
    else:
        verdict = "no gate decided this run"
    lines = [
        f"### Sys1Cal calibration: {model['name']} {model['version']} — {verdict}",
        "",
        f"{model['source']} cassettes, {result['repeats']} repeat(s), dataset {dataset['name']} "
        f"(sha256 `{dataset['sha256'][:12]}`), {result['counts']['measured']} renderings measured.",
        "",
        *(f"> **Notice:** {notice}  " for notice in result.get("notices", [])),
        *([""] if result.get("notices") else []),
    ]
    gates = gate_table(result)
    tables = ([gates] if gates else []) + build_tables(result)
    for table in tables:
        lines += markdown(table)
    return "\n".join(lines) + "\n"
