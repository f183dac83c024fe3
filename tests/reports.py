"""Reports for the tests of the breakdowns and the HTML report: the pinned reports of the bundled cassettes,
how a report is compared with a pinned one (floats within a tolerance), and a baseline made from one of them
by moving some answers, so an upgrade comparison has something to find."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from typing import Any

from tests.runs import GOLDEN

# How far a pinned report's floats may move between machines and library versions (tests/test_golden_reports.py).
RELATIVE, ABSOLUTE = 1e-9, 1e-12
# (family, sample key, share of the way to p*) moved in the baseline: there it is better, so the bundled
# run looks worse on that family; the other families are left alone.
BASELINE_MOVES = (("compound", "choice", 0.5), ("bayes", "noul", 0.4), ("frequency", "score", -0.5))


def golden(model: str) -> dict[str, Any]:
    return json.loads((GOLDEN / f"{model}-report.json").read_text(encoding="utf-8"))


def differences(new: Any, old: Any, path: str = "") -> list[str]:
    """Where `new` differs from `old`: floats beyond the tolerance, anything else at all (types included)."""
    if isinstance(new, dict) and isinstance(old, dict):
        out = [f"{path}{key}: only in {'the new' if key in new else 'the pinned'} report" for key in new.keys() ^ old]
        for key in sorted(new.keys() & old.keys()):
            out += differences(new[key], old[key], f"{path}{key}.")
        return out
    if isinstance(new, list) and isinstance(old, list):
        if len(new) != len(old):
            return [f"{path.rstrip('.')}: {len(new)} entries, pinned {len(old)}"]
        return [
            d for index, (a, b) in enumerate(zip(new, old, strict=True)) for d in differences(a, b, f"{path}{index}.")
        ]
    where = path.rstrip(".")
    if isinstance(new, float) and isinstance(old, float):
        close = math.isclose(new, old, rel_tol=RELATIVE, abs_tol=ABSOLUTE)
        return [] if close else [f"{where}: {new!r}, pinned {old!r}"]
    if type(new) is not type(old) or new != old:
        return [f"{where}: {new!r}, pinned {old!r}"]
    return []


def _moved(sample: dict[str, Any], key: str, p_star: float, share: float) -> dict[str, Any]:
    out = dict(sample)
    if key == "score":  # move the distribution's mass towards (share < 0: away from) the level nearest p*
        q = list(out["score"])
        target = round(p_star * 9) if share > 0 else (0 if p_star > 0.5 else 9)
        weight = abs(share)
        out["score"] = [(1 - weight) * v + (weight if j == target else 0.0) for j, v in enumerate(q)]
    elif out.get(key) is not None:
        out[key] = out[key] + share * (p_star - out[key])
    return out


def shifted_baseline(report: Mapping[str, Any], version: str = "jev-1.12.0") -> dict[str, Any]:
    """A full report, analysed like a run's, whose answers differ from `report`'s on BASELINE_MOVES."""
    from pytest_sys1cal.analysis import analyze
    from pytest_sys1cal.document import report_document

    items = copy.deepcopy(report["items"])
    for item in items:
        for family, key, share in BASELINE_MOVES:
            if item["family"] == family:
                item["samples"] = [_moved(s, key, item["p_star"], share) for s in item["samples"]]
    analysis = analyze(items, seed=report["seed"], bootstrap=0)
    return report_document(
        model={**report["model"], "version": version},
        dataset=report["dataset"],
        repeats=report["repeats"],
        repeats_per_answer=report.get("repeats_per_answer", 1),
        seed=report["seed"],
        analysis=analysis,
        gates=[],
    )


def with_comparison(report: Mapping[str, Any], baseline: Mapping[str, Any]) -> dict[str, Any]:
    """`report` with the upgrade gate's rows against `baseline` added to its gates, as a run would add them."""
    from pytest_sys1cal.gates.upgrade import evaluate_upgrade

    out = copy.deepcopy(dict(report))
    out["gates"] = list(out["gates"]) + [g.to_json() for g in evaluate_upgrade(None, out, baseline, seed=out["seed"])]
    return out
