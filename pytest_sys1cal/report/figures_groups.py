"""The HTML report's figures of groups and comparisons (mean OVL by family and representation, option swap,
readout margins, the upgrade comparison by family). The list of every figure is figure_registry.py's.
Imported only for ``--sys1cal-html``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..analysis.readout import logit
from ..document import GroupRow, PrimitiveRow
from ..document_decisions import Readout
from ..vocabulary import LABELS
from .breakdown_tables import family_deltas, overall_deltas
from .figures import (
    AXIS_LABEL,
    COLORS,
    Inputs,
    new_figure,
    title,
    unit_axes,
)

MARKERS = {"noul": "o", "choice": "s", "score": "D"}
LOGIT_RANGE = 8.0  # nats shown; answers beyond are drawn in the edge bins


def _group_panel(
    ax: Any, groups: Mapping[str, GroupRow], overall: Mapping[str, PrimitiveRow], prims: list[str], what: str
) -> None:
    names = list(groups)[::-1]  # first group on top
    y = np.arange(len(names))
    for k, prim in enumerate(prims):
        offset = ((len(prims) - 1) / 2 - k) * 0.22  # the first primitive on top
        values = [groups[name]["primitives"][prim]["mean_ovl"] for name in names]
        shown = [(v, yy + offset) for v, yy in zip(values, y, strict=True) if v is not None]
        if shown:
            xs, ys = zip(*shown, strict=True)
            ax.scatter(xs, ys, marker=MARKERS[prim], s=26, color=COLORS[prim], label=LABELS[prim], zorder=3)
        row = overall.get(prim)
        if row is not None and (mean := row["mean_ovl"]) is not None:
            ax.axvline(mean, color=COLORS[prim], linestyle=":", linewidth=1.0)
    ax.set_yticks(y, [f"{name} (n={groups[name]['renderings']})" for name in names])
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("mean OVL (1 − mean TV to p*)")
    title(ax, f"by {what}")


def ovl_by_group(inputs: Inputs) -> Figure | None:
    report = inputs.report
    blocks = [(report.get("by_family"), "family"), (report.get("by_representation"), "representation")]
    blocks = [(groups, what) for groups, what in blocks if groups]
    if not blocks:
        return None
    prims = inputs.primitives()
    rows = max(len(groups) for groups, _ in blocks)
    figure = new_figure(10.0, 1.0 + 0.38 * rows)
    axes = figure.subplots(1, len(blocks), squeeze=False, sharex=True)[0]
    for ax, (groups, what) in zip(axes, blocks, strict=True):
        _group_panel(ax, groups, report["primitives"], prims, what)
    axes[-1].legend(loc="lower left", bbox_to_anchor=(1.0, 0.0))
    return figure


def option_swap(inputs: Inputs) -> Figure | None:
    swap = inputs.report.get("option_swap")
    data = inputs.data
    plain, swapped = data.answers["choice"], data.choice_swapped
    both = ~np.isnan(plain) & ~np.isnan(swapped)
    if swap is None or not both.any():
        return None
    figure = new_figure(8.4, 3.9)
    scatter, hist = figure.subplots(1, 2)
    scatter.scatter(swapped[both], plain[both], s=10, color=COLORS["choice"], alpha=0.6, linewidths=0)
    unit_axes(scatter, "P(True) asked [True, False] (True first)", "P(True) asked [False, True] (True second)")
    rate = swap.get("first_position_rate")
    title(
        scatter,
        "Choice in both option orders",
        f"mean shift {swap['mean_shift']:+.3f}, first-position rate {'—' if rate is None else f'{rate:.3f}'}",
    )
    shift = plain[both] - swapped[both]
    # Bins centred on 0 (the middle one is [−0.025, 0.025)): an exact-zero shift is drawn as zero, not as a
    # positive one; how many are exactly 0 is said in the title.
    hist.hist(shift, bins=centred_bins(1.0, 20), color=COLORS["choice"], alpha=0.8)
    hist.axvline(0, color="#444444", linewidth=0.8, linestyle="--")
    hist.axvline(float(shift.mean()), color="black", linewidth=1.2)
    hist.set_xlabel("shift: P(True | True second) − P(True | True first)")
    hist.set_ylabel("renderings")
    zero = int(np.sum(shift == 0))
    title(
        hist,
        "Shift per rendering",
        f"{int(both.sum())} renderings asked in both orders, {zero} with shift exactly 0",
        f"mean shift {shift.mean():+.3f} (solid line)",
    )
    return figure


def centred_bins(limit: float, per_side: int) -> np.ndarray:
    """Histogram edges from −limit to +limit whose middle bin is centred on 0 (width limit/per_side)."""
    width = limit / per_side
    return (np.arange(-per_side, per_side + 2) - 0.5) * width


def _margin_panel(ax: Any, inputs: Inputs, prim: str) -> None:
    data = inputs.data
    answer = data.readout_answer(prim)
    keep = ~np.isnan(answer)
    margins = np.clip(logit(answer[keep]), -LOGIT_RANGE, LOGIT_RANGE)
    gold = data.p_star[keep] >= 0.5
    bins = np.linspace(-LOGIT_RANGE, LOGIT_RANGE, 33)
    ax.hist(margins[gold], bins=bins, color=COLORS[prim], alpha=0.75, label="gold True (p* ≥ 0.5)")
    ax.hist(margins[~gold], bins=bins, color="#555555", alpha=0.45, label="gold False")
    ax.axvline(0, color="#444444", linewidth=0.8, linestyle="--")
    block: Readout | None = inputs.report["readout"].get(prim)
    swap = inputs.report["option_swap"]
    if prim == "choice" and swap:
        block = swap  # the readout of Choice over both orders
    offset, sep = (None, None) if block is None else (block["offset"], block["sep"])
    numbers = ["margins not computed"]
    if offset is not None and sep is not None:
        for value, style in ((offset + sep, "-"), (offset - sep, "-"), (offset, ":")):
            ax.axvline(float(np.clip(value, -LOGIT_RANGE, LOGIT_RANGE)), color="black", linestyle=style, linewidth=1.1)
        collapsed = ": collapsed" if block and block["collapsed"] else ""
        numbers = [f"m₊ {offset + sep:+.2f}, m₋ {offset - sep:+.2f}", f"offset {offset:+.2f}, sep {sep:.2f}{collapsed}"]
    ax.set_xlabel(f"logit {AXIS_LABEL[prim].split(' μ_S')[0]} (nats)")
    ax.set_ylabel("renderings")
    title(ax, LABELS[prim], *numbers)
    ax.legend(loc="upper left", fontsize=7)


def readout_margins(inputs: Inputs) -> Figure | None:
    prims = inputs.primitives()
    if not prims:
        return None
    figure = new_figure(3.4 * len(prims), 3.5)
    for ax, prim in zip(figure.subplots(1, len(prims), squeeze=False)[0], prims, strict=True):
        _margin_panel(ax, inputs, prim)
    return figure


def family_delta(inputs: Inputs) -> Figure | None:
    deltas = family_deltas(inputs.gates.upgrade)
    if not deltas:
        return None
    overall = overall_deltas(inputs.gates.upgrade)
    # Top to bottom: the whole dataset's Δ (the row the verdicts read), then the families by name.
    rows = ([OVERALL] if overall else []) + sorted({family for cells in deltas.values() for family in cells})
    rows = rows[::-1]
    figure = new_figure(7.5, 1.2 + 0.45 * len(rows))
    ax = figure.subplots()
    labelled: set[str] = set()
    for k, (prim, cells) in enumerate(deltas.items()):
        offset = ((len(deltas) - 1) / 2 - k) * 0.22  # the first primitive on top
        for row, name in enumerate(rows):
            cell = overall.get(prim) if name == OVERALL else cells.get(name)
            if cell is None:
                continue
            low, high = cell["ci"] or (cell["difference"], cell["difference"])
            ax.plot([low, high], [row + offset] * 2, color=COLORS[prim], linewidth=2.4 if name == OVERALL else 1.6)
            ax.scatter(
                [cell["difference"]],
                [row + offset],
                marker=MARKERS[prim],
                s=40 if name == OVERALL else 26,
                color=COLORS[prim],
                label=None if prim in labelled else LABELS[prim],
            )
            labelled.add(prim)
    if overall:
        ax.axhline(len(rows) - 1.5, color="#999999", linewidth=0.8)
    ax.axvline(0, color="#444444", linewidth=0.8)
    margins = {limit for g in inputs.gates.upgrade if (limit := g.limit)}
    for k, margin in enumerate(sorted(margins)):
        label = "gate margin −δ" if k == 0 else None
        ax.axvline(margin, color="#b2182b", linewidth=0.9, linestyle="--", label=label)
    ax.set_yticks(np.arange(len(rows)), [f"{name}: the gate's Δ" if name == OVERALL else name for name in rows])
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("Δ mean OVL, new − baseline (families: 95% interval; all: the gate's one-sided bounds)")
    ax.legend(loc="lower left", bbox_to_anchor=(1.0, 0.0))
    return figure


OVERALL = "all"
