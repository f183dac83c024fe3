"""The pull-request comment (``--sys1cal-markdown=PATH``): one compact Markdown text that says whether the upgrade
is safe. With a baseline: the upgrade verdict naming both versions and where the baseline came from, why each
primitive that did not pass moved (its diagnosis: miscalibration or lost discrimination), the Δ table with its
bounds and margins, the absolute gates' line (and which failed), and the renderings that moved
most; without one, the gates' verdict. It starts with a hidden marker (MARKER) by which the workflow that
`init` writes finds its earlier comment and edits it instead of adding another (commands/project_files.py).
Read from the report alone, so a saved report gives the same text (docs/report.md, "The pull-request
comment")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ..document import ReportDocument
from ..escape import code_span
from ..escape import markdown_text as md  # text from the report is data (escape.py)
from ..gates.rows import GateRow
from ..run_report import Report
from .gates import headline
from .markdown import ICONS, coded_ids, html_link, measured, why_markdown, without_machine_paths
from .table import Table, markdown
from .upgrade_text import (
    DELTA_NOTE,
    SUMMARY_TOP,
    baseline_line,
    comparison_of,
    delta_table,
    moves_summary,
    moves_table,
    sentence,
    verdict_kind,
)

MARKER = "<!-- pytest-sys1cal: pull-request comment -->"
FAILED_NAMED = 12  # failed absolute gates named by name; more are counted


def comment_markdown(
    report: Report,
    html: Path | None = None,
    environ: Mapping[str, str] | None = None,
    workdir: Path | None = None,
) -> str:
    result = report.data
    comparison = comparison_of(result)
    model = result["model"]
    lines = [MARKER]
    if comparison is None:
        outcome, phrase = headline(report.gates)
        lines += [
            f"### {ICONS[outcome]} Sys1Cal calibration: {md(model['name'])} {md(model['version'])} — {phrase}",
            "",
        ]
        lines += _failed_gates(report.gates.failed)
    else:
        kind = verdict_kind(comparison["verdict"])
        head = comparison["headline"].split(" (")[0] if comparison["summary"] else comparison["headline"]
        lines += [f"### {ICONS[kind]} Sys1Cal {md(head)}", ""]
        if comparison["summary"]:
            lines += [f"**{md(comparison['summary'])}**", ""]
        lines += why_markdown(comparison)
        stopped = f"; {measured(result)}" if result.get("interrupted") else ""
        lines += [f"{md(sentence(baseline_line(comparison)))}{md(stopped)}.", ""]
        lines += _compact(delta_table(result), [DELTA_NOTE])
        absolute = comparison["absolute_gates"]
        lines += [
            f"{ICONS[absolute['outcome']]} **{md(sentence(absolute['line']))}** (the thresholds file's floors and "
            "ceilings, a verdict of their own beside the upgrade's)",
            "",
        ]
        lines += _failed_gates(report.gates.failed_absolute)
        lines += _moves(result)
    if result.get("notices") or result.get("interrupted"):
        count = len(result.get("notices") or []) + bool(result.get("interrupted"))
        lines += [f"⚠️ {count} notice(s) about this run's inputs: see the job summary.", ""]
    if html is not None:
        lines += [html_link(html, environ or {}), ""]
    return without_machine_paths("\n".join(lines).rstrip("\n") + "\n", workdir)


def _compact(table: Table | None, notes: list[str]) -> list[str]:
    """A table without its bold title, its notes as one line of small print."""
    if table is None:
        return []
    body = markdown(Table(title="", columns=table.columns, rows=table.rows))[2:]  # no title, no blank after it
    return [line for line in body if line] + [""] + [f"<sub>{note}</sub>" for note in notes] + [""]


def _failed_gates(gates: Sequence[GateRow]) -> list[str]:
    failed = [gate.name for gate in gates]
    if not failed:
        return []
    named = ", ".join(code_span(name) for name in failed[:FAILED_NAMED])
    more = f" and {len(failed) - FAILED_NAMED} more" if len(failed) > FAILED_NAMED else ""
    return [f"FAILED: {named}{more}.", ""]


def _moves(result: ReportDocument) -> list[str]:
    comparison = comparison_of(result)
    table = coded_ids(moves_table(result, SUMMARY_TOP))
    if comparison is None or table is None:
        return []
    return [
        f"<details><summary>{md(table.title)}</summary>",
        "",
        *[line for line in markdown(Table(title="", columns=table.columns, rows=table.rows))[2:] if line],
        "",
        f"<sub>{md(moves_summary(comparison))}. D = OVL new − OVL baseline "
        "of one rendering; re-run one with "
        "<code>pytest --sys1cal '&lt;node id&gt;'</code> and this run's options.</sub>",
        "",
        "</details>",
        "",
    ]
