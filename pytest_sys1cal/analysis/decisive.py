"""What would decide an inconclusive upgrade comparison (docs/statistics.md §7.5): the size of a new recording
(paired renderings and latent problems, or repeats per rendering in both recordings) that decides it, passed or
FAILED, with a given probability whatever the true Δ, at the observed spread. The advice of every inconclusive
verdict, fixed or sequential (analysis/upgrade.py), reads it. Pure arithmetic."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any, Protocol

from ..defaults import UPGRADE_POWER

_NORMAL = NormalDist()


class Margins(Protocol):
    """δ (`drop`, the largest drop passed) and δ₀ (`fail_drop`, the drop that must be shown to fail)."""

    @property
    def drop(self) -> float: ...

    @property
    def fail_drop(self) -> float: ...


def decisive_size(
    *,
    n: int,
    se: float,
    latent_problems: int,
    margin: Margins,
    level: float,
    repeats: int,
    within_sum: float | None = None,
    power: float = UPGRADE_POWER,
) -> dict[str, Any]:
    """How large a recording decides this comparison (passed or FAILED) with probability `power` whatever the
    true Δ, at the observed spread (docs/statistics.md §7.5). A recording whose Δ̂' has SE se' leaves it
    undecided exactly when −δ₀ − z·se' ≤ Δ̂' ≤ −δ + z·se' (z = z_{1−level}): an interval centred on the middle
    of the margins, so the worst true Δ is that middle, where P(undecided) = 2Φ(z − g/se') − 1, g = (δ − δ₀)/2.
    It is at most 1 − power when se' ≤ s = g/(z − z_{1−power/2}). More latent problems: se' scales as
    1/√(renderings) at this comparison's n·se² (its per-rendering variance times its design effect). More
    repeats r' in both recordings: only the repeat part of n·se², within_sum/r (within_sum = σ²_w,new +
    σ²_w,base, not shared between renderings), changes, so n·se'² = n·se² − within_sum/r + within_sum/r' ≤ n·s²,
    when the repeat noise is known and repeats alone can do it. None of either when δ₀ = δ: a difference on
    the margin is never decided. Which way it decides depends on Δ, which the recording could not pin down."""
    gap = (margin.drop - margin.fail_drop) / 2
    out: dict[str, Any] = {"gap": gap, "power": power, "renderings": None, "latent_problems": None, "repeats": None}
    if gap <= 0 or n < 1 or not se > 0:
        return out
    z = _NORMAL.inv_cdf(1 - level) - _NORMAL.inv_cdf(1 - power / 2)
    if z <= 0:  # a level this loose decides the middle at any size
        return out
    target = (gap / z) ** 2  # se'² that decides
    renderings = math.ceil(n * se**2 / target)
    out["renderings"] = renderings
    out["latent_problems"] = max(2, math.ceil(renderings * latent_problems / n))
    if within_sum is not None and within_sum > 0:
        room = n * target - n * se**2 + within_sum / repeats  # what within_sum/r' may be
        if room > 0:
            out["repeats"] = max(math.ceil(within_sum / room), repeats)
    return out
