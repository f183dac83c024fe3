"""Mean OVL per primitive with a latent-problem bootstrap interval, for one version's report: what the trend
across versions plots (docs/trend.md). Pure numpy on a report's items, seeded; opens no file."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..defaults import UPGRADE_RESAMPLES
from ..document import Item
from ..document_commands import MeanOvl
from ..vocabulary import PRIMITIVES
from .paired import COLUMNS, column, p_stars
from .primitives import ovl
from .stats import Clusters

LEVEL = 0.95


def mean_ovl_intervals(
    items: Sequence[Item], *, seed: int, resamples: int = UPGRADE_RESAMPLES, level: float = LEVEL
) -> dict[str, MeanOvl]:
    """Per primitive: `mean` OVL of the repeat means over the renderings that answered it (Table 1's mean OVL),
    `n`, `latent_problems`, and the `level` percentile interval [`lower`, `upper`] of a bootstrap that draws
    latent problems with replacement (`resamples` draws from ``default_rng(seed)``, shared by the primitives,
    each resample's mean the ratio of its resampled OVL sums and rendering counts; resamples that drew none
    of a primitive's problems are left out). A primitive asked on no rendering gets `mean` None; one on a
    single latent problem gets no interval."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    p_star = p_stars(items)
    clusters = Clusters.of([str(item["latent_instance_id"]) for item in items])
    counts = clusters.resample_counts(np.random.default_rng(seed), resamples)  # (B, J)
    return {
        prim: _interval(ovl(column(items, COLUMNS[prim][0]), p_star), clusters, counts, level) for prim in PRIMITIVES
    }


def _interval(values: np.ndarray, clusters: Clusters, counts: np.ndarray, level: float) -> MeanOvl:
    asked = ~np.isnan(values)
    problems = int(np.unique(clusters.codes[asked]).size)
    out: MeanOvl = {
        "n": int(asked.sum()),
        "latent_problems": problems,
        "mean": None,
        "lower": None,
        "upper": None,
        "level": level,
        "resamples": 0,
    }
    if not asked.any():
        return out
    out["mean"] = float(values[asked].mean())
    if problems < 2:
        return out
    sums = counts @ clusters.sums(np.where(asked, values, 0.0))
    sizes = counts @ clusters.sums(asked.astype(float))
    boot = sums[sizes > 0] / sizes[sizes > 0]
    tail = (1 - level) / 2
    out.update(
        {"lower": float(np.quantile(boot, tail)), "upper": float(np.quantile(boot, 1 - tail)), "resamples": boot.size}
    )
    return out
