"""The trend page (``python -m pytest_sys1cal trend --html``): self-contained like the run's HTML report
(report/html.py: inline SVG, no script, a Content-Security-Policy that forbids every request), with the
header, the two tables and the figures of report/trend_figures.py. Same document, same bytes."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from .html import CSP, STYLE, inline_svg, table_html
from .trend_text import header, tables

# Wider than the run's page: one row per version carries three intervals, the swap shift, the λ test and the gates.
WIDE = "main { max-width: 1400px; } th:first-child, td:first-child { white-space: nowrap; }"


def render_trend_html(trend: Mapping[str, Any]) -> str:
    from .trend_figures import trend_figures

    title = f"Sys1Cal trend: {trend['model']}"
    figures = trend_figures(trend)
    figure_html = [
        f'<figure id="fig-{f.key}"><h3>{escape(f.title)}</h3>\n{inline_svg(f.svg, f.key, f.title)}\n'
        f"<figcaption>{escape(f.caption)}</figcaption></figure>"
        for f in figures
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
        f"<style>{STYLE}{WIDE}</style>",
        "</head>",
        "<body><main>",
        f"<header><h1>{escape(title)}</h1>",
        f'<p class="note">{escape(header(trend))}</p></header>',
        '<section id="tables"><h2>Versions and upgrades</h2>',
        *(table_html(t) for t in tables(trend)),
        "</section>",
        '<section id="figures"><h2>Figures</h2>',
        *figure_html,
        *([] if figures else ['<p class="note">No figure: no version could be replayed.</p>']),
        "</section>",
        "</main></body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"
