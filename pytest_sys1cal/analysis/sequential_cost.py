"""What a sequential upgrade comparison is expected to cost, said before anything is recorded (docs/statistics.md
§7.7): at most the whole dataset; on average, the requests of the rounds up to the look where every gated
primitive is decided, over the look statistics' joint law at an assumed spread. The spread of the paired
difference D cannot be measured before the candidate is recorded, so it is assumed: the planning values of
§7.6 (σ_Δ and ρ_Δ of a typical upgrade, measured between the bundled SemIf recordings) with the repeat noise
σ_w measured on the baseline where it holds two repeats or more (else §7.6's planning 0.10). Pure numpy."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..document import ReportDocument
from .paired import per_repeat, per_repeat_ovl, within_variance
from .sequential import t_critical
from .sequential_design import Design

# σ_Δ and ρ_Δ of the paired differences between the bundled SemIf recordings of Gemma-3-270M and SmolLM2-135M
# (docs/statistics.md §7.6, where scripts/sequential_simulation.py measures them): a typical upgrade's spread.
PLANNING: dict[str, tuple[float, float]] = {
    "noul": (0.0335, 0.649),
    "choice": (0.0326, 0.640),
    "score": (0.0769, 0.973),
}
PLANNING_SIGMA_W = 0.10  # docs/power.md's planning value, where the baseline cannot say
DRAWS = 4000  # simulated recordings of the look statistics: the expected share to about ±0.5 points


@dataclass(frozen=True)
class Spread:
    """The assumed full-recording SE of Δ̂ per gated primitive, and what it rests on, in words."""

    se: dict[str, float]
    source: str


def assumed_spread(
    baseline: ReportDocument, primitives: Sequence[str], repeats: int, renderings_per_problem: np.ndarray
) -> Spread:
    """Per primitive, the SE of Δ̂ over the whole dataset that a candidate with a typical upgrade's spread would
    give against this baseline (PLANNING), each recording averaging `repeats` model repeats. For the ratio
    estimator ΣD/N with D_i = Δ + u_j + e_i + ε_i, Var = Σ_j (m_j·v + m_j(m_j − 1)·ρ_Δσ_Δ²)/N², v = σ_Δ² + 2σ_w²/r,
    m_j the renderings of problem j."""
    sizes = np.asarray(renderings_per_problem, dtype=float)
    total = sizes.sum()
    measured = baseline_sigma_w(baseline)
    se: dict[str, float] = {}
    said: list[str] = []
    for prim in primitives:
        sigma_delta, rho = PLANNING[prim]
        sigma_w = measured.get(prim)
        said.append(f"{prim} {sigma_w:.3f}" if sigma_w is not None else f"{prim} {PLANNING_SIGMA_W:.2f} (assumed)")
        w = PLANNING_SIGMA_W if sigma_w is None else sigma_w
        v = sigma_delta**2 + 2 * w**2 / repeats
        variance = float(np.sum(sizes * v + sizes * (sizes - 1) * rho * sigma_delta**2)) / total**2
        se[prim] = math.sqrt(variance)
    source = (
        "a typical upgrade's spread (σ_Δ, ρ_Δ of docs/statistics.md §7.6) with the baseline's repeat noise σ_w "
        f"({', '.join(said)})"
    )
    return Spread(se, source)


def baseline_sigma_w(baseline: ReportDocument) -> dict[str, float | None]:
    """σ_w per primitive measured on the baseline (the per-repeat SD of per-rendering OVL, §6.4); None where it
    holds one repeat, or answers that are means already (a reconstructed set)."""
    items = baseline.get("items") or []
    repeats = int(baseline.get("repeats") or 1)
    if repeats < 2 or int(baseline.get("repeats_per_answer") or 1) > 1 or not items:
        return {}
    p_star = np.asarray([float(item["p_star"]) for item in items])
    rows = np.ones(len(items), dtype=bool)
    out: dict[str, float | None] = {}
    for prim, values in per_repeat(items, repeats).items():
        variance = within_variance(per_repeat_ovl(values, p_star), rows)
        out[prim] = math.sqrt(variance) if variance is not None else None
    return out


def expected_requests(
    design: Design,
    round_requests: Sequence[int],
    se: Mapping[str, float],
    margins: Mapping[str, tuple[float, float]],
    delta: Mapping[str, float],
    *,
    seed: int = 0,
    draws: int = DRAWS,
) -> float:
    """The mean requests of a sequential recording whose true Δ per primitive is `delta`: per draw, the look
    statistics of each primitive follow the canonical joint law (Δ̂_k = Δ + s·B(t_k)/t_k, s the full-recording
    SE, B a standard Brownian motion, independent between primitives), each test is judged against the design's
    critical values on the t scale (critical_t) with Holm over the primitives as at a real look (§7.4), and the recording stops
    at the first look where every primitive is decided. `margins`: per primitive (δ, δ₀); `round_requests`: the
    requests of each round."""
    rng = np.random.default_rng(seed)
    t = np.asarray(design.fractions)
    steps = np.diff(np.concatenate([[0.0], t]))
    prims = list(se)
    decided = np.ones((draws, design.rounds), dtype=bool)
    crossings: dict[str, dict[str, np.ndarray]] = {"worse": {}, "noninferior": {}}
    for prim in prims:
        path = np.cumsum(rng.normal(size=(draws, design.rounds)) * np.sqrt(steps), axis=1)
        estimate = delta[prim] + se[prim] * path / t
        spread = se[prim] / np.sqrt(t)
        drop, fail_drop = margins[prim]
        crossings["noninferior"][prim] = (estimate + drop) / spread
        crossings["worse"][prim] = (-fail_drop - estimate) / spread
    rejected = {test: _holm(statistics, design, prims) for test, statistics in crossings.items()}
    for prim in prims:
        decided &= rejected["worse"][prim] | rejected["noninferior"][prim]
    decided[:, -1] = True  # the last look decides, inconclusive included
    stop = np.argmax(decided, axis=1)
    cumulative = np.cumsum(np.asarray(round_requests, dtype=float))
    return float(cumulative[stop].mean())


def critical_t(design: Design, level: float) -> np.ndarray:
    """The critical values a real look holds its t statistic to at `level` (sequential.crossed): each look's
    nominal level on the t scale with one fewer degrees of freedom than its latent problems. Applied to the
    simulated statistics, whose SE is known, they stand in for the SE a look estimates from few problems."""
    nominal = design.nominal(level)
    return np.asarray([t_critical(end - 1, tail) for end, tail in zip(design.ends, nominal, strict=True)])


def _holm(statistics: Mapping[str, np.ndarray], design: Design, prims: Sequence[str]) -> dict[str, np.ndarray]:
    """Per primitive, per draw and look: rejected by Holm's step-down over the primitives at that look, each
    test crossing at any look so far at its level α/(m − r) (sequential.holm_rejected, on every draw at once)."""
    m = len(prims)
    levels = [critical_t(design, design.alpha / (m - rank)) for rank in range(m)]
    crossed = {
        prim: np.stack([np.maximum.accumulate(statistics[prim] >= level, axis=1) for level in levels]) for prim in prims
    }  # (level rank, draw, look)
    rejected = {prim: np.zeros_like(statistics[prim], dtype=bool) for prim in prims}
    for _ in range(m):
        rank = np.minimum(sum(rejected[prim].astype(int) for prim in prims), m - 1)
        for prim in prims:
            rejected[prim] |= np.take_along_axis(crossed[prim], rank[None], axis=0)[0]
    return rejected
