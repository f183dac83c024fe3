"""Paper §5 (Table 4): what each reading of Choice is worth when a decision hangs on it.

Actions: act as if True, act as if False, or defer. A wrong action costs `error_cost` (either way),
deferring costs `defer_cost`, a right action nothing. Because p* is exact on Sys1Cal, the expected loss
of an action is exact too: (1−p*)·c, p*·c or c_D (docs/statistics.md §4).
"""

from __future__ import annotations

import numpy as np

from ..document_decisions import Decisions, WorkedExample
from .latent import MU_GRID, LatentData, LatentFit
from .stats import with_reasons

ACTIONS = ("act_true", "act_false", "defer")  # ties go to the earlier action
RULES = ("raw", "inverse", "interval")


def action_risks(low: np.ndarray, high: np.ndarray, error_cost: float, defer_cost: float) -> np.ndarray:
    """(3, n) worst-case expected loss of each action when P(True) is only known to lie in [low, high]:
    the Γ-minimax criterion. A point estimate p is the interval [p, p], and then this is the Bayes risk."""
    return np.stack([(1 - low) * error_cost, high * error_cost, np.full(np.shape(low), float(defer_cost))])


def rule_intervals(fit: LatentFit | None, mu: np.ndarray, choice: np.ndarray) -> dict[str, tuple]:
    """What each rule believes about P(True): raw Choice, inverse-calibrated Choice, the T/U/F interval."""
    if fit is None:
        return {"raw": (choice, choice)}
    calibrated = fit.inverse(choice)
    return {
        "raw": (choice, choice),
        "inverse": (calibrated, calibrated),
        "interval": (mu, mu + fit.mass(mu)),
    }


def choose(intervals: dict[str, tuple], error_cost: float, defer_cost: float) -> dict[str, np.ndarray]:
    """Each rule's action (an index into ACTIONS) per item."""
    return {
        rule: np.argmin(action_risks(low, high, error_cost, defer_cost), axis=0)
        for rule, (low, high) in intervals.items()
    }


def decisions_table(data: LatentData, *, error_cost: float, defer_cost: float) -> Decisions:
    out: Decisions = {
        "error_cost": float(error_cost),
        "defer_cost": float(defer_cost),
        "n": data.n,
        "rules": dict.fromkeys((*RULES, "oracle")),
        "agreement": {f"{a}_vs_{b}": None for i, a in enumerate(RULES) for b in RULES[i + 1 :]},
        "worked_example": None,
    }
    if data.n == 0:
        return with_reasons(out, ["not enough data: no rendering has both a Choice and a Score answer"])
    truth = action_risks(data.p_star, data.p_star, error_cost, defer_cost)
    oracle_risk = truth.min(axis=0)
    chosen = choose(rule_intervals(data.fit, data.mu, data.choice), error_cost, defer_cost)
    chosen["oracle"] = np.argmin(truth, axis=0)
    for rule, actions in chosen.items():
        realised = truth[actions, np.arange(data.n)]
        out["rules"][rule] = {
            "share": {name: float(np.mean(actions == k)) for k, name in enumerate(ACTIONS)},
            "mean_risk": float(realised.mean()),
            "mean_regret": float(np.mean(realised - oracle_risk)),
        }
    for pair in out["agreement"]:
        a, b = pair.split("_vs_")
        if a in chosen and b in chosen:
            out["agreement"][pair] = float(np.mean(chosen[a] == chosen[b]))
    if data.fit is None:
        return with_reasons(out, [data.reason or "no fit"])
    out["worked_example"] = worked_example(data.fit, error_cost, defer_cost)
    return out


def worked_example(fit: LatentFit, error_cost: float, defer_cost: float) -> WorkedExample:
    """The paper's illustration, computed: a Score expectation for which the three rules choose three
    different actions. It takes the middle of the first such range of μ_S (rounded to 0.01 so it reads
    cleanly) and the Choice the fitted model predicts there, f(μ_S)."""
    actions = choose(rule_intervals(fit, MU_GRID, fit.choice(MU_GRID)), error_cost, defer_cost)
    raw, inverse, interval = (actions[rule] for rule in RULES)
    distinct = np.flatnonzero((raw != inverse) & (raw != interval) & (inverse != interval))
    if distinct.size == 0:
        return {
            "mu_score": None,
            "choice": None,
            "inverse": None,
            "interval": None,
            "actions": None,
            "risks": None,
            "region": None,
            "reason": "at these costs no Score expectation makes the three rules choose three different actions",
        }
    breaks = np.flatnonzero(np.diff(distinct) > 1)
    low = float(MU_GRID[distinct[0]])
    high = float(MU_GRID[distinct[breaks[0] if breaks.size else -1]])
    mu = round((low + high) / 2, 2)
    if not low <= mu <= high:  # a range narrower than the rounding step
        mu = (low + high) / 2
    point = np.array([mu])
    choice = fit.choice(point)
    bounds = rule_intervals(fit, point, choice)
    risks = {
        rule: dict(zip(ACTIONS, action_risks(low, high, error_cost, defer_cost)[:, 0].tolist(), strict=True))
        for rule, (low, high) in bounds.items()
    }
    return {
        "mu_score": mu,
        "choice": float(choice[0]),
        "inverse": float(bounds["inverse"][0][0]),
        "interval": [float(bounds["interval"][0][0]), float(bounds["interval"][1][0])],
        "actions": {rule: min(risk, key=risk.__getitem__) for rule, risk in risks.items()},  # ties: ACTIONS order
        "risks": risks,
        "region": [low, high],
    }
