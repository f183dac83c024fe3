"""The HTML report's figure of the upgrade comparison's paired differences: per compared primitive, the
histogram of D_i = OVL new − OVL baseline over the paired renderings, with Δ̂ (their mean, which the gate
tests) and the margins −δ and −δ₀ marked. A broad shift moves the whole histogram; a few bad items leave the
bulk at 0 and a tail. Read from the report's ``comparison`` block alone. Imported only for ``--sys1cal-html``."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ..vocabulary import LABELS
from .figures import COLORS, Inputs, new_figure, title
from .figures_groups import centred_bins
from .upgrade_text import compared

PER_SIDE = 20  # bins on each side of the middle one, which is centred on 0


def paired_differences(inputs: Inputs) -> Figure | None:
    comparison = inputs.report.get("comparison")
    if comparison is None:
        return None
    prims = compared(comparison)
    if not prims:
        return None
    values = {
        prim: np.array([row["d"][prim] for row in comparison["renderings"] if row["d"].get(prim) is not None])
        for prim in prims
    }
    reach = max(float(np.max(np.abs(v))) if v.size else 0.0 for v in values.values())
    limit = max(0.05, float(np.ceil(reach / 0.05) * 0.05))  # a round range that holds every D
    figure = new_figure(3.4 * len(prims), 3.5)
    axes = figure.subplots(1, len(prims), squeeze=False, sharex=True)[0]
    for ax, prim in zip(axes, prims, strict=True):
        row = comparison["primitives"][prim]
        d = values[prim]
        ax.hist(d, bins=centred_bins(limit, PER_SIDE), color=COLORS[prim], alpha=0.8)
        ax.axvline(0, color="#444444", linewidth=0.8)
        ax.axvline(row["difference"], color="black", linewidth=1.6, label="Δ̂, the mean of D")
        if row.get("margin") is not None:
            ax.axvline(-row["margin"], color="#b2182b", linewidth=1.0, linestyle="--", label="−δ (pass margin)")
        if row.get("fail_margin") is not None:
            ax.axvline(-row["fail_margin"], color="#b2182b", linewidth=1.0, linestyle=":", label="−δ₀ (fail margin)")
        ax.set_xlabel("D = OVL new − OVL baseline")
        ax.set_ylabel("renderings")
        title(
            ax,
            f"{LABELS.get(prim, prim)}: Δ̂ {row['difference']:+.3f}, {row['verdict']}",
            f"D < 0 on {int(np.sum(d < 0))}, = 0 on {int(np.sum(d == 0))}, > 0 on {int(np.sum(d > 0))}",
        )
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncol=len(handles), frameon=False)
    return figure
