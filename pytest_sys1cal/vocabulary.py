"""The words every part of the plugin shares, each defined once: primitives, their labels and Score's
levels, the dataset's families, gate verdicts, record modes and the schema ids of the files the plugin writes."""

from __future__ import annotations

PRIMITIVES = ("noul", "choice", "score")
LABELS = {"noul": "Noul", "choice": "Choice", "score": "Score"}
# Score answers on levels 0…9 (level j stands for the probability j/9).
SCORE_LEVELS = 10
# The Sys1Cal families of latent problems, in the order the generator splits a fresh set over them.
FAMILY_NAMES = ("explicit_probability", "frequency", "compound", "conditional", "bayes", "sequential_bayes")

# A gate's verdict, as the JSON report, the terminal, the Markdown summary and JUnit XML all show it. A run
# passes only when every gate passed or is not applicable (a run of part of the dataset): FAILED, an
# INCONCLUSIVE comparison and a gate NOT_MEASURED on a run of the whole dataset do not pass.
PASSED, FAILED, INCONCLUSIVE = "passed", "FAILED", "inconclusive"
NOT_MEASURED, NOT_APPLICABLE = "not measured", "not applicable"
VERDICTS = (PASSED, FAILED, INCONCLUSIVE, NOT_MEASURED, NOT_APPLICABLE)

# vcrpy's record modes, in the order of how much they send.
RECORD_MODES = ("none", "once", "new_episodes", "all")

REPORT_SCHEMA = "sys1cal-report/1"
MANIFEST_SCHEMA = "sys1cal-cassettes/1"

# Reported p-values of the valid tests are floored here: below it a p-value carries no information once the
# model is misspecified at all (docs/statistics.md §2.3).
P_FLOOR = 1e-10
