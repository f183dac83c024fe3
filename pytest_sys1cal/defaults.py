"""Every default of the analysis and the gates that more than one module reads, each defined once here (the
options, the commands, thresholds.yaml's reader, the renderers that print them). Imports nothing, so the
options and the terminal stay light."""

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

# The level of a test when thresholds.yaml names none (the λ gate, the upgrade comparison).
ALPHA = 0.05

# The upgrade gate (thresholds.yaml's `regression:` section): δ, the largest drop in mean OVL still accepted, and
# δ₀ = δ/2, the drop that must be shown to fail; latent-problem resamples of its paired bootstrap. The
# comparisons the offline commands make (trend between versions, contamination) resample as many.
UPGRADE_DROP = 0.02
UPGRADE_FAIL_DROP = UPGRADE_DROP / 2
UPGRADE_RESAMPLES = 2000

# `thresholds REPORT`: latent-problem resamples of the rule's standard errors (`--resamples`), and the fewest
# it accepts.
RULE_RESAMPLES = 500
RULE_MIN_RESAMPLES = 20

# The upgrade gate recorded in rounds (--sys1cal-sequential; thresholds.yaml's `regression.sequential`): the
# Lan–DeMets spending functions it offers, the default one, and the default number of rounds
# (docs/statistics.md §7.2). The statistics are analysis/sequential_design.py's.
OBRIEN_FLEMING = "obrien-fleming"
POCOCK = "pocock"
SPENDING = (OBRIEN_FLEMING, POCOCK)
DEFAULT_SPENDING = OBRIEN_FLEMING
DEFAULT_ROUNDS = 10
# The probability the size advice of an inconclusive comparison decides it with (docs/statistics.md §7.5).
UPGRADE_POWER = 0.8
