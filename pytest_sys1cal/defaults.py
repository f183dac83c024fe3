"""The analysis's settings that layers without numpy share (the options, the trend command, the renderers),
each defined once: the default number of bootstrap resamples and recalibration splits, and the floor of
reported p-values. Imports nothing, so the options and the terminal stay light."""

from __future__ import annotations

# The analysis defaults of a run (--sys1cal-bootstrap, --sys1cal-recalibration-splits), which the trend
# command uses too, so a version's report there is the one its own run builds. 500 resamples is the statistics
# notes' figure for CI runs (2,000 for a report); the intervals it gives are informational (gates use the λ
# test, not them), and the refit per resample is the analysis's main cost. 20 splits put the SE that the
# split adds to their mean at SD/√20, under 0.006 for the largest SD measured on the bundled cassettes (0.023).
BOOTSTRAP_RESAMPLES = 500
RECALIBRATION_SPLITS = 20

# Reported p-values of the valid tests are floored here: below it a p-value carries no information once the
# model is misspecified at all (docs/statistics.md §2.3).
P_FLOOR = 1e-10
