"""Student's t distribution: upper tail and quantile, in plain Python.

The analysis needs only these two numbers per test; importing scipy.special for them costs ~0.18 s, more
than the whole analysis of a 365-rendering run. The tail is the regularised incomplete beta function
P(T > |t|) = ½·I_x(ν/2, ½), x = ν/(ν + t²), evaluated by its continued fraction (Numerical Recipes §6.4,
modified Lentz), which keeps full relative precision far into the tail (p-values like 1e-44 are reported
unfloored). Agrees with scipy.special.stdtr/stdtrit to ~1e-13 relative (tests/analysis/test_analysis_student_t.py).
"""

from __future__ import annotations

import math

_EPS = 1e-15
_TINY = 1e-300
_MAX_TERMS = 1000


def t_sf(df: float, t: float) -> float:
    """P(T > t) for Student's t with df > 0 degrees of freedom (scipy.special.stdtr(df, -t))."""
    t = float(t)
    if math.isnan(t):
        return math.nan
    tail = _tail(df, abs(t))
    return tail if t >= 0 else 1.0 - tail


def t_ppf(df: float, q: float) -> float:
    """The t with P(T ≤ t) = q, for 0 < q < 1 (scipy.special.stdtrit(df, q)).

    Newton's method on the tail, kept inside a bracket that bisection falls back on."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile level must be strictly between 0 and 1, got {q}")
    if q < 0.5:
        return -t_ppf(df, 1.0 - q)
    target = 1.0 - q  # P(T > t)
    low, high = 0.0, 1.0
    while _tail(df, high) > target:
        low, high = high, 2.0 * high
    t = high
    for _ in range(100):
        excess = _tail(df, t) - target  # decreasing in t
        if excess > 0:
            low = t
        else:
            high = t
        proposal = t + excess / _density(df, t)
        if not low < proposal < high:
            proposal = (low + high) / 2
        if abs(proposal - t) <= 1e-15 * t:
            return proposal
        t = proposal
    return t


def _density(df: float, t: float) -> float:
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))


def _tail(df: float, t: float) -> float:
    """P(T > t) for t ≥ 0."""
    ratio = t * t / df
    if math.isinf(ratio):
        return 0.0
    # x = 1/(1 + r) and y = 1 − x = r/(1 + r), r = t²/ν, each computed directly, and their logs through
    # log1p: the logs are multiplied by ν/2, which would amplify their rounding.
    x, y = 1.0 / (1.0 + ratio), ratio / (1.0 + ratio)
    log_x = -math.log1p(ratio)
    log_y = math.log(ratio) + log_x if ratio > 0 else -math.inf
    a, b = df / 2, 0.5
    if x < (a + 1) / (a + b + 2):  # the continued fraction converges fast on this side
        return 0.5 * _beta_fraction(a, b, x, log_x, log_y)
    return 0.5 * (1.0 - _beta_fraction(b, a, y, log_y, log_x))


def _beta_fraction(a: float, b: float, x: float, log_x: float, log_y: float) -> float:
    """I_x(a, b) = x^a·y^b / (a·B(a, b)) · CF(a, b, x), y = 1 − x; for x < (a + 1)/(a + b + 2)."""
    if x == 0.0:
        return 0.0
    log_front = a * log_x + b * log_y - math.log(a) - _log_beta(a, b)
    # Modified Lentz evaluation of 1/(1+ d1/(1+ d2/(1+ ...))).
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    fraction = d
    for m in range(1, _MAX_TERMS):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            fraction *= c * d
        if abs(c * d - 1.0) < _EPS:
            break
    return math.exp(log_front) * fraction


def _log_beta(a: float, b: float) -> float:
    """log B(a, b). With one large argument, lgamma(big) − lgamma(big + small) subtracts two numbers of
    size ~big·log(big) and loses that many digits; Stirling's series gives the difference directly."""
    small, big = sorted((a, b))
    if big < 30:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    # With lgamma(x) = (x − ½)·log x − x + ½·log 2π + δ(x), lgamma(big) − lgamma(big + small) is
    # −small·log big − (big + small − ½)·log1p(small/big) + small + δ(big) − δ(big + small).
    difference = (
        -small * math.log(big)
        - (big + small - 0.5) * math.log1p(small / big)
        + small
        + _stirling_remainder(big)
        - _stirling_remainder(big + small)
    )
    return math.lgamma(small) + difference


def _stirling_remainder(x: float) -> float:
    """δ(x) = lgamma(x) − ((x − ½)·log x − x + ½·log 2π), to double precision for x ≥ 30."""
    inverse_square = 1.0 / (x * x)
    return (1 / 12 - inverse_square * (1 / 360 - inverse_square * (1 / 1260 - inverse_square / 1680))) / x
