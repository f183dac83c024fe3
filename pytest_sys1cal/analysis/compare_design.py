"""Whether an upgrade comparison can decide at its margin at all (docs/statistics.md §6.6): its own minimum
detectable effect for the pass side, from the bootstrap SE it measured, against the margin δ, and what would
bring it within the margin (the paired formula of docs/power.md with this comparison's own Var(D), DEFF
and repeat noise). Pure arithmetic on the numbers compare.py measured."""

from __future__ import annotations

import math
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any

_NORMAL = NormalDist()


def design_check(
    metric: Mapping[str, Any], margin: float, level: float, repeats: int, within_sum: float | None, *, power: float
) -> dict[str, Any]:
    """The comparison's minimum detectable effect: mde = (z_{1−level} + z_{power})·se, the smallest margin that an
    unchanged model (true Δ = 0) is shown within with probability `power` when its non-inferiority test runs at
    `level` (its Holm level). `enough` is mde ≤ margin; when it is not, an unchanged model is often
    inconclusive, and `renderings` / `repeats` say how many paired renderings, or repeats per rendering in
    both recordings, would bring mde within the margin (`repeats` None when the repeat noise is unknown or
    when repeats alone cannot: the change itself varies too much, `repeats_alone` False)."""
    se, n = float(metric["se"]), int(metric["n"])
    z = _NORMAL.inv_cdf(1 - level) + _NORMAL.inv_cdf(power)
    mde = z * se
    out: dict[str, Any] = {
        "mde": mde,
        "margin": margin,
        "level": level,
        "power": power,
        "enough": bool(mde <= margin),
        "renderings": None,
        "repeats": None,
        "repeats_alone": None,
    }
    if out["enough"] or margin <= 0:
        return out
    out["renderings"] = math.ceil(z**2 * n * se**2 / margin**2)
    deff, sigma_delta = metric.get("design_effect"), metric.get("sigma_delta")
    if within_sum is not None and deff and sigma_delta is not None:
        room = n * margin**2 / (z**2 * deff) - sigma_delta**2  # what the repeat-noise part of Var(D) may be
        out["repeats_alone"] = bool(room > 0)
        if room > 0:
            out["repeats"] = max(math.ceil(within_sum / room), repeats + 1)
    return out
