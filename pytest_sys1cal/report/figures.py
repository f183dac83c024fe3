"""The HTML report's figures, drawn with matplotlib's SVG backend from a JSON report (and a baseline report).

Imported only for ``--sys1cal-html`` (the ``html`` extra). Every figure comes back as one standalone SVG
document, byte-identical for the same report: no date, no creator, ids salted with a constant instead of
random ones, glyphs as paths (no font is needed to show it). What each figure shows: docs/html-report.md.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

from ..document import ReportDocument
from ..gates.rows import GateSummary
from ..vocabulary import LABELS, PRIMITIVES
from .figure_data import Columns, LatentBand, latent_curve, latent_ranges, r2_words, reliability

COLORS = {"noul": "#1f77b4", "choice": "#d95f02", "score": "#1b9e77"}
BASELINE = "#8c8c8c"
AXIS_LABEL = {"noul": "Noul P(True)", "choice": "Choice P(True)", "score": "Score expectation μ_S"}
# Any: matplotlib's stubs type rcParams keys as a Literal of every name, which a dict literal never is.
STYLE: Any = {
    "svg.hashsalt": "pytest-sys1cal",  # clip-path and marker ids from content, not uuid4: same report, same bytes
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",  # shipped inside matplotlib, so the glyphs do not depend on the machine
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e5e5e5",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "legend.fontsize": 8,
}
METADATA = {"Date": None, "Creator": None}


@dataclass(frozen=True)
class Rendered:
    key: str  # the figure's id in the page
    title: str
    caption: str  # one line: how to read it
    svg: str  # a standalone SVG document


@dataclass(frozen=True)
class Inputs:
    """What the figures read: the report, its items as columns, its gates, and the same for a baseline report."""

    report: ReportDocument
    data: Columns
    gates: GateSummary
    baseline: ReportDocument | None = None
    base: Columns | None = None

    @classmethod
    def of(cls, report: ReportDocument, gates: GateSummary, baseline: ReportDocument | None = None) -> Inputs:
        return cls(report, Columns.of(report), gates, baseline, Columns.of(baseline) if baseline else None)

    def primitives(self) -> list[str]:
        """The primitives this run answered, in the vocabulary's order."""
        return [p for p in PRIMITIVES if not np.isnan(self.data.answers[p]).all()]


def to_svg(figure: Figure, key: str) -> str:
    buffer = io.StringIO()
    with matplotlib.rc_context(cast(Any, {**STYLE, "svg.id": key})):
        # The SVG canvas draws the figure once, laying it out as it draws; savefig first draws it a whole time
        # more with rendering off, to lay out a figure that has a layout engine: the same bytes, about a
        # fifth of the HTML report's time saved.
        FigureCanvasSVG(figure).print_svg(buffer, metadata=METADATA)
    return numbered_ids(buffer.getvalue())


# matplotlib names a clip path (p…) or a hatch (h…) by a hash of str() of its numbers, and str() of a numpy
# float changed in numpy 2 ("np.float64(37.3)", NEP 51): the same figure got other ids under numpy 1.26.
_NUMBER_HASHED_ID = re.compile(
    r'(?<=id=")[hp][0-9a-f]{10}(?=")|(?<=url\(#)[hp][0-9a-f]{10}(?=\))|(?<=#)[hp][0-9a-f]{10}(?=")'
)


def numbered_ids(svg: str) -> str:
    """The SVG with matplotlib's number-hashed ids renamed p1, p2, …, h1, … in order of first appearance."""
    names: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        old = match.group(0)
        if old not in names:
            names[old] = f"{old[0]}{sum(name[0] == old[0] for name in names) + 1}"
        return names[old]

    return _NUMBER_HASHED_ID.sub(rename, svg)


def new_figure(width: float, height: float, **kwargs: Any) -> Figure:
    return Figure(figsize=(width, height), layout="constrained", **kwargs)


def unit_axes(ax: Axes, xlabel: str, ylabel: str) -> None:
    """A [0, 1] × [0, 1] probability panel with the identity line."""
    ax.plot([0, 1], [0, 1], color="#444444", linewidth=0.8, linestyle="--", zorder=1)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_aspect("equal")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def title(ax: Axes, head: str, *numbers: str) -> None:
    """The panel's title, with its numbers on the lines under it (above the data, so they hide no point)."""
    ax.set_title("\n".join([head, *numbers]), fontsize=9, linespacing=1.35)


def _mean_tv(report: ReportDocument | None, prim: str) -> float | None:
    row = None if report is None else report["primitives"].get(prim)
    return None if row is None else row["mean_tv"]


