"""Option-order effects of Choice: the same question asked with options [False, True] and [True, False]."""

from __future__ import annotations

import numpy as np

from ..document_decisions import OptionSwap
from .items import ItemTable
from .readout import readout
from .stats import Clusters, NotEnoughData, floor_p, t_test, with_reasons

TEST_NAME = "two-sided t-test on per-latent mean shift"


def option_swap_table(table: ItemTable) -> OptionSwap | None:
    """None when no rendering was asked the swapped Choice (e.g. reconstructed cassettes).

    shift = P(True | [False, True]) − P(True | [True, False]): positive when True gains by being shown
    second. first_position_rate = choose-A rate: per rendering, the average over the two orders of
    1{the option shown first gets the larger probability} (ties ½); 0.5 for an order-blind model
    whatever its accuracy (docs/statistics.md §5.1). The readout metrics (recall, AUC, offset,
    sep) are those of Choice averaged over both orders.
    """
    plain, swapped = table.p_choice, table.p_choice_swapped
    if np.isnan(swapped).all():
        return None
    both = ~np.isnan(plain) & ~np.isnan(swapped)
    out: OptionSwap = {
        "n": int(both.sum()),
        "mean_shift": None,
        "first_position_rate": None,
        "swap_consistency": None,
        "test": TEST_NAME,
        "statistic": None,
        "p_value": None,
        **readout(table.p_choice_both_orders[both], table.p_star[both]),
    }
    reasons = [out.pop("reason")] if "reason" in out else []
    if not both.any():
        return with_reasons(out, reasons + ["not enough data: no rendering was asked both option orders"])
    c, s = plain[both], swapped[both]
    shift = c - s
    out.update(
        {
            "mean_shift": float(shift.mean()),
            "first_position_rate": float(first_position_share(c, s).mean()),
            "swap_consistency": float(np.mean((c >= 0.5) == (s >= 0.5))),
        }
    )
    try:
        test = t_test(Clusters.of(table.latent_ids[both]).means(shift), "two-sided")
    except NotEnoughData as exc:
        return with_reasons(out, reasons + [str(exc)])
    out.update({"statistic": test.statistic, "p_value": floor_p(test.p_value)})
    return with_reasons(out, reasons)


def first_position_share(plain: np.ndarray, swapped: np.ndarray) -> np.ndarray:
    """Per rendering asked both orders: the share of the two orders in which the option shown first gets the
    larger probability (ties ½), in {0, ¼, ½, ¾, 1}. Order [False, True] shows False first: it wins when
    P(True) < 0.5; order [True, False] shows True first: it wins when P(True) > 0.5."""
    return ((np.sign(0.5 - plain) + 1) / 2 + (np.sign(swapped - 0.5) + 1) / 2) / 2
