"""The trend page's figures (``python -m pytest_sys1cal trend --html``), drawn with the HTML report's
matplotlib setup (report/figures.py: SVG backend, constant ids, glyphs as paths) from trend.py's document:
mean OVL per version with its interval, per primitive; Δ mean OVL between consecutive versions with the
bounds its verdict reads and the margins. Imported only for ``--html``."""

from __future__ import annotations

from typing import Any, cast

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..document_commands import TrendDocument, TrendStep, TrendVersion
from ..vocabulary import LABELS, PRIMITIVES, Verdict
from .figures import COLORS, STYLE, Rendered, new_figure, title, to_svg

VERDICT_COLORS = {
    Verdict.PASSED: "#1e6b34",
    Verdict.FAILED: "#c0392b",
    Verdict.INCONCLUSIVE: "#b7791f",
    Verdict.NOT_MEASURED: "#8c8c8c",
}
CAPTIONS = {  # key: (title, caption)
    "ovl": (
        "Mean OVL per version",
        "Each primitive's mean OVL (1 − mean TV to p*) in each recorded version's own run, in version order, with "
        "its 95% interval from a bootstrap of the latent problems; a version that could not be replayed is left out.",
    ),
    "delta": (
        "Δ mean OVL between consecutive versions",
        "Newer − older mean OVL, paired by rendering, with the one-sided bounds its verdict reads (each at its "
        "Holm level); dashed: −δ (a drop shown smaller passes), dotted: −δ₀ (a drop shown larger fails). The "
        "marker's colour is the verdict: green passed, red FAILED, amber inconclusive.",
    ),
}


def _versions_panel(ax: Axes, rows: list[TrendVersion], prim: str) -> None:
    xs: list[int] = []
    means: list[float] = []
    low: list[float] = []
    high: list[float] = []
    for x, row in enumerate(rows):
        cell = (row.get("mean_ovl") or {}).get(prim)
        if not row["replayed"] or cell is None or (mean := cell["mean"]) is None:
            continue
        xs.append(x)
        means.append(mean)
        low.append(mean - (lower if (lower := cell["lower"]) is not None else mean))
        high.append((upper if (upper := cell["upper"]) is not None else mean) - mean)
    if xs:
        ax.plot(xs, means, color=COLORS[prim], linewidth=1.0, alpha=0.6)
        ax.errorbar(xs, means, yerr=[low, high], fmt="o", color=COLORS[prim], capsize=4, markersize=5)
    ax.set_xticks(range(len(rows)), [row["version"] for row in rows], rotation=30, ha="right")
    ax.set_xlim(-0.5, len(rows) - 0.5)
    ax.set_ylabel("mean OVL")
    title(ax, LABELS[prim], f"{len(xs)} of {len(rows)} versions replayed")


def mean_ovl_figure(trend: TrendDocument) -> Figure | None:
    rows = trend["versions"]
    if not any(row["replayed"] for row in rows):
        return None
    figure = new_figure(3.4 * len(PRIMITIVES), 3.9)
    for ax, prim in zip(figure.subplots(1, len(PRIMITIVES), sharey=True), PRIMITIVES, strict=True):
        _versions_panel(ax, rows, prim)
    return figure


def _delta_panel(ax: Axes, steps: list[TrendStep], prim: str) -> None:
    labels = [f"{s['from']} →\n{s['to']}" for s in steps]
    for x, step in enumerate(steps):
        cell = (step.get("primitives") or {}).get(prim) if step["compared"] else None
        if cell is None or (difference := cell["difference"]) is None:
            ax.text(x, 0, "not compared", ha="center", va="bottom", fontsize=7, color="#777777", rotation=90)
            continue
        color = VERDICT_COLORS.get(Verdict(cell["verdict"]), "#444444")
        lower = bound if (bound := cell["lower"]) is not None else difference
        upper = bound if (bound := cell["upper"]) is not None else difference
        yerr = [[difference - lower], [upper - difference]]
        ax.errorbar([x], [difference], yerr=yerr, fmt="o", color=color, capsize=4, markersize=6)
        for value, style in ((cell["margin"], "--"), (cell["fail_margin"], ":")):
            if value is not None:
                ax.hlines(-value, x - 0.35, x + 0.35, colors="#c0392b", linestyles=cast(Any, style), linewidth=1.0)
    ax.axhline(0, color="#444444", linewidth=0.8)
    ax.set_xticks(range(len(steps)), labels, fontsize=7)
    ax.set_xlim(-0.6, len(steps) - 0.4)
    ax.set_ylabel("Δ mean OVL (newer − older)")
    title(ax, LABELS[prim])


def delta_figure(trend: TrendDocument) -> Figure | None:
    steps = trend["steps"]
    if not steps:
        return None
    figure = new_figure(max(3.4 * len(PRIMITIVES), 1.6 * len(steps) * len(PRIMITIVES)), 4.1)
    for ax, prim in zip(figure.subplots(1, len(PRIMITIVES), sharey=True), PRIMITIVES, strict=True):
        _delta_panel(ax, steps, prim)
    return figure


def trend_figures(trend: TrendDocument) -> list[Rendered]:
    """The figures that have something to show, as standalone SVG documents (same document, same bytes)."""
    out = []
    with matplotlib.rc_context(STYLE):
        for key, draw in (("ovl", mean_ovl_figure), ("delta", delta_figure)):
            figure = draw(trend)
            if figure is not None:
                out.append(Rendered(f"trend-{key}", *CAPTIONS[key], to_svg(figure, f"trend-{key}")))
    return out
