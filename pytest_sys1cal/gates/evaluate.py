"""Threshold gates: each configured floor or ceiling read against the run's report, with a verdict and
a sentence saying what it means."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..vocabulary import FAILED, LABELS, NOT_APPLICABLE, NOT_MEASURED, PASSED
from .schema import CHOICE_GATES, PRIMITIVE_GATES, Gate, Thresholds


def evaluate(thresholds: Thresholds, report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per configured gate, in file-independent order (primitives, then uncertainty):
    {name, metric, observed, limit, passed, verdict, explanation}. verdict is "passed", "FAILED" or
    "not measured" (metric absent or null in this run; then passed is None, never True)."""
    rows = []
    for gate in thresholds.gates:
        if gate.primitive is None:
            rows.append(_lambda_row(gate, report))
        else:
            rows.append(_bound_row(gate, report))
    return rows


def not_applicable(rows: list[dict[str, Any]], why: str) -> list[dict[str, Any]]:
    """The rows of a run that measured part of the dataset: neither passed nor failed, with no value shown
    beside a limit it was never meant to meet."""
    return [{**row, "observed": None, "passed": None, "verdict": NOT_APPLICABLE, "explanation": why} for row in rows]


def unmeasured_fails(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """On a run of the whole dataset a configured gate that could not be measured fails: a gate that
    measured nothing never passes."""
    return [
        {
            **row,
            "passed": False,
            "verdict": FAILED,
            "explanation": f"{row['explanation']} A configured gate must be measured to pass: record what it "
            "needs, or remove it from the thresholds for this model or version.",
        }
        if row["verdict"] == NOT_MEASURED
        else row
        for row in rows
    ]


def _bound_row(gate: Gate, report: Mapping[str, Any]) -> dict[str, Any]:
    kind = PRIMITIVE_GATES.get(gate.key) or CHOICE_GATES[gate.key]
    prim = gate.primitive
    label = f"{LABELS[prim]} {kind.what}"
    metric = kind.metric.format(p=prim)
    raw, reason = None, None
    for path in kind.paths:
        raw, reason = _lookup(report, tuple(part.format(p=prim) for part in path))
        if raw is not None:
            metric = ".".join(part.format(p=prim) for part in path) if kind.transform is None else metric
            break
    row: dict[str, Any] = {"name": gate.name, "metric": metric, "observed": None, "limit": gate.limit}
    if raw is None:
        return {
            **row,
            "passed": None,
            "verdict": NOT_MEASURED,
            "explanation": f"{label} was not measured in this run ({reason}).",
        }
    observed = kind.transform(raw) if kind.transform else raw
    shown, limit = _pair(observed, gate.limit)
    if kind.bound == "min":
        passed = observed >= gate.limit
        text = f"{label} {shown} {'meets' if passed else 'is below'} the floor {limit}."
    else:
        passed = observed <= gate.limit
        text = f"{label} {shown} {'is within' if passed else 'exceeds'} the ceiling {limit}."
    if gate.key == "max_swap_shift" and not passed:
        side = "second" if raw > 0 else "first"
        text += f" P(True) is higher when True is shown {side} (mean shift {raw:+.3f})."
    if gate.key == "max_first_position_bias" and not passed:
        text += f" The option shown first wins {raw:.1%} of the time (0.5 is order-blind)."
    return {
        **row,
        "observed": observed,
        "passed": bool(passed),
        "verdict": PASSED if passed else FAILED,
        "explanation": text,
    }


def _lambda_row(gate: Gate, report: Mapping[str, Any]) -> dict[str, Any]:
    p, reason = _lookup(report, ("uncertainty", "test", "p_value"))
    row: dict[str, Any] = {"name": gate.name, "metric": "uncertainty.test.p_value", "observed": p, "limit": gate.limit}
    alpha = f"{gate.limit:g}"
    if p is None:
        return {
            **row,
            "passed": None,
            "verdict": NOT_MEASURED,
            "explanation": f"The test of λ = 0 could not be run ({reason}).",
        }
    rejected = p < gate.limit
    shown = f"p = {p:.2g}"
    if gate.key == "require_lambda_positive":
        passed = rejected
        text = (
            f"The one-sided test of λ = 0 rejects it ({shown} < α = {alpha}): Choice sits above the Score "
            "expectation, as the latent uncertainty model requires."
            if passed
            else f"The one-sided test of λ = 0 does not reject it ({shown} ≥ α = {alpha}), but this gate requires λ > 0."
        )
    else:
        passed = not rejected
        text = (
            f"The one-sided test of λ = 0 does not reject it ({shown} ≥ α = {alpha}), as this gate requires "
            "(no evidence that Choice sits above the Score expectation)."
            if passed
            else f"The one-sided test of λ = 0 rejects it ({shown} < α = {alpha}): Choice sits significantly above "
            "the Score expectation, but this gate requires λ = 0."
        )
    return {**row, "passed": passed, "verdict": PASSED if passed else FAILED, "explanation": text}


def _lookup(report: Mapping[str, Any], path: tuple[str, ...]) -> tuple[float | None, str]:
    """The number at `path`, or None and why: the innermost block's own `reason` when it gives one."""
    node: Any = report
    reason = None
    for depth, part in enumerate(path):
        dotted = ".".join(path[: depth + 1])
        if not isinstance(node, Mapping):
            return None, f"{'.'.join(path[:depth])} is not a block"
        if isinstance(node.get("reason"), str):
            reason = node["reason"]
        if part not in node:
            return None, reason or f"the report has no {dotted}"
        if node[part] is None:
            if dotted == "option_swap":
                return None, "no rendering was asked the swapped Choice, so option_swap is null"
            return None, reason or f"{dotted} is null"
        node = node[part]
    if isinstance(node, bool) or not isinstance(node, int | float) or not math.isfinite(node):
        return None, f"{'.'.join(path)} is not a number"
    return float(node), ""


def _pair(observed: float, limit: float) -> tuple[str, str]:
    """observed with enough significant digits that it never reads as equal to a limit it differs from."""
    shown_limit = f"{limit:g}"
    for digits in range(3, 12):
        shown = f"{observed:.{digits}g}"
        if observed == limit or float(shown) != limit:
            return shown, shown_limit
    return repr(observed), shown_limit
