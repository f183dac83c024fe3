"""Rendering by rendering, how far each primitive moved against the baseline: D_i = OVL_new,i − OVL_base,i,
the paired difference whose mean Δ̂ the upgrade gate tests (analysis/upgrade.py, docs/statistics.md §6), with
both answers beside it. Sorted so that the rendering that dropped most, on any compared primitive, comes
first: is a drop broad, or a few items of one family? Beside them, how large one D_i gets by chance alone
(`chance_spreads`, docs/statistics.md §6.7). Knows nothing of pytest or of thresholds.yaml."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from ..document import ReportDocument
from ..document_upgrade import ChanceSpread, RenderingMove
from ..vocabulary import MEAN_READING
from .paired import Paired, pair_reports

# The lowest of n draws falls below its median -q·sd with probability 1/2: Φ(−q) = 1 − 2^(−1/n).
HALF = 0.5


def rendering_moves(
    new: ReportDocument, baseline: ReportDocument, primitives: Sequence[str], reading: str = MEAN_READING
) -> list[RenderingMove]:
    """One row per rendering measured in both reports: ``instance_id``, ``family``, ``representation``,
    ``p_star``, and per primitive of `primitives` the ``baseline`` and ``new`` answer (repeat means; Score: μ_S)
    and ``d`` (D_i; null where either report did not ask it); ``worst`` is the lowest D_i of the row and
    ``worst_primitive`` its primitive (null when none was compared). Rows sorted by ``worst``, lowest first
    (ties: the larger summed drop first, then by instance id); rows with nothing compared last. D_i under the
    `reading` the gate read (per call: each side's mean over the rendering's calls of their OVL). Raises
    PairingError as pair_reports does."""
    paired = pair_reports(new, baseline, reading)
    items = {item["instance_id"]: item for item in new["items"]}
    differences = {prim: paired.ovl("new", prim) - paired.ovl("base", prim) for prim in primitives}
    rows: list[RenderingMove] = []
    for index, instance_id in enumerate(paired.instance_id):
        item = items[instance_id]
        d = {prim: _number(differences[prim][index]) for prim in primitives}
        compared = [(value, prim) for prim, value in d.items() if value is not None]
        worst, worst_primitive = min(compared, key=lambda pair: pair[0]) if compared else (None, None)
        rows.append(
            {
                "instance_id": instance_id,
                "family": item.get("family"),
                "representation": item.get("representation"),
                "p_star": float(paired.p_star[index]),
                "baseline": {prim: _number(paired.base[prim][index]) for prim in primitives},
                "new": {prim: _number(paired.new[prim][index]) for prim in primitives},
                "d": d,
                "worst": worst,
                "worst_primitive": worst_primitive,
            }
        )
    rows.sort(key=_order)
    return rows


def _order(row: RenderingMove) -> tuple[bool, float, float, str]:
    """The lowest D_i first; among equal ones, the larger drop summed over the primitives; then the id."""
    compared = [value for value in row["d"].values() if value is not None]
    return row["worst"] is None, row["worst"] or 0.0, sum(compared), row["instance_id"]


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def chance_spreads(
    new: ReportDocument, baseline: ReportDocument, primitives: Sequence[str], reading: str = MEAN_READING
) -> dict[str, ChanceSpread]:
    """Per compared primitive, how large one rendering's D_i gets by chance alone (docs/statistics.md §6.7):
    ``sd``, its standard deviation, and ``lowest``, the median of the lowest of ``n`` such D_i (normal
    approximation). ``basis`` says where sd came from: ``repeats`` (an A/A re-recording: both recordings' repeat
    noise in the OVL of their repeat means, §6.7) where both hold their repeats; else ``within-problem`` (the pooled
    SD of D_i about its latent problem's mean: what a change of the problem as a whole does not explain,
    chance and rendering-specific moves together; the only basis read per call, where the closed form of the
    repeat means' OVL does not hold). Raises PairingError as pair_reports does."""
    paired = pair_reports(new, baseline, reading)
    out: dict[str, ChanceSpread] = {}
    for prim in primitives:
        both = ~np.isnan(paired.new[prim]) & ~np.isnan(paired.base[prim])
        n = int(both.sum())
        spread = _repeat_spread(paired, prim, both) if paired.reading == MEAN_READING else None
        basis = "repeats"
        if spread is None:
            spread, basis = _within_problem_spread(paired, prim, both), "within-problem"
        if spread is None or n < 2:
            continue
        q = -NormalDist().inv_cdf(1 - HALF ** (1 / n))
        out[prim] = {"sd": spread, "lowest": -q * spread, "n": n, "basis": basis}
    return out


def _repeat_spread(paired: Paired, prim: str, rows: np.ndarray) -> float | None:
    """√(mean Var of D_i when nothing changed): per rendering, both recordings' repeat means drawn as
    N(m, s²/r) about the rendering's pooled mean m (s² the pooled variance of one repeat), so that each OVL is
    1 − a folded normal |p̄ − p*|, whose variance has a closed form (docs/statistics.md §6.7)."""
    new, base = paired.new_repeats[prim], paired.base_repeats[prim]
    if new is None or base is None:
        return None
    both = np.concatenate([new[rows], base[rows]], axis=1)
    complete = (np.sum(~np.isnan(new[rows]), axis=1) >= 2) & (np.sum(~np.isnan(base[rows]), axis=1) >= 2)
    if not complete.any():
        return None
    variance = (np.nanvar(new[rows][complete], axis=1, ddof=1) + np.nanvar(base[rows][complete], axis=1, ddof=1)) / 2
    tau = np.sqrt(variance / paired.repeats)
    mu = np.nanmean(both[complete], axis=1) - paired.p_star[rows][complete]
    return math.sqrt(float(np.mean(2 * _folded_variance(mu, tau))))


def _folded_variance(mu: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Var |X| for X ~ N(mu, tau²): mu² + tau² − (E|X|)², E|X| = tau·√(2/π)·exp(−mu²/2tau²) + mu·(1 − 2Φ(−mu/tau))."""
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(tau > 0, mu / tau, np.inf * np.sign(mu))
        phi_minus = np.array([NormalDist().cdf(-value) if np.isfinite(value) else float(value < 0) for value in z])
        mean_abs = tau * math.sqrt(2 / math.pi) * np.exp(-(np.where(tau > 0, z, 0) ** 2) / 2) + mu * (1 - 2 * phi_minus)
    mean_abs = np.where(tau > 0, mean_abs, np.abs(mu))
    return np.maximum(mu**2 + tau**2 - mean_abs**2, 0.0)


def _within_problem_spread(paired: Paired, prim: str, rows: np.ndarray) -> float | None:
    """The pooled SD of D_i about the mean of its latent problem (problems with two or more renderings)."""
    d = paired.ovl("new", prim) - paired.ovl("base", prim)
    squares, freedom = 0.0, 0
    for latent in np.unique(paired.latent_ids[rows]):
        values = d[rows & (paired.latent_ids == latent)]
        if values.size >= 2:
            squares += float(np.sum((values - values.mean()) ** 2))
            freedom += values.size - 1
    return math.sqrt(squares / freedom) if freedom else None
