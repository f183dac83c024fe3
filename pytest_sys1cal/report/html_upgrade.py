"""The upgrade comparison's parts of the HTML report (html.py composes the page): the verdict banner above
everything, with the absolute gates' own line beside it, and the table of every paired rendering, sorted by
D, static (no script: the page's Content-Security-Policy allows none) and readable as it is. Read from the
report's ``comparison`` block alone, so a saved report redraws them."""

from __future__ import annotations

from html import escape

from ..document_upgrade import Comparison, GroupDifference
from ..gates.rows import Outcome
from ..run_report import Report
from ..vocabulary import LABELS
from .breakdown_tables import GROUPINGS, regressed_cells
from .upgrade_text import (
    MOVES_NOTE,
    answer_cell,
    baseline_line,
    compared,
    comparison_of,
    moves_summary,
    sentence,
    verdict_kind,
)
from .why_text import why_lines

MARKS: dict[str, str] = {Outcome.FAILED: "✗", Outcome.UNDECIDED: "!", Outcome.PASSED: "✓", Outcome.NONE: "–"}
STYLE = """
.upgrade { margin: 14px 0 6px; padding: 12px 16px; border-radius: 6px; border-left: 10px solid; }
.upgrade .head { font-size: 1.6em; font-weight: bold; margin: 0; }
.upgrade .why { font-size: 1.1em; margin: 4px 0 0; } .upgrade .from { font-size: 0.9em; margin: 6px 0 0; color: #333; }
.upgrade .diagnosis { font-size: 0.98em; margin: 4px 0 0; color: #1a1a1a; }
.regressed { font-size: 0.85em; } .regressed li { margin: 2px 0; } .moves tr:target { background: #fff4dc; }
.upgrade.passed { background: #e6f4ea; color: #1e6b34; border-color: #1e6b34; }
.upgrade.failed { background: #fde8e8; color: #a11d1d; border-color: #a11d1d; }
.upgrade.undecided { background: #fff4dc; color: #8a6100; border-color: #8a6100; }
.upgrade.none { background: #f2f2f2; color: #444; border-color: #888; }
.absolute { margin: 6px 0 10px; font-size: 1.0em; } .absolute .names { font-size: 0.85em; color: #555; }
.absolute b { display: inline-block; padding: 3px 8px; border-radius: 4px; }
.absolute.failed b { background: #fde8e8; color: #a11d1d; } .absolute.passed b { background: #e6f4ea; color: #1e6b34; }
.absolute.undecided b { background: #fff4dc; color: #8a6100; } .absolute.none b { background: #f2f2f2; color: #444; }
.moves { max-height: 560px; overflow: auto; border: 1px solid #e3e3e3; }
.moves table { margin: 0; } .moves thead th { position: sticky; top: 0; background: #fff; }
.moves table { font-size: 0.8em; } .moves th { white-space: normal; vertical-align: bottom; }
.moves td.node { font-family: "DejaVu Sans Mono", monospace; text-align: left; white-space: normal; min-width: 330px; }
.moves .worse { color: #a11d1d; font-weight: bold; } .moves .better { color: #1e6b34; }
.moves td.group, .moves th:nth-child(2), .moves th:nth-child(3) { text-align: left; }
"""


def banner(report: Report) -> list[str]:
    """The upgrade verdict (what was compared, how it ended, what decided it, where the baseline came from),
    then the absolute gates' line: nothing without a baseline."""
    comparison = comparison_of(report.data)
    if comparison is None:
        return []
    kind = verdict_kind(comparison["verdict"])
    head = comparison["headline"].split(" (")[0] if comparison["summary"] else comparison["headline"]
    absolute = comparison["absolute_gates"]
    failed = [g.name for g in report.gates.failed_absolute]
    return [
        f'<div class="upgrade {kind}" id="upgrade-verdict"><p class="head">{MARKS[kind]} {escape(sentence(head))}</p>',
        *([f'<p class="why">{escape(comparison["summary"])}</p>'] if comparison["summary"] else []),
        *(f'<p class="diagnosis">Why: {escape(line)}</p>' for line in why_lines(comparison)),
        f'<p class="from">{escape(sentence(baseline_line(comparison)))}.</p></div>',
        f'<p class="absolute {absolute["outcome"]}" id="absolute-gates"><b>{escape(sentence(absolute["line"]))}</b> '
        "(the floors and ceilings of the thresholds file, a verdict of their own beside the upgrade's)"
        + (f'<br><span class="names">FAILED: {escape(", ".join(failed))}</span>' if failed else "")
        + "</p>",
    ]


