"""Isotonic regression by the pool-adjacent-violators algorithm (PAV), many weightings at once.

The CORP reliability curve (Dimitriadis, Gneiting & Jordan 2021) is the isotonic least-squares fit of the target
on the answers: c = argmin Σ w_i (c(p̂_i) − p*_i)² over non-decreasing c. **Ties are pooled first**: renderings
with the same answer are one point carrying their summed weight and the weighted sum of their p*, so a curve is
a function of the answer (tied answers always share one fitted value, and the order of tied items never
matters). PAV then runs on the distinct answers in increasing order.

The fits are needed many times over the same answers with other weights: latent-problem bootstrap resamples
(multiplicities per rendering), the halves of cross-fitted splits (weights 0 or 1). `fit_rows` runs PAV on every
weighting in lockstep, point by point, in numpy: each point is one step over all rows, each merge of adjacent
violators one step over the rows that merge, so B weightings cost about as many numpy steps as one.
docs/statistics.md §8.1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

FEW_ROWS = 150  # up to this many weightings, one at a time in plain Python is faster than in lockstep (bench)
BLOCK = 1 << 20  # rows × renderings per block of problem_sums (8 MiB of floats: big fresh arrays cost page faults)


@dataclass(frozen=True)
class Pooled:
    """The distinct answers, sorted, and which one each rendering has."""

    x: np.ndarray  # (D,) distinct answers, increasing
    code: np.ndarray  # (n,) index into x of each rendering's answer
    order: np.ndarray  # the renderings sorted by answer (stable)
    starts: np.ndarray  # (D,) where each distinct answer's renderings begin in `order`

    @classmethod
    def of(cls, answers: np.ndarray) -> Pooled:
        x, code, counts = np.unique(answers, return_inverse=True, return_counts=True)
        code = code.reshape(-1)
        return cls(x, code, np.argsort(code, kind="stable"), np.cumsum(counts) - counts)

    def coarsened(self, points: int) -> Pooled:
        """Itself when it has at most `points` distinct answers; else the distinct answers pooled, in order, into
        `points` groups of about as many renderings each (a distinct answer is never split), each group at the mean
        answer of its renderings. For resampled fits of many answers (analysis/decomposition.py)."""
        if self.x.size <= points:
            return self
        counts = np.diff(np.append(self.starts, self.code.size))
        before = np.cumsum(counts) - counts
        group = (before * points) // self.code.size  # the group of each distinct answer, non-decreasing
        sizes = np.bincount(group, weights=counts)
        with np.errstate(invalid="ignore"):  # a group no distinct answer fell in: dropped below
            x = np.bincount(group, weights=self.x * counts) / sizes
        code = group[self.code]
        kept = sizes > 0
        renumbered = np.cumsum(kept) - 1
        code = renumbered[code]
        sizes = sizes[kept].astype(int)
        return Pooled(x[kept], code, np.argsort(code, kind="stable"), np.cumsum(sizes) - sizes)

    def problem_sums(
        self, by_problem: np.ndarray, codes: np.ndarray, values: list[np.ndarray | None]
    ) -> list[np.ndarray]:
        """For each of `values` (None: 1), the (rows, D) sums over the renderings of each distinct answer of
        by_problem[row, problem of the rendering] × value: a rendering weighted by its latent problem's entry
        (`codes`: each rendering's problem), as `sums` of the renderings' weights would give, in blocks of rows so
        that no (rows × renderings) array is ever whole (BLOCK elements at a time)."""
        ordered, step = codes[self.order], max(1, BLOCK // max(self.code.size, 1))
        outs = [np.empty((by_problem.shape[0], self.x.size)) for _ in values]
        for first in range(0, by_problem.shape[0], step):
            weights = by_problem[first : first + step][:, ordered]
            for out, value in zip(outs, values, strict=True):
                terms = weights if value is None else weights * value[self.order]
                out[first : first + step] = np.add.reduceat(terms, self.starts, axis=1)
        return outs

    def sums(self, weights: np.ndarray, values: np.ndarray | None = None) -> np.ndarray:
        """(rows, D): per row of `weights` (rows, n), the sum of weight (× value) over the renderings of each
        distinct answer."""
        terms = weights if values is None else weights * values
        if not self.x.size:
            return np.zeros((terms.shape[0], 0))
        return np.add.reduceat(terms[:, self.order], self.starts, axis=1)


def fit_rows(w: np.ndarray, wy: np.ndarray) -> np.ndarray:
    """The isotonic fit of each row: (rows, D) weights w ≥ 0 and weighted target sums wy of the distinct answers
    in increasing order; returns the fitted value at every distinct answer (rows, D). A point of zero weight takes
    the value of the block before it (NaN before a row's first weighted point, and in a row of zero weight).

    Each row's stack of blocks lives in flat arrays, the k-th block of row r at k·rows + r: one-dimensional
    indexing is several times faster than two index arrays, and the rows' stacks grow alike, so their top blocks
    sit close together in memory (row-major stacks spread them a stack apart: at 3,650 answers × 1,000 resamples
    that cost 4× in cache misses). A block holds its summed weight, summed weight × target and first point. A few
    rows go through _fit_row one by one instead, the same operations in the same order (the same bits), without
    numpy's overhead per point."""
    rows, points = w.shape
    if rows <= FEW_ROWS:
        return np.array([_fit_row(w_row.tolist(), wy_row.tolist()) for w_row, wy_row in zip(w, wy, strict=True)])
    s0 = np.zeros(points * rows)
    s1 = np.zeros(points * rows)
    start = np.zeros(points * rows, dtype=np.intp)
    top = np.full(rows, -1, dtype=np.intp)  # the index of each row's last block
    by_point, sums_by_point = np.ascontiguousarray(w.T), np.ascontiguousarray(wy.T)
    for d in range(points):
        weight = by_point[d]
        live = np.flatnonzero(weight > 0)
        if not live.size:
            continue
        top[live] += 1
        at = top[live] * rows + live
        s0[at], s1[at], start[at] = weight[live], sums_by_point[d, live], d
        stacked = at >= rows  # rows with a block before the new one
        _merge_violators(live[stacked], at[stacked], rows, top, s0, s1)
    return _expand(top, *(a.reshape(points, rows).T for a in (s0, s1, start)))


def _fit_row(w: list[float], wy: list[float]) -> list[float]:
    """fit_rows of one row in plain Python: the same pushes and merges, so the same floats."""
    s0: list[float] = []
    s1: list[float] = []
    start: list[int] = []
    for d, (weight, total) in enumerate(zip(w, wy, strict=True)):
        if weight <= 0:
            continue
        s0.append(weight)
        s1.append(total)
        start.append(d)
        while len(s0) >= 2 and s1[-2] * s0[-1] > s1[-1] * s0[-2]:
            merged_w, merged_wy = s0.pop(), s1.pop()
            s0[-1] += merged_w
            s1[-1] += merged_wy
            start.pop()
    fitted = [math.nan] * len(w)
    ends = [*start[1:], len(w)] if start else []
    for total_w, total_wy, first, end in zip(s0, s1, start, ends, strict=True):
        fitted[first:end] = [total_wy / total_w] * (end - first)
    return fitted


def _merge_violators(r: np.ndarray, at: np.ndarray, rows: int, top: np.ndarray, s0: np.ndarray, s1: np.ndarray) -> None:
    """Pool each row's new last block (flat index `at`; the block before it is `rows` earlier) with the ones before
    it while their means decrease (mean before > mean after, compared as s1·s0' > s1'·s0 so that no division
    rounds)."""
    while r.size:
        before = at - rows
        bad = s1[before] * s0[at] > s1[at] * s0[before]
        r, at, before = r[bad], at[bad], before[bad]
        s0[before] += s0[at]
        s1[before] += s1[at]
        top[r] -= 1
        keep = before >= rows
        r, at = r[keep], before[keep]


def _expand(top: np.ndarray, s0: np.ndarray, s1: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The blocks' means spread over the distinct answers each block covers."""
    rows, points = s0.shape
    slots = np.arange(points)
    used_rows, used_slots = np.nonzero(slots[None, :] <= top[:, None])
    at_start = np.full((rows, points), np.nan)
    begins = start[used_rows, used_slots]
    at_start[used_rows, begins] = s1[used_rows, used_slots] / s0[used_rows, used_slots]
    last_start = np.maximum.accumulate(np.where(np.isnan(at_start), 0, slots[None, :]), axis=1)
    return np.take_along_axis(at_start, last_start, axis=1)


@dataclass(frozen=True)
class IsotonicMap:
    """A fitted monotone map from answers to probabilities: knots (x increasing, y non-decreasing), linear between
    them and constant beyond the ends (scikit-learn's IsotonicRegression with out_of_bounds="clip" evaluates
    its fit the same way). Only the knots where the fit bends are kept: the first and last answer of each
    block."""

    x: np.ndarray
    y: np.ndarray

    def __call__(self, p: np.ndarray) -> np.ndarray:
        return np.interp(p, self.x, self.y)

    @classmethod
    def from_fit(cls, x: np.ndarray, fitted: np.ndarray) -> IsotonicMap:
        """From a row of `fit_rows` on the distinct answers `x` (NaN entries: points of zero weight, left out)."""
        keep = ~np.isnan(fitted)
        xs, ys = x[keep], fitted[keep]
        if xs.size > 2:  # a knot inside a flat run (the same value on both sides) changes nothing
            same_before = np.concatenate([[False], ys[1:] == ys[:-1]])
            same_after = np.concatenate([ys[:-1] == ys[1:], [False]])
            inner = same_before & same_after
            xs, ys = xs[~inner], ys[~inner]
        return cls(xs, ys)


def fit_map(answers: np.ndarray, target: np.ndarray, weights: np.ndarray | None = None) -> IsotonicMap:
    """The isotonic fit of `target` on `answers` (weights: one per rendering, default 1) as a map: the one fitted
    on every rendering is what `python -m pytest_sys1cal recalibrate` writes."""
    weights = np.ones(answers.size) if weights is None else weights
    pooled = Pooled.of(answers)
    w = pooled.sums(weights[None, :])
    wy = pooled.sums(weights[None, :], target[None, :])
    fitted = fit_rows(w, wy)[0]
    fitted[w[0] == 0] = np.nan
    return IsotonicMap.from_fit(pooled.x, fitted)
