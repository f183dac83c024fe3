"""The trend page (``python -m pytest_sys1cal trend --html``): self-contained like the run's HTML report
(report/html.py: inline SVG, no script, a Content-Security-Policy that forbids every request), with the
header, the two tables and the figures of report/trend_figures.py. Same document, same bytes."""

from __future__ import annotations

from ..document_commands import TrendDocument
from ..escape import html_text as escape  # markup and control characters: data (escape.py)
from .html import figure_html, page, table_html
from .trend_text import header, tables

# Wider than the run's page: one row per version carries three intervals, the swap shift, the λ test and the gates.
WIDE = "main { max-width: 1400px; } th:first-child, td:first-child { white-space: nowrap; }"


def render_trend_html(trend: TrendDocument) -> str:
    from .trend_figures import trend_figures

    title = f"Sys1Cal trend: {trend['model']}"
    figures = trend_figures(trend)
    body = [
        f"<header><h1>{escape(title)}</h1>",
        f'<p class="note">{escape(header(trend))}</p></header>',
        '<section id="tables"><h2>Versions and upgrades</h2>',
        *(table_html(t) for t in tables(trend)),
        "</section>",
        '<section id="figures"><h2>Figures</h2>',
        *(figure_html(f) for f in figures),
        *([] if figures else ['<p class="note">No figure: no version could be replayed.</p>']),
        "</section>",
    ]
    return page(title, body, WIDE)
