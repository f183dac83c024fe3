"""The HTML report's triptych of why a model reads as it does (docs/html-report.md), one row per primitive:

1. the isotonic reliability diagram (the CORP curve of the ``reliability`` block) with its consistency band:
   where the curve of a calibrated model with these answers would fall; outside it, miscalibration;
2. the ROC curve of the readout (gold side p* ≥ 0.5, as the readout block reads it): the ranking alone, which
   no monotone recalibration can change;
3. miscalibration MCB against discrimination DSC (the ``decomposition`` block) with their intervals: with a
   baseline, both versions as points and an arrow from the baseline to the candidate. The dotted diagonals are
   equal Brier scores (S = MCB − DSC + UNC): a move along them keeps S; up is worse calibration, left is lost
   ranking.

Read from the JSON report (and the baseline report, or the comparison's ``why`` blocks) alone. Imported only for
``--sys1cal-html``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..vocabulary import LABELS
from .figure_data import roc_points
from .figures import AXIS_LABEL, BASELINE, COLORS, Inputs, new_figure, title, unit_axes


def _block(report: Mapping[str, Any] | None, key: str, prim: str) -> Mapping[str, Any]:
    return ((report or {}).get(key) or {}).get(prim) or {}


def _ci(bounds: list[float] | None) -> str:
    return "" if not bounds else f" [{bounds[0]:.3f}, {bounds[1]:.3f}]"


def why_triptych(inputs: Inputs) -> Figure | None:
    prims = [p for p in inputs.primitives() if _block(inputs.report, "reliability", p).get("curve")]
    if not prims:
        return None
    figure = new_figure(10.2, 3.45 * len(prims))
    axes = figure.subplots(len(prims), 3, squeeze=False)
    for row, prim in zip(axes, prims, strict=True):
        _reliability(row[0], inputs, prim)
        _roc(row[1], inputs, prim)
        _parts(row[2], inputs, prim)
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside upper center", ncol=len(handles), frameon=False)
    return figure


def _reliability(ax: Axes, inputs: Inputs, prim: str) -> None:
    block = _block(inputs.report, "reliability", prim)
    color = COLORS[prim]
    band = block.get("band")
    if band:
        ax.fill_between(band["x"], band["lower"], band["upper"], color="#9e9e9e", alpha=0.45, linewidth=0.6,
                        edgecolor="#757575", label=f"consistency band ({band['level']:.0%})")  # fmt: skip
    base_curve = _block(inputs.baseline, "reliability", prim).get("curve")
    if base_curve:
        ax.plot(base_curve["x"], base_curve["y"], color=BASELINE, linewidth=1.3, linestyle="--", label="baseline")
    curve = block["curve"]
    ax.plot(curve["x"], curve["y"], color=color, linewidth=1.8, drawstyle="default", label="isotonic fit (this run)")
    answers = inputs.data.asked(prim)[1]
    ax.plot(answers, np.full(answers.size, -0.015), "|", color=color, alpha=0.35, markersize=5)  # where the answers are
    unit_axes(ax, AXIS_LABEL[prim], "recalibrated c(p): fitted p*")
    base_ece = _block(inputs.baseline, "reliability", prim).get("ece")
    lines = [f"bin-free ECE {block['ece']:.3f}{_ci(block.get('ece_ci'))}"]
    title(ax, f"{LABELS[prim]}: reliability", *lines, *([] if base_ece is None else [f"baseline {base_ece:.3f}"]))


def _roc(ax: Axes, inputs: Inputs, prim: str) -> None:
    for columns, report, color, style, label in (
        (inputs.base, inputs.baseline, BASELINE, "--", "baseline"),
        (inputs.data, inputs.report, COLORS[prim], "-", "this run"),
    ):
        if columns is None:
            continue
        answer = columns.readout_answer(prim)
        keep = ~np.isnan(answer)
        positive = columns.p_star[keep] >= 0.5
        if not keep.any() or positive.all() or not positive.any():
            continue
        false_rate, true_rate = roc_points(answer[keep], positive)
        auc = _block(report, "readout", prim).get("auc")
        shown = "" if auc is None else f" (AUC {auc:.3f})"
        ax.plot(false_rate, true_rate, color=color, linestyle=style, linewidth=1.5, label=f"{label}{shown}")
    unit_axes(ax, "false-positive rate (gold False read True)", "true-positive rate")
    ax.legend(loc="lower right", fontsize=7)
    title(ax, f"{LABELS[prim]}: ROC", "the ranking alone:", "recalibration cannot move it")


def _parts(ax: Axes, inputs: Inputs, prim: str) -> None:
    """MCB up, DSC across; the candidate (and the baseline) with their intervals; equal-Brier diagonals."""
    points = _points(inputs, prim)
    if not points:
        ax.set_axis_off()
        return
    for label, (dsc, mcb, dsc_ci, mcb_ci), color, marker in points:
        xerr = None if dsc_ci is None else [[dsc - dsc_ci[0]], [dsc_ci[1] - dsc]]
        yerr = None if mcb_ci is None else [[mcb - mcb_ci[0]], [mcb_ci[1] - mcb]]
        ax.errorbar([dsc], [mcb], xerr=xerr, yerr=yerr, fmt=marker, color=color, markersize=7, capsize=2,
                    linewidth=1.0, label=label)  # fmt: skip
    if len(points) == 2:
        (_, start, *_), (_, end, *_) = points
        ax.annotate("", xy=(end[0], end[1]), xytext=(start[0], start[1]),
                    arrowprops={"arrowstyle": "->", "color": "#333333", "linewidth": 1.2})  # fmt: skip
    xs = [value for _, (dsc, _, dsc_ci, _), _, _ in points for value in (dsc, *(dsc_ci or ()))]
    ys = [value for _, (_, mcb, _, mcb_ci), _, _ in points for value in (mcb, *(mcb_ci or ()))]
    x_low, x_high = _padded(min(xs), max(xs))
    y_low, y_high = _padded(min(ys), max(ys), floor=0.0)
    for offset in np.linspace(y_low - x_high, y_high - x_low, 7):  # MCB − DSC constant: equal Brier score
        ax.plot([x_low, x_high], [x_low + offset, x_high + offset], color="#bdbdbd", linewidth=0.7, linestyle=":")
    ax.set_xlim(x_low, x_high)
    ax.set_ylim(y_low, y_high)
    ax.set_xlabel("discrimination DSC (higher: better ranking)")
    ax.set_ylabel("miscalibration MCB (higher: worse)")
    ax.legend(loc="upper right", fontsize=7)
    title(ax, f"{LABELS[prim]}: MCB against DSC", "dotted: equal Brier score", "(S = MCB − DSC + UNC)")


def _points(inputs: Inputs, prim: str) -> list[tuple[str, tuple[float, float, Any, Any], str, str]]:
    """(label, (DSC, MCB, DSC interval, MCB interval), colour, marker) of the baseline (when there is one) and
    this run. In an upgrade the points are the comparison's, on the paired renderings."""
    own = _block(inputs.report, "decomposition", prim)
    base = _block(inputs.baseline, "decomposition", prim)
    comparison = inputs.report.get("comparison")
    why = (comparison["primitives"].get(prim) or {}).get("why") if comparison else None
    out = []
    if why:
        out.append(("baseline", (why["dsc"]["baseline"], why["mcb"]["baseline"], base.get("dsc_ci"), base.get("mcb_ci")),
                    BASELINE, "o"))  # fmt: skip
        new = (why["dsc"]["new"], why["mcb"]["new"], own.get("dsc_ci"), own.get("mcb_ci"))
    elif own.get("mcb") is not None:
        if base.get("mcb") is not None:
            out.append(("baseline", (base["dsc"], base["mcb"], base.get("dsc_ci"), base.get("mcb_ci")), BASELINE, "o"))
        new = (own["dsc"], own["mcb"], own.get("dsc_ci"), own.get("mcb_ci"))
    else:
        return []
    return [*out, ("this run", new, COLORS[prim], "D")]


def _padded(low: float, high: float, floor: float | None = None) -> tuple[float, float]:
    pad = max(0.15 * (high - low), 0.01)
    low = low - pad if floor is None else max(floor, low - pad)
    return low, high + pad
