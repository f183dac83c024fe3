"""Student's t tail and quantile in plain Python, against scipy.special (the oracle, test-only) and exact
closed forms. The analysis reports p-values far into the tail unfloored (the paper's 2.9e-44), so the tail
is checked to relative precision wherever scipy's value is a normal float."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_sys1cal.analysis.student_t import t_ppf, t_sf

special = pytest.importorskip("scipy.special")
scipy = pytest.importorskip("scipy")
# scipy's stdtrit is Boost's from 1.17 on (scipy PR 22962), within ~1e-14; before, cdflib's search stopped
# within ~1e-8 (scipy 1.11: 4.6e-9 off at ν = 30, q = 0.95, its value 1.5e-8 off the tail it inverts and
# t_ppf's 4e-16 off), too coarse an oracle for 1e-13. scipy's tail at the quantile is one in every version.
PRECISE_STDTRIT = tuple(int(part) for part in scipy.__version__.split(".")[:2]) >= (1, 17)

# Degrees of freedom the analysis meets: latent problems − 1, from a handful to the 10× benchmark's 919.
DFS = [1, 2, 3, 4, 5, 7, 10, 24, 30, 31, 49, 59, 60, 61, 91, 150, 364, 919, 2.5]
T_VALUES = np.concatenate(
    [[0.01, 0.1, 0.5, 1.0, 1.96, 3.0, 8.0, 13.0, 30.0, 100.0, 1e3, 1e6, 1e20], np.linspace(0.05, 45, 120)]
)


@pytest.mark.parametrize("df", DFS)
def test_tail_matches_scipy(df):
    for t in T_VALUES:
        for signed in (t, -t):
            reference = float(special.stdtr(df, -signed))
            if reference < 1e-300:  # scipy underflows to subnormals or 0 there; so does the tail
                assert t_sf(df, signed) < 1e-290
                continue
            assert t_sf(df, signed) == pytest.approx(reference, rel=1e-12, abs=0), (df, signed)


@pytest.mark.parametrize("df", DFS)
def test_quantile_matches_scipy(df):
    for q in (0.6, 0.9, 0.95, 0.975, 0.99, 0.999, 1 - 1e-10, 0.025, 0.4):
        if PRECISE_STDTRIT:
            assert t_ppf(df, q) == pytest.approx(float(special.stdtrit(df, q)), rel=1e-13), (df, q)
        assert float(special.stdtr(df, -t_ppf(df, q))) == pytest.approx(1 - q, rel=1e-12), (df, q)
        assert t_sf(df, t_ppf(df, q)) == pytest.approx(1 - q, rel=1e-12)


def test_closed_forms():
    # ν = 1 is Cauchy: P(T > t) = atan(1/t)/π for t > 0, quantile tan(π(q − ½)).
    for t in (1e-8, 0.3, 7.0, 1e6):
        assert t_sf(1, t) == pytest.approx(math.atan(1 / t) / math.pi, rel=1e-14)
    assert t_ppf(1, 0.975) == pytest.approx(math.tan(math.pi * 0.475), rel=1e-14)
    # ν = 2: quantile (2q − 1)/√(2q(1 − q)).
    q = 0.975
    assert t_ppf(2, q) == pytest.approx((2 * q - 1) / math.sqrt(2 * q * (1 - q)), rel=1e-14)
    assert t_sf(5, 0.0) == 0.5
    assert t_sf(5, math.inf) == 0.0
    assert t_sf(5, -math.inf) == 1.0
    assert math.isnan(t_sf(5, math.nan))
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        t_ppf(5, 1.0)
