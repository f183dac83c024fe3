"""The pull-request comment (``--sys1cal-markdown=PATH``): one compact Markdown text that says whether the upgrade
is safe. With a baseline: the upgrade verdict naming both versions and where the baseline came from, why each
primitive that did not pass moved (its diagnosis: miscalibration or lost discrimination), the Δ table with its
bounds and margins, the absolute gates' line (and which failed), and the renderings that moved most; without one,
the gates' verdict under a heading that says no upgrade comparison was made and how to ask for one. Every table
fits GitHub's 880 px comment column (values first; the node ids that re-run the renderings listed under their
table), and the inputs' notices are quoted in full. It starts with a hidden marker (MARKER) by which the workflow that
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
from ..vocabulary import LABELS
from .gates import headline
from .interrupted import interrupted_line
from .markdown import (
    ICONS,
    NO_COMPARISON,
    html_link,
    measured,
    no_comparison_line,
    why_markdown,
    without_machine_paths,
)
from .table import Table, markdown
from .upgrade_text import (
    DELTA_NOTE,
    SUMMARY_TOP,
    answer_cell,
    baseline_line,
    chance_line,
    compared,
    comparison_of,
    d_cell,
    delta_table,
    holm_lines,
    moves_summary,
    sentence,
    verdict_kind,
)

MARKER = "<!-- pytest-sys1cal: pull-request comment -->"
FAILED_NAMED = 12  # failed absolute gates named by name; more are counted
NOTICES_QUOTED = 6  # the inputs' notices quoted in full; more are counted (the job summary has them all)


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
            f"### {ICONS[outcome]} Sys1Cal calibration: {md(model['name'])} {md(model['version'])} — {phrase}; "
            f"{NO_COMPARISON}",
            "",
        ]
        lines += [no_comparison_line(), ""]
        lines += _notices(result)
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
        lines += _notices(result)
        lines += _compact(delta_table(result), [DELTA_NOTE, *holm_lines(comparison)])
        absolute = comparison["absolute_gates"]
        lines += [
            f"{ICONS[absolute['outcome']]} **{md(sentence(absolute['line']))}** (the thresholds file's floors and "
            "ceilings, a verdict of their own beside the upgrade's)",
            "",
        ]
        lines += _failed_gates(report.gates.failed_absolute)
        lines += _moves(result)
    if html is not None:
        lines += [html_link(html, environ or {}), ""]
    return without_machine_paths("\n".join(lines).rstrip("\n") + "\n", workdir)


def _compact(table: Table | None, notes: list[str]) -> list[str]:
    """A table without its bold title, its notes as one line of small print."""
    if table is None:
        return []
    body = markdown(Table(title="", columns=table.columns, rows=table.rows))[2:]  # no title, no blank after it
    return [line for line in body if line] + [""] + [part for note in notes for part in (f"<sub>{note}</sub>", "")]


def _failed_gates(gates: Sequence[GateRow]) -> list[str]:
    failed = [gate.name for gate in gates]
    if not failed:
        return []
    named = ", ".join(code_span(name) for name in failed[:FAILED_NAMED])
    more = f" and {len(failed) - FAILED_NAMED} more" if len(failed) > FAILED_NAMED else ""
    return [f"FAILED: {named}{more}.", ""]


def _notices(result: ReportDocument) -> list[str]:
    """The inputs' notices, quoted: the one that matters (another model answered) is read where it is decided."""
    said = [text for text in [interrupted_line(result)] if text] + list(result.get("notices") or [])
    if not said:
        return []
    lines = [f"> ⚠️ **Notice:** {md(sentence(text))}  " for text in said[:NOTICES_QUOTED]]
    if len(said) > NOTICES_QUOTED:
        lines.append(f"> and {len(said) - NOTICES_QUOTED} more notice(s): see the job summary.")
    return [*lines, ""]


def _moves(result: ReportDocument) -> list[str]:
    """The renderings that moved most, values first so that they fit the comment's column: a row number, D per
    primitive with both answers, p* and representation; the node ids that re-run them listed under the table
    by the same numbers."""
    comparison = comparison_of(result)
    if comparison is None or not comparison["renderings"]:
        return []
    prims = compared(comparison)
    rows = comparison["renderings"][:SUMMARY_TOP]
    table = Table(
        title="",
        columns=["#", *(f"{LABELS.get(p, p)}: D (base → new)" for p in prims), "p*", "representation"],
        rows=[
            [str(k), *(f"{d_cell(row, p)} ({answer_cell(row, p)})" for p in prims), f"{row['p_star']:.3f}",
             str(row["representation"])]
            for k, row in enumerate(rows, 1)
        ],
    )  # fmt: skip
    ids = [f"{k}. {code_span(row['node_id'] or row['instance_id'])}" for k, row in enumerate(rows, 1)]
    chance = chance_line(comparison)
    return [
        f"<details><summary>Renderings that moved most against {md(comparison['baseline']['version'])}: "
        f"top {len(rows)} of {len(comparison['renderings'])} paired, lowest D first</summary>",
        "",
        *[line for line in markdown(table)[2:] if line],
        "",
        f"<sub>D = OVL new − OVL baseline of one rendering. {md(moves_summary(comparison))}."
        + (f" {md(chance)}." if chance else "")
        + "</sub>",
        "",
        "Re-run one with <code>pytest --sys1cal '&lt;node id&gt;'</code> and this run's options:",
        "",
        *ids,
        "",
        "</details>",
        "",
    ]
