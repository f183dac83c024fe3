"""Markdown for pull-request comments and GitHub's job summary (``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..vocabulary import FAILED, INCONCLUSIVE, PASSED
from .breakdown_tables import family_delta_table
from .gates import comparison_table, gate_table
from .paper_tables import build_tables
from .table import markdown


def summary_markdown(
    result: Mapping[str, Any], html: Path | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """html: the HTML report written by this run, linked as the job's artifact (run URL from GitHub's environ)."""
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
    if html is not None:
        lines += [html_link(html, environ or {}), ""]
    comparisons = [gate_table(result), comparison_table(result), family_delta_table(result)]
    tables = [table for table in comparisons if table] + build_tables(result)
    for table in tables:
        lines += markdown(table)
    return "\n".join(lines) + "\n"


def html_link(html: Path, environ: Mapping[str, str]) -> str:
    """Where the HTML report is: the run's artifacts on GitHub Actions (upload it with actions/upload-artifact)."""
    keys = ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
    where = "this job's artifacts"
    if all(environ.get(key) for key in keys):
        server, repository, run_id = (environ[key] for key in keys)
        where = f"[this run's artifacts]({server}/{repository}/actions/runs/{run_id}#artifacts)"
    return f"📊 Figures and every table: the HTML report `{html.name}`, in {where} (open it from disk, it needs no network)."
