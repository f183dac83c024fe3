"""The paper's analysis, computed from what a run measured. Pure numpy, no scipy; knows nothing of pytest.

Input: one mapping per rendering, as produced by the run and carried on test reports::

    {"instance_id": str, "latent_instance_id": str, "family": str, "representation": str,
     "p_star": float,
     "samples": [{"noul": float,                # P(True) from the Noul question
                  "choice": float,              # P(True), options asked in the order [False, True]
                  "choice_swapped": float,      # P(True), options asked in the order [True, False]
                  "score": [q_0, ..., q_9]},    # the 10-level Score distribution
                 ...],                          # one per repeat; a key is absent when not asked
     "error": str | None}                       # failed renderings are counted, never silently dropped

Output: a JSON-able dict (no NaN anywhere; ``None`` where a statistic cannot be computed, with a short
``reason`` string in the same block) whose keys are the report keys of SPEC.md. Same input and seed give
the same output, whatever the order of the items. Blocks:

    counts                      renderings, measured, failed, latent_problems
    primitives.<p>              Table 1: n, mean_tv, mean_ovl, median_ovl               (p: noul|choice|score)
    representation_sensitivity.<p>   Table 6: mean_pairwise_tv, mean_max_tv, latent_problems
    uncertainty                 Table 2: alpha, beta, lambda, r2, r2_vs_identity, u_max, u_peak_at,
                                share_choice_below_mu, bootstrap_resamples, u_max_ci, lambda_ci,
                                lambda_latent_{mean,ci,t,p}, improvement.{mean,ci,t,p} (the paper's
                                statistics), test.{name,statistic,df,p_value,alternative,effect,effect_ci,
                                permutation_p_value,latent_problems,note} (the valid test of λ = 0), notes
    choice_calibration          Table 3: n, {raw,inverse,tuf}.{mean_ovl,median_ovl}, tuf.{mean_width,coverage}
    decisions                   §5: error_cost, defer_cost, n, rules.<raw|inverse|interval|oracle>.{share,
                                mean_risk, mean_regret}, agreement.<a>_vs_<b>, worked_example
    option_swap                 null when no swapped Choice was asked; else n, mean_shift,
                                first_position_rate, swap_consistency, test, statistic, p_value and the
                                readout of Choice averaged over both orders
    readout.<p>                 n_true, n_false, recall_true, recall_false, balanced_accuracy, auc, offset,
                                sep, collapsed (Choice: averaged over both orders where both were asked)
    calibration.<p>             n, ece, ece_bins, ece_equal_mass, ece_equal_mass_bins, brier (MSE vs p*)
    items                       one row per measured rendering

Score enters everywhere through its expectation μ_S. Randomised procedures (the latent bootstrap, the
sign-flip test) each draw from their own ``np.random.default_rng(seed)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .calibration import calibration
from .choice_calibration import choice_calibration_table
from .decisions import decisions_table
from .items import aggregate_items
from .latent import LatentData
from .primitives import per_primitive, primitive_probabilities, primitive_table
from .readout import readout
from .sensitivity import spread
from .swap import option_swap_table
from .uncertainty import uncertainty_table


def analyze(
    items: Sequence[Mapping[str, Any]],
    *,
    seed: int = 0,
    error_cost: float = 100.0,
    defer_cost: float = 45.0,
    bootstrap: int = 1000,
) -> dict[str, Any]:
    """Everything the summary, the JSON report and the gates need, from per-rendering results.

    bootstrap: latent-problem resamples for the uncertainty intervals (0 skips them)."""
    table = aggregate_items(items)
    probs = primitive_probabilities(table)
    latent = LatentData.of(table.mu_score, table.p_choice, table.p_star, table.latent_ids)
    readout_probs = {**probs, "choice": table.p_choice_both_orders}
    return {
        "counts": table.counts(),
        "primitives": primitive_table(table),
        "representation_sensitivity": per_primitive(probs, spread, table.latent_ids),
        "uncertainty": uncertainty_table(latent, seed=seed, bootstrap=bootstrap),
        "choice_calibration": choice_calibration_table(latent),
        "decisions": decisions_table(latent, error_cost=error_cost, defer_cost=defer_cost),
        "option_swap": option_swap_table(table),
        "readout": per_primitive(readout_probs, readout, table.p_star),
        "calibration": per_primitive(probs, calibration, table.p_star),
        "items": table.rows(),
    }
