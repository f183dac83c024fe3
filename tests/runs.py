"""The one runner of nested pytest runs (pytester) and the paths every test shares.

Most runs check what a run prints, writes or refuses, not the intervals of Table 2 or the spread of the held-out
readout check, so `run` gives the analysis its cheapest settings as ini values: no bootstrap resamples, one
recalibration split. An ini value is what a run falls back on when no option is given, so a test that reads
intervals asks for them with the option itself (`--sys1cal-bootstrap=500`, or `*REAL_ANALYSIS`, the defaults
written out), and a test of the ini keys or of the golden reports passes `cheap=False`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_sys1cal.defaults import BOOTSTRAP_RESAMPLES, RECALIBRATION_SPLITS

REPO = Path(__file__).resolve().parents[1]
CASSETTES = REPO / "cassettes"
THRESHOLDS = REPO / "thresholds.yaml"
GOLDEN = REPO / "tests" / "golden"
# No cache folder written into the test's directory, and the test order as written (pytest-randomly, where a
# developer has it installed, would shuffle the renderings of a nested run).
QUIET = ("-p", "no:cacheprovider", "-p", "no:randomly")
CACHED = QUIET[2:]  # QUIET with pytest's cache on, for the tests of the replay cache that lives in it
CHEAP = ("-o", "sys1cal_bootstrap=0", "-o", "sys1cal_recalibration_splits=1")
# The run's own analysis, given as options so that they win over CHEAP's ini values.
REAL_ANALYSIS = (f"--sys1cal-bootstrap={BOOTSTRAP_RESAMPLES}", f"--sys1cal-recalibration-splits={RECALIBRATION_SPLITS}")


def run(
    pytester: pytest.Pytester, *args: str, cheap: bool = True, cache: bool = False, **kwargs: Any
) -> pytest.RunResult:
    """`pytest *args` in process, quiet; the analysis cheap unless `cheap=False`, pytest's cache off unless
    `cache=True` (kwargs: runpytest's)."""
    return pytester.runpytest(*(CACHED if cache else QUIET), *(CHEAP if cheap else ()), *args, **kwargs)


def sys1cal(
    pytester: pytest.Pytester, *args: str, cheap: bool = True, cache: bool = False, **kwargs: Any
) -> pytest.RunResult:
    """`pytest --sys1cal *args`, as `run` runs it."""
    return run(pytester, "--sys1cal", *args, cheap=cheap, cache=cache, **kwargs)
