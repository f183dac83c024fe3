"""The group-sequential design of the upgrade comparison recorded in rounds (docs/statistics.md §7): the
Lan–DeMets α-spending functions, the critical values they give at the looks (by recursive numerical
integration of the canonical joint distribution of the look statistics), the rounds of latent problems and
their seeded order. Pure numpy and the standard library; knows nothing of reports, pytest or files."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

import numpy as np

OBRIEN_FLEMING = "obrien-fleming"
POCOCK = "pocock"
SPENDING = (OBRIEN_FLEMING, POCOCK)
DEFAULT_SPENDING = OBRIEN_FLEMING
DEFAULT_ROUNDS = 10

# A look whose share of α is below this has no finite critical value: the chance of stopping there is
# smaller than anything a recording could show, and the normal tail cannot be inverted that far.
NEGLIGIBLE = 1e-13
# The recursion integrates the density of the look statistic over [−SPAN, c_k]; the normal mass below −8 is 6e-16.
SPAN = 8.0
# Grid points per standard deviation of the increment between two looks (Simpson's rule), and the widest step.
POINTS_PER_SD = 12
MAX_STEP = 0.05

_NORMAL = NormalDist()
_erfc = np.frompyfunc(math.erfc, 1, 1)


def upper_tail(x: np.ndarray | float) -> np.ndarray:
    """1 − Φ(x) with full relative precision far into the tail (numpy has no erfc; math.erfc, elementwise)."""
    return np.asarray(_erfc(np.asarray(x, dtype=float) / math.sqrt(2)), dtype=float) / 2


def spent(spending: str, alpha: float, t: float) -> float:
    """α(t): the one-sided type I error a test at level `alpha` may have spent by information fraction t.

    O'Brien–Fleming type (Lan & DeMets 1983): α(t) = 2·(1 − Φ(z_{1−α/2}/√t)), which spends almost nothing
    early; Pocock type: α(t) = α·ln(1 + (e − 1)·t), which spends it nearly evenly. α(1) = α exactly, so a
    design with one look is the fixed design."""
    if spending not in SPENDING:
        raise ValueError(f"unknown spending function {spending!r} (choose from {', '.join(SPENDING)})")
    if t >= 1:
        return alpha
    if t <= 0:
        return 0.0
    if spending == OBRIEN_FLEMING:
        return float(2 * upper_tail(-_NORMAL.inv_cdf(alpha / 2) / math.sqrt(t)))
    return alpha * math.log1p((math.e - 1) * t)


@lru_cache(maxsize=256)
def boundaries(fractions: tuple[float, ...], alpha: float, spending: str) -> tuple[float, ...]:
    """Upper critical values c_1 … c_K on the Z scale of a one-sided test at level `alpha`, looks at the
    increasing information fractions `fractions` (the last 1): P(Z_1 < c_1, …, Z_{k−1} < c_{k−1}, Z_k ≥ c_k)
    = α(t_k) − α(t_{k−1}) under the null, Z_k the standardised statistic at look k, whose joint law is the
    canonical one, Corr(Z_k, Z_l) = √(t_k/t_l) (Brownian motion observed at t_k). inf where a look's share of α is
    negligible. The sub-density of Z_k on the continuation region is carried from look to look on a grid
    (Armitage, McPherson & Rowe 1969; Jennison & Turnbull 2000, ch. 19)."""
    _check_fractions(fractions)
    cumulative = [spent(spending, alpha, t) for t in fractions]
    out: list[float] = []
    grid = weights = density = np.zeros(0)
    previous = 0.0
    for k, t in enumerate(fractions):
        share = cumulative[k] - (cumulative[k - 1] if k else 0.0)
        if k == 0:
            c = -_NORMAL.inv_cdf(share) if share > NEGLIGIBLE else math.inf
            grid, weights = _simpson_grid(min(c, SPAN), MAX_STEP)
            density = np.exp(-(grid**2) / 2) / math.sqrt(2 * math.pi)
        else:
            scale = math.sqrt(t - previous)
            mass = weights * density
            c = _solve(grid, mass, math.sqrt(previous), math.sqrt(t), scale, share)
            step = min(MAX_STEP, scale / math.sqrt(t) / POINTS_PER_SD)
            new_grid, new_weights = _simpson_grid(min(c, SPAN), step)
            # f_k(z) = ∫ f_{k−1}(u) · φ((z√t_k − u√t_{k−1})/σ) · √t_k/σ du, σ² = t_k − t_{k−1}
            moved = (new_grid[:, None] * math.sqrt(t) - grid[None, :] * math.sqrt(previous)) / scale
            density = (np.exp(-(moved**2) / 2) @ mass) * math.sqrt(t) / (scale * math.sqrt(2 * math.pi))
            grid, weights = new_grid, new_weights
        out.append(float(c))
        previous = t
    return tuple(out)


def _check_fractions(fractions: Sequence[float]) -> None:
    if not fractions or fractions[-1] != 1.0:
        raise ValueError(f"information fractions must end at 1, got {list(fractions)}")
    if any(b <= a for a, b in zip(fractions, fractions[1:], strict=False)) or fractions[0] <= 0:
        raise ValueError(f"information fractions must increase from above 0, got {list(fractions)}")


def _simpson_grid(top: float, step: float) -> tuple[np.ndarray, np.ndarray]:
    """Points from −SPAN to `top` (an odd count, spacing at most `step`) and their Simpson weights."""
    intervals = max(2, 2 * math.ceil((top + SPAN) / (2 * step)))
    grid = np.linspace(-SPAN, top, intervals + 1)
    h = (top + SPAN) / intervals
    weights = np.full(grid.size, 2.0)
    weights[1::2] = 4.0
    weights[0] = weights[-1] = 1.0
    return grid, weights * h / 3


def _solve(
    grid: np.ndarray, mass: np.ndarray, root_before: float, root_now: float, scale: float, share: float
) -> float:
    """The c with P(continue to look k − 1, Z_k ≥ c) = share, by bisection (the exit probability falls with c)."""
    if share <= NEGLIGIBLE:
        return math.inf

    def exit_probability(c: float) -> float:
        return float(mass @ upper_tail((c * root_now - grid * root_before) / scale))

    low, high = -SPAN, 2 * SPAN
    if exit_probability(high) > share:  # the spending asks for less than the tail beyond 16 SD: no stop here
        return math.inf
    for _ in range(60):
        middle = (low + high) / 2
        if exit_probability(middle) > share:
            low = middle
        else:
            high = middle
        if high - low < 1e-10:
            break
    return (low + high) / 2


@dataclass(frozen=True)
class Design:
    """A recording in K rounds of whole latent problems, a look after each: `ends[k]` latent problems are
    recorded after round k + 1 (the last is all of them), so the information fractions are ends/problems."""

    problems: int
    ends: tuple[int, ...]
    alpha: float
    spending: str = DEFAULT_SPENDING

    @classmethod
    def of(
        cls, problems: int, rounds: int = DEFAULT_ROUNDS, alpha: float = 0.05, spending: str = DEFAULT_SPENDING
    ) -> Design:
        """Rounds as equal as whole problems allow (at most one problem apart), at most one round per problem."""
        if problems < 1:
            raise ValueError(f"a sequential comparison needs latent problems, got {problems}")
        if rounds < 1:
            raise ValueError(f"rounds must be at least 1, got {rounds}")
        rounds = min(rounds, problems)
        ends = tuple(round(problems * (k + 1) / rounds) for k in range(rounds))
        return cls(problems=problems, ends=ends, alpha=alpha, spending=spending)

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1), got {self.alpha}")
        if self.spending not in SPENDING:
            raise ValueError(f"unknown spending function {self.spending!r} (choose from {', '.join(SPENDING)})")
        if (
            not self.ends
            or self.ends[-1] != self.problems
            or any(b <= a for a, b in zip((0, *self.ends), self.ends, strict=False))
        ):
            raise ValueError(f"round ends must increase to {self.problems}, got {list(self.ends)}")

    @property
    def rounds(self) -> int:
        return len(self.ends)

    @property
    def fractions(self) -> tuple[float, ...]:
        return tuple(end / self.problems for end in self.ends)

    def critical(self, level: float) -> tuple[float, ...]:
        """The Z-scale critical values of a one-sided test at `level` (a Holm level, ≤ alpha)."""
        return boundaries(self.fractions, level, self.spending)

    def nominal(self, level: float) -> tuple[float, ...]:
        """Per look, the one-sided level a fixed test there would have: 1 − Φ(c_k); 0 where no stop is
        possible. The first look's is α(t_1) itself, so one look gives exactly `level`."""
        return nominal_levels(self.fractions, level, self.spending)


@lru_cache(maxsize=256)
def nominal_levels(fractions: tuple[float, ...], level: float, spending: str) -> tuple[float, ...]:
    first = spent(spending, level, fractions[0])
    rest = [float(upper_tail(c)) if math.isfinite(c) else 0.0 for c in boundaries(fractions, level, spending)[1:]]
    return (first if first > NEGLIGIBLE else 0.0, *rest)


def problem_order(latent_ids: Sequence[str] | np.ndarray, seed: int) -> list[str]:
    """The order in which the latent problems are recorded: the sorted distinct ids shuffled by
    default_rng(seed), so a run's rounds are known from its seed and its dataset alone."""
    ids = sorted({str(i) for i in np.asarray(latent_ids, dtype=str).tolist()})
    rng = np.random.default_rng(seed)
    return [ids[i] for i in rng.permutation(len(ids))]


def rounds_of(order: Sequence[str], design: Design) -> list[list[str]]:
    """The latent problems of each round, in recording order."""
    if len(order) != design.problems:
        raise ValueError(f"the order has {len(order)} latent problems, the design {design.problems}")
    return [list(order[start:end]) for start, end in zip((0, *design.ends), design.ends, strict=False)]
