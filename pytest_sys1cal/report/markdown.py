"""Markdown for pull-request comments and GitHub's job summary (``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .breakdown_tables import family_delta_table
from .document import ReportDocument
from .gates import comparison_table, gate_table, headline
from .interrupted import interrupted_line, selected
from .paper_tables import build_tables
from .table import markdown

ICONS = {"failed": "❌", "undecided": "⚠️", "passed": "✅", "none": "➖"}


def summary_markdown(result: ReportDocument, html: Path | None = None, environ: Mapping[str, str] | None = None) -> str:
    """html: the HTML report written by this run, linked as the job's artifact (run URL from GitHub's environ)."""
    model, dataset = result["model"], result["dataset"]
    kind, phrase = headline(result)
    verdict = f"{ICONS[kind]} {phrase}"
    lines = [
        f"### Sys1Cal calibration: {model['name']} {model['version']} — {verdict}",
        "",
        f"{model['source']} cassettes, {result['repeats']} repeat(s), dataset {dataset['name']} "
        f"(sha256 `{dataset['sha256'][:12]}`), {measured(result)}.",
        "",
        *(f"> **{text[:1].upper()}{text[1:]}**  " for text in [interrupted_line(result)] if text),
        *(f"> **Notice:** {notice}  " for notice in result.get("notices", [])),
        *([""] if result.get("notices") or result.get("interrupted") else []),
    ]
    if html is not None:
        lines += [html_link(html, environ or {}), ""]
    comparisons = [gate_table(result), comparison_table(result), family_delta_table(result)]
    tables = [table for table in comparisons if table] + (build_tables(result) if result["counts"]["measured"] else [])
    for table in tables:
        lines += markdown(table)
    return "\n".join(lines) + "\n"


def measured(result: ReportDocument) -> str:
    """ "365 renderings measured"; on an interrupted run, of how many selected."""
    count = result["counts"]["measured"]
    if result.get("interrupted"):
        return f"{count} of {selected(result)} selected renderings measured"
    return f"{count} renderings measured"


def html_link(html: Path, environ: Mapping[str, str]) -> str:
    """Where the HTML report is: the run's artifacts on GitHub Actions (upload it with actions/upload-artifact)."""
    keys = ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
    where = "this job's artifacts"
    if all(environ.get(key) for key in keys):
        server, repository, run_id = (environ[key] for key in keys)
        where = f"[this run's artifacts]({server}/{repository}/actions/runs/{run_id}#artifacts)"
    return f"📊 Figures and every table: the HTML report `{html.name}`, in {where} (open it from disk, it needs no network)."