def _breakable(node_id: str) -> str:
    """A node id that may wrap after its "[" and "/" (and nowhere else): sys1cal::jev[family/<wbr>instance]."""
    return "<wbr>".join(escape(part) for part in node_id.replace("[", "[\0").replace("/", "/\0").split("\0"))


def moves_html(comparison: Comparison) -> str:
    """Every paired rendering, lowest D first: node id, family and representation, p*, and per compared
    primitive the baseline's and the candidate's answer over its D (one cell each, so the row fits the page)."""
    prims = compared(comparison)
    head = ["#", "node id (re-runs it)", "family, representation", "p*"]
    head += [f"{LABELS.get(p, p)}: base → new, D" for p in prims]  # headers wrap: the columns stay narrow
    rows = []
    for index, row in enumerate(comparison["renderings"], start=1):
        cells = [
            f'<td id="{anchor(row["instance_id"])}">{index}</td>',
            f'<td class="node">{_breakable(row["node_id"] or row["instance_id"])}</td>',
            f'<td class="group">{escape(str(row["family"]))}<br>{escape(str(row["representation"]))}</td>',
            f"<td>{row['p_star']:.3f}</td>",
        ]
        for prim in prims:
            d = row["d"].get(prim)
            css = "" if d is None or d == 0 else ' class="worse"' if d < 0 else ' class="better"'
            shown = "—" if d is None else f"{d:+.3f}"
            cells.append(f"<td>{escape(answer_cell(row, prim))}<br><span{css}>{shown}</span></td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    caption = f"Every paired rendering against {comparison['baseline']['version']} ({len(rows)}), lowest D first"
    notes = [MOVES_NOTE, f"How D is spread: {moves_summary(comparison)}."]
    return (
        f'<div class="table" id="renderings"><div class="moves"><table><caption>{escape(caption)}</caption>'
        f"<thead><tr>{''.join(f'<th>{escape(c)}</th>' for c in head)}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
        + "".join(f'<p class="note">{escape(note)}</p>' for note in notes)
        + "</div>"
    )


def anchor(instance_id: str) -> str:
    """The id of a rendering's row in the table of every paired rendering (a regressed cell links to it)."""
    return "r-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in instance_id)


def regressed_links(report: Report) -> list[str]:
    """Each cell marked regressed (docs/statistics.md §6.5), linked to its worst renderings' rows below."""
    cells = regressed_cells(report.gates.upgrade)
    if not cells:
        return []
    comparison = report.data.get("comparison")
    nodes = {row["instance_id"]: row["node_id"] for row in (comparison["renderings"] if comparison else [])}
    items = []
    for grouping, prim, group, cell in cells:
        links = ", ".join(
            f'<a href="#{anchor(w["instance_id"])}">{escape(nodes.get(w["instance_id"]) or w["instance_id"])}</a> '
            f"(D {w['d']:+.3f})"
            for w in cell.get("worst", [])
        )
        items.append(
            f"<li><b>{escape(LABELS.get(prim, prim))} on {escape(GROUPINGS[grouping])} {escape(group)}</b>: Δ "
            f"{cell['difference']:+.3f}{_elsewhere(cell)}, q = {cell['q_value']:.3f}; worst: {links}</li>"
        )
    return [f'<div class="regressed" id="regressed"><p class="note">Regressed cells and their worst renderings:</p>'
            f"<ul>{''.join(items)}</ul></div>"]  # fmt: skip


def _elsewhere(cell: GroupDifference) -> str:
    rest = cell.get("rest")
    return "" if rest is None else f" (elsewhere {rest:+.3f})"
