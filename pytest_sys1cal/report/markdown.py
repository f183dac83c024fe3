"""Markdown for pull-request comments and GitHub's job summary (``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from ..document import Comparison, ReportDocument
from ..escape import code_span, markdown_text
from ..gates.rows import Outcome
from ..run_report import Report
from .breakdown_tables import family_delta_table, representation_delta_table
from .gates import comparison_table, gate_table, headline
from .interrupted import interrupted_line, selected
from .paper_tables import build_tables
from .table import Table, markdown
from .upgrade_text import SUMMARY_TOP, baseline_line, moves_table, sentence, verdict_kind
from .why_text import why_lines, why_table

ICONS: dict[str, str] = {Outcome.FAILED: "❌", Outcome.UNDECIDED: "⚠️", Outcome.PASSED: "✅", Outcome.NONE: "➖"}
NO_COMPARISON = "no upgrade comparison made"  # the heading's words when no baseline was in force


def no_comparison_line() -> str:
    """Under the heading of a run without a baseline: its verdict is not an upgrade verdict, and how to get one."""
    return (
        "**No upgrade comparison was made:** this run had no baseline, so its verdict is the thresholds file's "
        "floors and ceilings alone, not whether this version is as good as the one it replaces. To compare, set "
        "`BASELINE_VERSION` in the workflow `init` wrote (or pass `--sys1cal-baseline=VERSION`, a version folder "
        "beside this one or a saved JSON report)."
    )


def summary_markdown(
    report: Report,
    html: Path | None = None,
    environ: Mapping[str, str] | None = None,
    workdir: Path | None = None,
) -> str:
    """html: the HTML report written by this run, linked as the job's artifact (run URL from GitHub's environ);
    workdir: where the run ran, whose absolute path (and the package's) is left out of every path shown. With
    a baseline the heading is the upgrade verdict, the absolute gates' line under it."""
    result = report.data
    model, dataset = result["model"], result["dataset"]
    comparison = result.get("comparison")
    md = markdown_text  # every text from the report is data: a server's words, a file's name (escape.py)
    lines = [*heading(report), ""]
    lines += [
        f"{md(model['source'])} cassettes, {result['repeats']} repeat(s), dataset {md(dataset['name'])} "
        f"(sha256 `{dataset['sha256'][:12]}`), {measured(result)}.",
        "",
        *(f"> **{md(text[:1].upper() + text[1:])}**  " for text in [interrupted_line(result)] if text),
        *(f"> **Notice:** {md(notice)}  " for notice in result.get("notices", [])),
        *([""] if result.get("notices") or result.get("interrupted") else []),
    ]
    if html is not None:
        lines += [html_link(html, environ or {}), ""]
    if comparison is not None:  # the upgrade first: its Δ table, the renderings that moved most, by family
        ordered = [comparison_table(report), why_table(result), coded_ids(moves_table(result, SUMMARY_TOP))]
        ordered += [family_delta_table(report), representation_delta_table(report), gate_table(report.gates)]
    else:
        ordered = [gate_table(report.gates), comparison_table(report), family_delta_table(report)]
    tables = [table for table in ordered if table] + (build_tables(result) if result["counts"]["measured"] else [])
    for table in tables:
        lines += markdown(table)
    return without_machine_paths("\n".join(lines) + "\n", workdir)


def coded_ids(table: Table | None) -> Table | None:
    """The renderings table with each node id as a code span, shown and copied as it is typed."""
    if table is None:
        return None
    return replace(table, rows=[[code_span(row[0]), *row[1:]] for row in table.rows])


def heading(report: Report) -> list[str]:
    """The summary's heading: the upgrade verdict and the absolute gates' line (with a baseline), else the
    run's gates in one phrase."""
    model = report.data["model"]
    comparison = report.data.get("comparison")
    md = markdown_text  # versions and locations come from files and servers: data (escape.py)
    if comparison is None:
        kind, phrase = headline(report.gates)
        return [
            f"### Sys1Cal calibration: {md(model['name'])} {md(model['version'])} — {ICONS[kind]} {phrase}; "
            f"{NO_COMPARISON}",
            "",
            no_comparison_line(),
        ]
    absolute = comparison["absolute_gates"]
    rounds = report.data.get("sequential")  # recorded in rounds: where it stopped, what it saved
    return [
        f"### {ICONS[verdict_kind(comparison['verdict'])]} Sys1Cal {md(comparison['headline'])}",
        "",
        *([f"**{md(sentence(rounds['line']))}.**", ""] if rounds else []),
        *why_markdown(comparison),
        f"{ICONS[absolute['outcome']]} **{md(sentence(absolute['line']))}** (the thresholds file's floors and "
        f"ceilings, beside the upgrade). {md(sentence(baseline_line(comparison)))}.",
    ]


def why_markdown(comparison: Comparison) -> list[str]:
    """The diagnosis under the verdict, one list item per primitive that did not pass (and a blank line after)."""
    lines = why_lines(comparison)
    return [*(f"- **Why:** {markdown_text(line)}" for line in lines), ""] if lines else []


def without_machine_paths(text: str, workdir: Path | None) -> str:
    """`text` with the absolute path of `workdir` and of the installed package's folder left out of every path:
    thresholds.yaml rather than /home/runner/work/project/project/thresholds.yaml."""
    package = Path(__file__).resolve().parent.parent.parent  # the folder holding pytest_sys1cal/
    for base in sorted({str(p) for p in (workdir, package) if p is not None}, key=len, reverse=True):
        text = text.replace(base.rstrip("/") + "/", "")
    return text


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
    name = code_span(html.name)  # any file name, backticks included, stays inert text (escape.py)
    return f"📊 Figures and every table: the HTML report {name}, in {where} (open it from disk, it needs no network)."