def _ece(report: ReportDocument | None, prim: str) -> float | None:
    row = None if report is None else report["calibration"].get(prim)
    return None if row is None else row["ece"]


def _fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


# ---------------------------------------------------------------------------------------------- the figures


def transfer(inputs: Inputs) -> Figure | None:
    prims = inputs.primitives()
    if not prims:
        return None
    figure = new_figure(3.3 * len(prims), 3.6)
    for ax, prim in zip(figure.subplots(1, len(prims), squeeze=False)[0], prims, strict=True):
        text = f"mean TV {_fmt(_mean_tv(inputs.report, prim))}"
        if inputs.base is not None and not np.isnan(inputs.base.answers[prim]).all():
            ax.scatter(*inputs.base.asked(prim), s=8, color=BASELINE, alpha=0.45, linewidths=0, label="baseline")
            text += f", baseline {_fmt(_mean_tv(inputs.baseline, prim))}"
        ax.scatter(*inputs.data.asked(prim), s=9, color=COLORS[prim], alpha=0.6, linewidths=0, label="this run")
        unit_axes(ax, "exact p*", AXIS_LABEL[prim])
        title(ax, LABELS[prim], text)
    legend_above(figure, inputs, markerscale=1.5)
    return figure


def legend_above(figure: Figure, inputs: Inputs, **kwargs: Any) -> None:
    """With a baseline, the "baseline / this run" legend once, above the panels: off the data."""
    if inputs.base is None:
        return
    handles, labels = figure.axes[0].get_legend_handles_labels()
    if handles:
        figure.legend(handles, labels, loc="outside upper center", ncol=len(handles), frameon=False, **kwargs)


def _reliability_series(ax: Axes, bars: Axes, p_star: np.ndarray, answer: np.ndarray, color: str, label: str) -> None:
    rel = reliability(p_star, answer)
    ax.plot(rel.mean_answer, rel.mean_p_star, marker="o", markersize=4, color=color, linewidth=1.2, label=label)
    width = 1 / rel.counts.size
    if label == "baseline":
        bars.step(rel.centers, rel.counts, where="mid", color=color, linewidth=1.0, label=label)
    else:
        bars.bar(rel.centers, rel.counts, width=width * 0.9, color=color, alpha=0.75, label=label)


def reliability_diagram(inputs: Inputs) -> Figure | None:
    prims = inputs.primitives()
    if not prims:
        return None
    figure = new_figure(3.3 * len(prims), 4.6)
    grid = figure.add_gridspec(2, len(prims), height_ratios=[3, 1])
    for k, prim in enumerate(prims):
        ax = figure.add_subplot(grid[0, k])
        bars = figure.add_subplot(grid[1, k], sharex=ax)
        text = f"ECE {_fmt(_ece(inputs.report, prim))}"
        if inputs.base is not None and not np.isnan(inputs.base.answers[prim]).all():
            _reliability_series(ax, bars, *inputs.base.asked(prim), BASELINE, "baseline")
            text += f", baseline {_fmt(_ece(inputs.baseline, prim))}"
        _reliability_series(ax, bars, *inputs.data.asked(prim), COLORS[prim], "this run")
        unit_axes(ax, "", "mean exact p* in the bin")
        ax.set_aspect("auto")
        ax.tick_params(labelbottom=False)
        title(ax, LABELS[prim], text)
        bars.set_xlabel(f"{AXIS_LABEL[prim]}, binned")
        bars.set_ylabel("renderings")
        bars.grid(axis="x", visible=False)
    legend_above(figure, inputs)
    return figure


def score_against(inputs: Inputs) -> Figure | None:
    data = inputs.data
    mu = data.answers["score"]
    if np.isnan(mu).all():
        return None
    references = [("exact p*", data.p_star), (AXIS_LABEL["noul"], data.answers["noul"])]
    references.append((AXIS_LABEL["choice"], data.answers["choice"]))
    figure = new_figure(9.9, 3.6)
    for ax, (label, x) in zip(figure.subplots(1, 3), references, strict=True):
        keep = ~np.isnan(x) & ~np.isnan(mu)
        ax.scatter(x[keep], mu[keep], s=9, color=COLORS["score"], alpha=0.6, linewidths=0)
        unit_axes(ax, label, AXIS_LABEL["score"])
        gap = float(np.mean(np.abs(mu[keep] - x[keep]))) if keep.any() else None
        title(ax, f"μ_S against {label.split(' P(')[0]}", f"mean |μ_S − x| {_fmt(gap)} on {int(keep.sum())} renderings")
    return figure


