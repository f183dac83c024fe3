"""The words every part of the plugin shares, each defined once: primitives and their labels, gate
verdicts, record modes and the schema ids of the files the plugin writes."""

from __future__ import annotations

PRIMITIVES = ("noul", "choice", "score")
LABELS = {"noul": "Noul", "choice": "Choice", "score": "Score"}

# A gate's verdict, as the JSON report, the terminal, the Markdown summary and JUnit XML all show it.
# Only PASSED and FAILED decide anything; the other two say why a gate neither passed nor failed.
PASSED, FAILED, INCONCLUSIVE, NOT_MEASURED = "passed", "FAILED", "inconclusive", "not measured"
VERDICTS = (PASSED, FAILED, INCONCLUSIVE, NOT_MEASURED)

# vcrpy's record modes, in the order of how much they send.
RECORD_MODES = ("none", "once", "new_episodes", "all")

REPORT_SCHEMA = "sys1cal-report/1"
MANIFEST_SCHEMA = "sys1cal-cassettes/1"
