"""The self-contained HTML report (``--sys1cal-html``): the header, the gates, every table and the figures in
one file that opens from disk in any browser and requests nothing (docs/html-report.md).

It reads the report alone (and the baseline report when there is one), so a saved report, read back
(run_report.Report.read_back), redraws the same page. Same report, same bytes: no timestamps, no random ids. matplotlib (the ``html`` extra) is
imported only when a page is rendered; this module imports nothing heavy, so the run can check for it
at configure time.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..document import ReportDocument, reparsed
from ..errors import InputError
from ..escape import html_text as escape  # markup and control characters: data (escape.py)
from ..files import write_atomic
from ..gates.rows import Outcome
from ..run_report import Report
from ..vocabulary import PRIMITIVES, Verdict
from .gates import headline
from .interrupted import interrupted_line, selected

if TYPE_CHECKING:
    from .table import Table

# The verdict line's CSS class and mark, by the run's outcome.
VERDICT_LOOK = {
    Outcome.FAILED: ("failed", "✗ "),
    Outcome.UNDECIDED: ("undecided", "! "),
    Outcome.PASSED: ("ok", "✓ "),
    Outcome.NONE: ("", ""),
}
# The class of the banner an interrupted run's page carries (and a complete run's page does not).
INTERRUPTED_MARK = "verdict failed interrupted"
INSTALL = "pip install 'pytest-sys1cal[html]'"
# Nothing may be fetched: no script, no font, no image from anywhere; inline styles and SVG only.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
STYLE = """
body { font-family: "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; color: #1a1a1a; background: #fff;
       margin: 0; line-height: 1.4; }
