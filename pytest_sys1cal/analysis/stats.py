"""Shared statistical helpers: latent-problem clusters, one-sample t-tests, sign-flip tests, percentiles.

The latent problem is the unit of every resampling procedure and test: its renderings (and their repeats)
are nested in it and correlated, so treating renderings as independent would overstate precision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from ..defaults import P_FLOOR
from ..document import Reasoned
from ..errors import MeasurementError
from .student_t import t_ppf, t_sf

# Random sign flips for the randomisation test; with few latent problems all 2^J flips are enumerated.
SIGN_FLIPS = 9999
# Flips × latent problems per chunk of random signs (512 KiB as floats): small enough to stay in cache and
# to be recycled by the allocator, where 250 flips × 2,750 problems of int64 (5.5 MB, three arrays a chunk)
# were mapped afresh each time and cost 0.3–0.4 s at the end of an 18k-rendering pytest run.
SIGN_FLIP_BLOCK = 65_536


class NotEnoughData(MeasurementError):
    """A statistic is undefined on this input (too few latent problems, no variation): that statistic could not
    be measured. Not an error of the run: the analysis catches it where the statistic is computed, and its block
    says `None` and why (the message)."""


@dataclass(frozen=True)
class Clusters:
    """Items grouped by latent problem. Clusters are numbered in sorted-id order, so results never depend
    on the order in which items arrived."""

    codes: np.ndarray  # (n,) cluster of each item
    sizes: np.ndarray  # (J,) items per cluster
    order: np.ndarray  # item indices grouped by cluster (stable)
    starts: np.ndarray  # (J,) position in `order` where each cluster begins

    @classmethod
    def of(cls, ids: Sequence[str] | np.ndarray) -> Clusters:
        _, codes, sizes = np.unique(np.asarray(ids, dtype=str), return_inverse=True, return_counts=True)
        return cls(
            codes=codes.reshape(-1),
            sizes=sizes,
            order=np.argsort(codes.reshape(-1), kind="stable"),
            starts=np.cumsum(sizes) - sizes,
        )

    @property
    def count(self) -> int:
        return len(self.sizes)

    def sums(self, values: np.ndarray) -> np.ndarray:
        """Per-cluster sums along the last axis (works for a batch of rows, e.g. a grid of parameters)."""
        if self.count == 0:
            return np.zeros((*values.shape[:-1], 0))
        return np.add.reduceat(values[..., self.order], self.starts, axis=-1)

    def means(self, values: np.ndarray) -> np.ndarray:
        return self.sums(values) / self.sizes

    def resample_counts(self, rng: np.random.Generator, resamples: int) -> np.ndarray:
        """(resamples, J) multiplicities of a bootstrap that draws J latent problems with replacement."""
        j = self.count
        draws = rng.integers(0, j, size=(resamples, j))
        draws += j * np.arange(resamples)[:, None]  # in place: one large array fewer to allocate and fault in
        return np.bincount(draws.ravel(), minlength=resamples * j).reshape(resamples, j).astype(float)


def require_latents(count: int, minimum: int = 2) -> None:
    if count < minimum:
        raise NotEnoughData(f"not enough data: {count} latent problem{'' if count == 1 else 's'}")


@dataclass(frozen=True)
class TTest:
    """One-sample Student t-test of mean(x) = 0 (x: one value per latent problem)."""

    mean: float
    se: float
    statistic: float
    df: int
    p_value: float  # unfloored; floor it where it is reported as a test

    def interval(self, z: float = 1.96) -> list[float]:
        """mean ± z·se (the paper's normal-quantile interval when z = 1.96)."""
        return [self.mean - z * self.se, self.mean + z * self.se]


def t_test(x: np.ndarray, alternative: str) -> TTest:
    """alternative: "greater" (H1: mean > 0) or "two-sided". Raises NotEnoughData when undefined."""
    require_latents(x.size)
    sd = float(x.std(ddof=1))
    if sd == 0.0:
        raise NotEnoughData("no variation: every latent problem has the same value")
    df = x.size - 1
    se = sd / np.sqrt(x.size)
    t = float(x.mean()) / se
    if alternative == "greater":
        p = t_sf(df, t)
    elif alternative == "two-sided":
        p = 2 * t_sf(df, abs(t))
    else:
        raise ValueError(f"unknown alternative {alternative!r}")
    return TTest(mean=float(x.mean()), se=se, statistic=t, df=df, p_value=p)


def t_interval(test: TTest, level: float = 0.95) -> list[float]:
    """Two-sided Student-t confidence interval for the mean."""
    half = t_ppf(test.df, 0.5 + level / 2) * test.se
    return [test.mean - half, test.mean + half]


def sign_flip_p(x: np.ndarray, seed: int, flips: int = SIGN_FLIPS) -> float:
    """One-sided (greater) randomisation p-value of mean(x) under random sign flips of the x_j, seeded.

    Exact under H0 when each x_j is symmetric about 0. All 2^J sign patterns are enumerated when that is
    fewer than `flips`; otherwise p = (1 + #{flipped mean ≥ observed}) / (flips + 1).
    """
    j = x.size
    require_latents(j, minimum=1)
    observed = x.sum()
    # Flipped sums equal to the observed one must count as "at least as large" despite rounding.
    tol = 1e-12 * float(np.abs(x).sum())
    if 2**j <= flips + 1:
        signs = 1 - 2 * ((np.arange(2**j)[:, None] >> np.arange(j)) & 1)
        return float(np.mean(signs @ x >= observed - tol))
    exceed = 0
    # The random stream, hence the p-value, does not depend on the chunk size. A sign is the top bit of a
    # 32-bit draw: rng.integers(0, 2) takes exactly that bit of one 32-bit draw per sign (Lemire's method for
    # a range of 2 never rejects), and default_rng's 32-bit draws are the halves of its 64-bit outputs, low
    # half first. So these are the signs of np.random.default_rng(seed).integers(0, 2, size) as drawn before
    # (tests/analysis/test_analysis_metrics.py), read straight off the raw outputs: a 32-bit draw read as a
    # signed integer is negative where its top bit is set, and copysign turns it into the ±1 of its sign.
    # An even number of flips per chunk but the last keeps every chunk's draws whole 64-bit outputs.
    bits = np.random.default_rng(seed).bit_generator
    rows = max(2, (SIGN_FLIP_BLOCK // j) & ~1)
    scratch = np.empty((min(rows, flips), j))
    for start in range(0, flips, rows):
        size = min(rows, flips - start)
        draws = bits.random_raw((size * j + 1) // 2).astype("<u8", copy=False).view("<i4")[: size * j]
        block = np.copysign(1.0, draws.reshape(size, j), out=scratch[:size])
        exceed += int(np.count_nonzero(np.einsum("fj,j->f", block, x) >= observed - tol))
    return (1 + exceed) / (flips + 1)


def floor_p(p: float) -> float:
    return max(p, P_FLOOR)


def percentile_interval(values: np.ndarray, level: float = 0.95) -> list[float]:
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return [float(low), float(high)]


Block = TypeVar("Block", bound=Reasoned)


def with_reasons(block: Block, reasons: list[str]) -> Block:
    """Attach why some values are None, as one short string (absent when everything was computed)."""
    if reasons:
        block["reason"] = "; ".join(dict.fromkeys(reasons))
    return block
