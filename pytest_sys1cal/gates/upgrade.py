"""The upgrade gate: this run's mean OVL per primitive against a baseline report, paired by rendering
(analysis/upgrade.py), as gate rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..defaults import RECALIBRATION_SPLITS
from ..document import ModelBlock, ReportDocument, averaged_calls
from ..document_upgrade import ReadingVerdict, UpgradeDetails, UpgradeMetric, UpgradeResult
from ..errors import InputError
from ..vocabulary import CALL_READING, MEAN_READING, PRIMITIVES, REPORT_SCHEMA, Verdict, reading_label
from .evaluate import unmeasured_fails as unmeasured
from .rows import GateRow, outcome
from .schema import Thresholds, UpgradeConfig
from .upgrade_margins import inconclusive_setting, margins_details


class UpgradeError(InputError):
    """The baseline cannot be compared with this run (not a report, other dataset, other repeat count)."""


def check_baseline(baseline: Any, dataset_sha256: str | None, baseline_name: str) -> None:
    """Refuse a baseline that is not a report, or was computed on another dataset (renderings must pair)."""
    if not isinstance(baseline, Mapping) or baseline.get("schema") != REPORT_SCHEMA:
        found = baseline.get("schema") if isinstance(baseline, Mapping) else type(baseline).__name__
        raise UpgradeError(f"{baseline_name}: not a {REPORT_SCHEMA} report (schema: {found!r})")
    theirs = (baseline.get("dataset") or {}).get("sha256")
    if dataset_sha256 != theirs:
        raise UpgradeError(
            f"{baseline_name} was computed on dataset sha256 {theirs}, this run on sha256 {dataset_sha256}; a paired "
            "comparison needs the same renderings, so record the baseline on this dataset"
        )


def evaluate_upgrade(
    thresholds: Thresholds | UpgradeConfig | None,
    report: ReportDocument,
    baseline_report: ReportDocument,
    seed: int = 0,
    *,
    baseline_name: str = "the baseline",
    reading: str = MEAN_READING,
    splits: int = RECALIBRATION_SPLITS,
    explain: bool = True,
) -> list[GateRow]:
    """Rows of the upgrade gate: per gated primitive, mean OVL of this run against the baseline, paired by
    rendering, with verdict "passed", "FAILED", "inconclusive" or "not measured". Each row adds
    ``baseline``, ``new`` (mean OVL over the paired renderings) and ``details`` (the full comparison, with why
    each primitive moved unless `explain` is False: the trend's steps leave it out).
    `reading`: each rendering's OVL read from its repeat mean or per call (thresholds.yaml's `reading`).

    Raises UpgradeError when the baseline is not a report, was computed on another dataset, or cannot be
    paired under the reading (another number of repeats per rendering read as means; means read per call)."""
    from ..analysis.paired import PairingError

    config = thresholds.regression if isinstance(thresholds, Thresholds) else thresholds or UpgradeConfig()
    dataset = report.get("dataset")  # None in a report assembled without one: then no baseline matches it
    check_baseline(baseline_report, dataset.get("sha256") if dataset else None, baseline_name)
    try:
        comparison = _compare(config, report, baseline_report, seed, reading, splits=splits, explain=explain)
    except PairingError as exc:
        raise UpgradeError(f"{baseline_name}: {exc}") from None
    model: ModelBlock | None = report.get("model")  # None in a report assembled without one
    return [_upgrade_row(prim, m, comparison, config, model) for prim, m in comparison["metrics"].items()]


def _compare(
    config: UpgradeConfig,
    report: ReportDocument,
    baseline: ReportDocument,
    seed: int,
    reading: str,
    *,
    splits: int = RECALIBRATION_SPLITS,
    explain: bool = False,
) -> UpgradeResult:
    from ..analysis.upgrade import Margin, compare_reports

    margins = {p: Margin(config.drop[p], config.fail_drop[p]) for p in PRIMITIVES}
    return compare_reports(
        report,
        baseline,
        margins=margins,
        alpha=config.alpha,
        seed=seed,
        resamples=config.resamples,
        primitives=config.primitives,
        reading=reading,
        splits=splits,
        explain=explain,
    )


def other_reading(
    thresholds: Thresholds | UpgradeConfig | None,
    report: ReportDocument,
    baseline: ReportDocument,
    seed: int,
    reading: str,
) -> ReadingVerdict | None:
    """The upgrade comparison under the reading that does not decide (the same margins, α and resamples), for
    the notice when the two readings disagree; None when they are one (a call per rendering on both sides)."""
    from ..analysis.paired import PairingError
    from .upgrade_verdict import VERDICTS, decided_by, primitive_comparison

    if averaged_calls(report) == 1 and averaged_calls(baseline) == 1:
        return None
    config = thresholds.regression if isinstance(thresholds, Thresholds) else thresholds or UpgradeConfig()
    other = CALL_READING if reading == MEAN_READING else MEAN_READING
    label = reading_label(other, averaged_calls(report))
    try:
        comparison = _compare(config, report, baseline, seed, other)
    except PairingError as exc:
        return {
            "reading": other,
            "label": label,
            "verdict": str(Verdict.NOT_MEASURED),
            "summary": "",
            "reason": str(exc),
        }
    model: ModelBlock | None = report.get("model")
    rows = unmeasured(_upgrade_row(p, m, comparison, config, model) for p, m in comparison["metrics"].items())
    primitives = {gate.primitive: primitive_comparison(gate) for gate in rows}
    verdict = VERDICTS[outcome(rows)]
    return {
        "reading": other,
        "label": label,
        "verdict": str(verdict),
        "summary": decided_by(verdict, primitives),
        "primitives": primitives,
    }


def _upgrade_row(
    prim: str, m: UpgradeMetric, comparison: UpgradeResult, config: UpgradeConfig, model: ModelBlock | None
) -> GateRow:
    verdict = Verdict(m["verdict"])
    margins = margins_details(config, prim, model)
    tolerated = verdict == Verdict.INCONCLUSIVE and config.inconclusive == "pass"
    explanation = _explanation(verdict, m, _holm_stops(comparison))
    if tolerated:
        explanation += f" Let pass by regression.inconclusive: pass ({inconclusive_setting(margins)})."
    details: UpgradeDetails = {
        **m,
        "margins": margins,
        "matched": comparison["matched"],
        "only_in_new": comparison["only_in_new"],
        "only_in_baseline": comparison["only_in_baseline"],
        "repeats": comparison["repeats"],
        "reading": comparison["reading"],
        "resamples": comparison["resamples"],
        "seed": comparison["seed"],
        "cells": comparison["cells"],
    }
    return GateRow(
        name=f"regression.{prim}.mean_ovl",
        metric=f"primitives.{m['metric']} (new − baseline, paired)",
        observed=m["difference"],
        limit=-m["margin"],
        verdict=verdict,
        explanation=explanation,
        baseline=m["baseline"],
        new=m["new"],
        details=details,
        tolerated=tolerated,
    )


Stop = tuple[str, float, float]  # where Holm's step-down stopped: the label that stopped it, its p, its level


def _holm_stops(comparison: UpgradeResult) -> dict[str, Stop]:
    """Per family (its bootstrap p-value's key), where Holm's step-down stopped; a family that rejected every
    hypothesis is absent (docs/statistics.md §6.3)."""
    stops = {}
    for key in ("p_noninferior", "p_worse"):
        measured = sorted(
            ((p, m["label"]) for m in comparison["metrics"].values() if (p := _p_value(m, key)) is not None),
            key=lambda step: step[0],  # stable: ties keep the report's order, as analysis/paired.holm does
        )
        for rank, (p, label) in enumerate(measured):
            level = comparison["alpha"] / (len(measured) - rank)
            if p > level:
                stops[key] = (label, p, level)
                break
    return stops


def _p_value(m: UpgradeMetric, key: str) -> float | None:
    return m.get("p_worse") if key == "p_worse" else m.get("p_noninferior")


def _not_shown(m: UpgradeMetric, bound: str, met: bool, key: str, stops: dict[str, Stop]) -> str:
    """Why a bound did not decide. Most often it is not past its margin; when it is, Holm's step-down stopped
    before it, or its bootstrap p ((1 + #)/(B + 1), counting the resamples themselves) missed its level where the
    quantile did not."""
    if not met:
        return bound.replace(" is ", " is not ", 1)
    if key not in stops:
        return bound
    label, p_value, level = stops[key]
    if label != m["label"]:
        return f"{bound}, but Holm's step-down stopped at {label} (bootstrap p {p_value:.4g} above its level {level:.4g}) before it"
    return f"{bound}, but its bootstrap p {p_value:.4g} is above its Holm level {level:.4g}"


def _explanation(verdict: Verdict, m: UpgradeMetric, stops: dict[str, Stop]) -> str:
    if verdict == Verdict.NOT_MEASURED:
        return f"{m['label']} was not compared: {m['reason']}."
    head = (
        f"{m['label']} {m['new']:.3f} vs baseline {m['baseline']:.3f} on {m['n']} paired renderings: "
        f"Δ = {m['difference']:+.4f}"
    )
    lower = f"one-sided {_level(m['lower_level'])} lower bound {m['lower']:+.4f}"
    upper = f"one-sided {_level(m['upper_level'])} upper bound {m['upper']:+.4f}"
    if verdict == Verdict.FAILED:
        text = (
            f"{head}; its {upper} is below -{m['fail_margin']:g}, so the drop is real and larger than the "
            f"{m['fail_margin']:g} tolerated."
        )
    elif verdict == Verdict.PASSED:
        text = f"{head}; its {lower} is above -{m['margin']:g}, so any drop is within the margin {m['margin']:g}."
    else:
        within = _not_shown(m, f"{lower} is above -{m['margin']:g}", m["lower"] > -m["margin"], "p_noninferior", stops)
        worse = _not_shown(
            m, f"{upper} is below -{m['fail_margin']:g}", m["upper"] < -m["fail_margin"], "p_worse", stops
        )
        text = f"{head}; neither shown within the margin ({within}) nor shown worse ({worse}). {_capital(m['advice']['text'])}."
    return text


def _level(level: float) -> str:
    text = f"{100 * level:.1f}".rstrip("0").rstrip(".")
    return f"{text}%"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