main { max-width: 1080px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 1.5em; margin: 0.4em 0; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 1.8em; }
h3 { font-size: 1.05em; margin: 0 0 6px; }
.verdict { font-weight: bold; padding: 8px 12px; border-radius: 4px; display: inline-block; }
.verdict.ok { background: #e6f4ea; color: #1e6b34; } .verdict.failed { background: #fde8e8; color: #a11d1d; }
.verdict.undecided { background: #fff4dc; color: #8a6100; } .notice { color: #8a6100; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; font-size: 0.92em; }
dl.facts dt { color: #555; } dl.facts dd { margin: 0; }
nav ul { columns: 2; font-size: 0.92em; }
table { border-collapse: collapse; margin: 8px 0 4px; font-size: 0.85em; }
caption { text-align: left; font-weight: bold; padding-bottom: 4px; }
th, td { padding: 3px 8px; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; white-space: normal; }
thead th { border-bottom: 2px solid #ccc; } tbody tr:nth-child(even) { background: #fafafa; }
td.v-passed { color: #1e6b34; } td.v-FAILED { color: #a11d1d; font-weight: bold; }
td.v-inconclusive { color: #8a6100; } td.v-not-measured, td.v-not-applicable { color: #777; }
.table { overflow-x: auto; margin-bottom: 14px; }
p.note { font-size: 0.8em; color: #555; margin: 2px 0; }
figure { margin: 18px 0 28px; padding: 12px; border: 1px solid #e3e3e3; border-radius: 4px; }
figure svg { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figcaption { font-size: 0.88em; color: #333; margin-top: 6px; }
ul.failed { color: #a11d1d; }
"""


class HtmlUnavailable(InputError):
    """--sys1cal-html without matplotlib installed."""


def check_available() -> None:
    """Raise HtmlUnavailable, naming the install command, when matplotlib is missing (without importing it)."""
    if importlib.util.find_spec("matplotlib") is None:
        raise HtmlUnavailable(f"--sys1cal-html needs matplotlib: {INSTALL}")


def write_html(path: Path, report: Report, baseline: ReportDocument | None = None) -> None:
    write_atomic(path, render_html(report, baseline))


def canonical(report: ReportDocument) -> ReportDocument:
    """The report as its JSON file holds it (keys sorted), primitives in the vocabulary's order: the page of a
    run and the page of its saved report are then the same bytes."""

    def ordered(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        if pairs and all(key in PRIMITIVES for key, _ in pairs):
            return dict(sorted(pairs, key=lambda pair: PRIMITIVES.index(pair[0])))
        return dict(pairs)

    return reparsed(report, object_pairs_hook=ordered)


def render_html(run: Report, baseline: ReportDocument | None = None) -> str:
    from .figure_registry import UPGRADE_FIGURES, render_figures
    from .html_upgrade import STYLE as UPGRADE_STYLE
    from .paper_tables import build_tables

    run = Report(canonical(run.data), run.gates)
    report = run.data
    baseline = None if baseline is None else canonical(baseline)
    figures = render_figures(report, run.gates, baseline)
    tables = build_tables(report)
    model = report["model"]
    title = f"Sys1Cal calibration: {model['name']} {model['version']}"
    upgrade = "comparison" in report  # with a baseline in force: the upgrade section comes first
    held = [f for f in figures if upgrade and f.key in UPGRADE_FIGURES]
    figures = [f for f in figures if f not in held]
    nav = [
        *([("upgrade", "Upgrade comparison"), ("renderings", "Every paired rendering")] if upgrade else []),
        ("gates", "Gates"),
        *((f"fig-{f.key}", f.title) for f in figures),
        ("tables", "Tables"),
    ]
    return page(
        title,
        [
            *_header(run, baseline, title),
            "<nav><ul>" + "".join(f'<li><a href="#{key}">{escape(text)}</a></li>' for key, text in nav) + "</ul></nav>",
            *(_upgrade(run, held) if upgrade else []),
            *_gates(run, with_comparison=not upgrade),
            '<section id="figures"><h2>Figures</h2>',
            *(figure_html(f) for f in figures),
            *([] if figures else ['<p class="note">No figure: no rendering was measured with an answer.</p>']),
            "</section>",
            '<section id="tables"><h2>Tables</h2>',
            *(table_html(t) for t in tables),
            "</section>",
        ],
        UPGRADE_STYLE if upgrade else "",
    )


def _upgrade(report: Report, figures: list[Any]) -> list[str]:
    """The upgrade comparison, right under the verdict: the Δ table with its bounds and margins, why each primitive
    moved, the triptych, the paired differences and the Δ by family drawn, the Δ by family and by representation
    with the regressed cells linked to their worst renderings, then every paired rendering."""
    from .breakdown_tables import family_delta_table, representation_delta_table
    from .gates import comparison_table
    from .html_upgrade import moves_html, regressed_links
    from .why_text import why_table

    comparison = report.data["comparison"]
    head = comparison["headline"].split(": ")[0]
    out = [f'<section id="upgrade"><h2>{escape(head[:1].upper() + head[1:])}</h2>']
    out += [table_html(t) for t in (comparison_table(report), why_table(report.data)) if t is not None]
    out += [figure_html(f) for f in figures]
    out += [table_html(t) for t in (family_delta_table(report), representation_delta_table(report)) if t is not None]
    out += regressed_links(report)
    if comparison["renderings"]:
        out.append(moves_html(comparison))
    return out + ["</section>"]


def page(title: str, body: list[str], style: str = "") -> str:
    """A whole self-contained page: the head (its Content-Security-Policy forbids every request), then `body`."""
    head = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
        f"<style>{STYLE}{style}</style>",
        "</head>",
        "<body><main>",
    ]
    return "\n".join([*head, *body, "</main></body>", "</html>"]) + "\n"


def figure_html(figure: Any) -> str:
    """A figure of the page: its title, the SVG inline, its caption."""
    return (
        f'<figure id="fig-{figure.key}"><h3>{escape(figure.title)}</h3>\n'
        f"{inline_svg(figure.svg, figure.key, figure.title)}\n"
        f"<figcaption>{escape(figure.caption)}</figcaption></figure>"
    )


def _header(run: Report, baseline: ReportDocument | None, title: str) -> list[str]:
    from .html_upgrade import banner
    from .upgrade_text import origin_phrase

    report = run.data
    model, dataset, counts = report["model"], report["dataset"], report["counts"]
    kind, phrase = headline(run.gates)
    css, mark = VERDICT_LOOK[kind]
    verdict = f'<p class="verdict {css}">{mark}{escape(phrase)}</p>'
    stopped = interrupted_line(report)
    notices = ""
    if stopped:  # INTERRUPTED_MARK: outputs.py tells the page of an interrupted run by it
        notices += f'<p class="{INTERRUPTED_MARK}">{escape(stopped[:1].upper() + stopped[1:])}</p>'
    notices += "".join(f'<p class="notice">Notice: {escape(n)}</p>' for n in report.get("notices") or [])
    facts = [
        (
            "model",
            f"{model['name']} {model['version']} ({model['source']} cassettes; server model {model.get('server_model') or '—'})",
        ),
        ("dataset", f"{dataset['name']}, sha256 {dataset['sha256']}"),
        (
            "measured",
            f"{counts['measured']} of {selected(report)} selected renderings ({counts['failed']} failed), "
            f"{counts['latent_problems']} latent problems",
        ),
        ("repeats, seed", f"{report['repeats']}, {report['seed']}"),
    ]
    comparison = report.get("comparison")
    if comparison is not None:  # a saved report says what it was compared with, read alone too
        side = comparison["baseline"]
        facts.append(
            ("baseline", f"{side['model']} {side['version']} ({side['source']} cassettes): {origin_phrase(comparison)}")
        )
    elif baseline is not None:
        base = baseline["model"]
        facts.append(("baseline", f"{base['name']} {base['version']} ({base['source']} cassettes)"))
    facts.append(("written by", str(report.get("generator", ""))))
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    upgrade = banner(run)  # with a baseline: the upgrade verdict above everything, the gates' line beside it
    if upgrade:
        return ["<header>", *upgrade, f"<h1>{escape(title)}</h1>", notices, f'<dl class="facts">{rows}</dl></header>']
    return [f"<header><h1>{escape(title)}</h1>", verdict + notices, f'<dl class="facts">{rows}</dl></header>']


def _gates(report: Report, *, with_comparison: bool = True) -> list[str]:
    from .breakdown_tables import family_delta_table
    from .gates import comparison_table, gate_table

    out = ['<section id="gates"><h2>Gates</h2>']
    gates = gate_table(report.gates)
    if gates is None:
        out.append('<p class="note">No gates configured for this model (see thresholds.yaml).</p>')
    else:
        out.append(table_html(gates))
    failed = report.gates.failed
    if failed:
        items = "".join(f"<li><b>{escape(g.name)}</b>: {escape(g.explanation or '')}</li>" for g in failed)
        out.append(f'<ul class="failed">{items}</ul>')
    if with_comparison:  # else the upgrade section above has them
        out += [table_html(t) for t in (comparison_table(report), family_delta_table(report)) if t is not None]
    return out + ["</section>"]


def table_html(table: Table) -> str:
    """A `Table` as an HTML table: title as caption, verdict cells marked for colour, notes below."""

    def cell(text: str) -> str:
        marked = f' class="v-{text.replace(" ", "-")}"' if text in tuple(Verdict) else ""
        return f"<td{marked}>{escape(text)}</td>"

    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    body = "".join("<tr>" + "".join(cell(str(c)) for c in row) + "</tr>" for row in table.rows)
    notes = "".join(f'<p class="note">{escape(note)}</p>' for note in table.notes)
    return (
        f'<div class="table"><table><caption>{escape(table.title)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{notes}</div>"
    )


_PROLOGUE = re.compile(r"\A.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.S)
_ID = re.compile(r'\bid="([^"]+)"')
_HREF = re.compile(r'xlink:href="#([^"]+)"')
_URL = re.compile(r"url\(#([^)]+)\)")


def inline_svg(svg: str, key: str, label: str) -> str:
    """A standalone SVG document as an element of the page: no XML prologue or metadata, and every id inside
    prefixed with the figure's key, since ids (glyphs, clip paths) repeat from one figure to the next."""
    body = _METADATA.sub("", _PROLOGUE.sub("", svg, count=1), count=1)
    tag_end = body.index(">") + 1
    root = _ID.sub(f'id="svg-{key}"', body[:tag_end], count=1).replace(
        "<svg ", f'<svg role="img" aria-label="{escape(label)}" ', 1
    )
    rest = _ID.sub(lambda m: f'id="{key}-{m.group(1)}"', body[tag_end:])
    rest = _HREF.sub(lambda m: f'xlink:href="#{key}-{m.group(1)}"', rest)
    rest = _URL.sub(lambda m: f"url(#{key}-{m.group(1)})", rest)
    return root + rest.rstrip()
