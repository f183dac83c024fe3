"""The domain's words, which every part of the plugin shares, each defined once: primitives, their labels and
Score's levels, the dataset's families, gate verdicts, record modes and the schema ids of the files the plugin
writes. (The analysis's shared defaults are defaults.py's; a terminal line's markup is report/terminal.py's.)"""

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


# thresholds.yaml's `reading`: which reading of each primitive's answers decides the gates. "mean": the OVL of each
# rendering's mean over its calls (the paper's protocol, Table 1); "call": the mean over its calls of each call's
# OVL, what one request to the service gets (analysis/calls.py, docs/statistics.md §1.6).
READINGS = ("mean", "call")
MEAN_READING, CALL_READING = READINGS


def reading_label(reading: str, averaged: int) -> str:
    """A reading as the verdict names it: "per call", or "10-call mean" (`averaged`: calls behind each mean)."""
    if reading == CALL_READING:
        return "per call"
    return f"{averaged}-call mean" if averaged > 1 else "single-call mean"


# vcrpy's record modes, in the order of how much they send.
RECORD_MODES = ("none", "once", "new_episodes", "all")

REPORT_SCHEMA = "sys1cal-report/1"
MANIFEST_SCHEMA = "sys1cal-cassettes/1"
SHARD_SCHEMA = "sys1cal-shard/1"  # a shard's shard.json (store/shard_manifest.py)
TREND_SCHEMA = "sys1cal-trend/1"
MAP_SCHEMA = "sys1cal-recalibration/1"  # a recalibration map (recalibration_map.py)
REPLAY_CACHE_SCHEMA = 1  # the format of a replay cache entry (store/replay_cache.py)
