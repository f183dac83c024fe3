"""The words every part of the plugin shares, each defined once: primitives, their labels and Score's
levels, the dataset's families, gate verdicts, record modes, the schema ids of the files the plugin writes,
the analysis defaults that a run and the trend command share, and the markup of a terminal line."""

from __future__ import annotations

from enum import StrEnum

PRIMITIVES = ("noul", "choice", "score")
LABELS = {"noul": "Noul", "choice": "Choice", "score": "Score"}
# Score answers on levels 0…9 (level j stands for the probability j/9).
SCORE_LEVELS = 10
# The Sys1Cal families of latent problems, in the order the generator splits a fresh set over them.
FAMILY_NAMES = ("explicit_probability", "frequency", "compound", "conditional", "bayes", "sequential_bayes")


class Verdict(StrEnum):
    """A gate's verdict, as the JSON report, the terminal, the Markdown summary and JUnit XML all show it
    (a str: written to JSON as its value). Whether a run passed is decided from them in one place,
    gates/rows.py: FAILED, an INCONCLUSIVE comparison and a gate NOT_MEASURED on a run of the whole
    dataset do not pass; NOT_APPLICABLE (a run of part of the dataset) neither passes nor fails."""

    PASSED = "passed"
    FAILED = "FAILED"
    INCONCLUSIVE = "inconclusive"
    NOT_MEASURED = "not measured"
    NOT_APPLICABLE = "not applicable"


# vcrpy's record modes, in the order of how much they send.
RECORD_MODES = ("none", "once", "new_episodes", "all")

REPORT_SCHEMA = "sys1cal-report/1"
MANIFEST_SCHEMA = "sys1cal-cassettes/1"

# The analysis defaults of a run (--sys1cal-bootstrap, --sys1cal-recalibration-splits), which the trend
# command uses too, so a version's report there is the one its own run builds. 500 resamples is the statistics
# notes' figure for CI runs (2,000 for a report); the intervals it gives are informational (gates use the λ
# test, not them), and the refit per resample is the analysis's main cost. 20 splits put the SE that the
# split adds to their mean at SD/√20, under 0.006 for the largest SD measured on the bundled cassettes (0.023).
BOOTSTRAP_RESAMPLES = 500
RECALIBRATION_SPLITS = 20

# Terminal output: (text, markup) pairs, markup passed to TerminalReporter.write_line; RED for what failed.
Line = tuple[str, dict[str, bool]]
RED = {"red": True, "bold": True}

# Reported p-values of the valid tests are floored here: below it a p-value carries no information once the
# model is misspecified at all (docs/statistics.md §2.3).
P_FLOOR = 1e-10