def score_to_choice(inputs: Inputs) -> Figure | None:
    unc = inputs.report.get("uncertainty") or {}
    data = inputs.data
    keep = ~np.isnan(data.answers["score"]) & ~np.isnan(data.answers["choice"])
    if not keep.any():
        return None
    figure = new_figure(8.6, 4.8)
    ax = figure.subplots()
    band = LatentBand.of(inputs.report)
    curve = latent_curve(unc) if band.shown else None  # drawn only where the valid test found the effect
    if curve is not None:
        mu, mass, fitted = curve
        ax.fill_between(mu, mu, np.minimum(mu + mass, 1), color="#7570b3", alpha=0.18, linewidth=0)
        ax.fill_between([], [], color="#7570b3", alpha=0.18, label="T/U/F interval [μ_S, μ_S + U(μ_S)]")
        ax.plot(mu, fitted, color="#7570b3", linewidth=1.8, label="fitted Choice = μ/(1 − λ·μ^α·(1−μ)^β)")
    ax.scatter(data.answers["score"][keep], data.answers["choice"][keep], s=10, color=COLORS["choice"], alpha=0.6)
    unit_axes(ax, AXIS_LABEL["score"], AXIS_LABEL["choice"])
    ax.plot([], [], color="#444444", linewidth=0.8, linestyle="--", label="Choice = μ_S (λ = 0)")
    test = unc.get("test") or {}
    below = unc.get("share_choice_below_mu")
    fit = [
        f"λ {_fmt(unc.get('lambda'))}, α {_fmt(unc.get('alpha'))}, β {_fmt(unc.get('beta'))}",
        f"U_max {_fmt(unc.get('u_max'))}, R² {_fmt(unc.get('r2'))}",
    ]
    if not band.shown:
        words = band.absent()
        fit = [words[: words.index(" (")], words[words.index(" (") + 2 : -1], "so no T/U/F band is drawn"]
    if (r2 := unc.get("r2")) is not None and r2 < 0:
        fit.append("R² " + r2_words(r2).replace(" (", "\n(", 1))
    lines = [
        *fit,
        f"Choice < μ_S on {_fmt(below, 2)} of renderings",
        f"test of λ = 0: p {_p(test.get('p_value'))} (α {band.alpha:g})",
    ]
    legend = ax.legend(loc="upper left", bbox_to_anchor=(1.03, 1.0), title="Table 2 fit", alignment="left")
    legend.get_title().set_fontsize(8)
    ax.text(1.05, 0.55, "\n".join(lines), transform=ax.transAxes, va="top", fontsize=8, linespacing=1.5)
    ax.set_title("Score → Choice", fontsize=9)
    return figure


def _p(p: float | None) -> str:
    if p is None:
        return "—"
    return f"≤ {p:.0e}" if p <= 1e-10 else f"{p:.2g}"


def sensitivity(inputs: Inputs) -> Figure | None:
    prims = inputs.primitives()
    if not prims:
        return None
    data = inputs.data
    figure = new_figure(3.3 * len(prims), 3.6)
    for ax, prim in zip(figure.subplots(1, len(prims), squeeze=False)[0], prims, strict=True):
        ranges = latent_ranges(data.p_star, data.answers[prim], data.latent)
        ax.vlines(ranges.p_star, ranges.low, ranges.high, color=COLORS[prim], linewidth=1.4, alpha=0.8)
        ax.scatter(*data.asked(prim), s=5, color=COLORS[prim], alpha=0.5, linewidths=0)
        unit_axes(ax, "exact p* of the latent problem", AXIS_LABEL[prim])
        spread = inputs.report["representation_sensitivity"].get(prim)
        pairwise, most = (None, None) if spread is None else (spread["mean_pairwise_tv"], spread["mean_max_tv"])
        title(
            ax,
            LABELS[prim],
            f"|Δp| mean pairwise {_fmt(pairwise)}, mean max {_fmt(most)}",
            f"{ranges.p_star.size} latent problems with ≥ 2 renderings",
        )
    return figure


@dataclass(frozen=True)
class Spec:
    """One figure of the registry (figure_registry.py): its id in the page, title, caption and drawing."""

    key: str
    title: str
    caption: str
    draw: Callable[[Inputs], Figure | None]


def draw_all(specs: list[Spec], inputs: Inputs) -> list[Rendered]:
    """Each figure drawn and written as SVG; a spec that has nothing to show (draw returns None) is left out."""
    out = []
    with matplotlib.rc_context(STYLE):
        for spec in specs:
            figure = spec.draw(inputs)
            if figure is not None:
                out.append(Rendered(spec.key, spec.title, spec.caption, to_svg(figure, spec.key)))
    return out
