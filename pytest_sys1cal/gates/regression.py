"""The upgrade gate: this run's mean OVL per primitive against a baseline report, paired by rendering
(analysis/compare.py), as gate rows."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..vocabulary import FAILED, NOT_MEASURED, PASSED, PRIMITIVES, REPORT_SCHEMA
from .schema import RegressionConfig, Thresholds, ThresholdsError


class BaselineError(ThresholdsError):
    """The baseline report cannot be compared with this run (other dataset, other repeat count, unreadable)."""


def load_baseline(path: str | Path) -> dict[str, Any]:
    """Read a JSON report written by --sys1cal-report. Raises BaselineError naming the file."""
    from ..report_file import ReportError, read_report

    try:
        return read_report(path)
    except ReportError as exc:
        raise BaselineError(f"baseline {exc}") from None


def check_baseline(baseline: Any, dataset_sha256: str | None, baseline_name: str) -> None:
    """Refuse a baseline that is not a report, or was computed on another dataset (renderings must pair)."""
    if not isinstance(baseline, Mapping) or baseline.get("schema") != REPORT_SCHEMA:
        found = baseline.get("schema") if isinstance(baseline, Mapping) else type(baseline).__name__
        raise BaselineError(f"{baseline_name}: not a {REPORT_SCHEMA} report (schema: {found!r})")
    theirs = (baseline.get("dataset") or {}).get("sha256")
    if dataset_sha256 != theirs:
        raise BaselineError(
            f"{baseline_name} was computed on dataset sha256 {theirs}, this run on sha256 {dataset_sha256}; a paired "
            "comparison needs the same renderings, so record the baseline on this dataset"
        )


def evaluate_regression(
    thresholds: Thresholds | RegressionConfig | None,
    report: Mapping[str, Any],
    baseline_report: Mapping[str, Any],
    seed: int = 0,
    *,
    baseline_name: str = "the baseline",
) -> list[dict[str, Any]]:
    """Rows of the upgrade gate: per gated primitive, mean OVL of this run against the baseline, paired by
    rendering, with verdict "passed", "FAILED", "inconclusive" or "not measured". Each row adds
    ``baseline``, ``new`` (mean OVL over the paired renderings) and ``details`` (the full comparison).

    Raises BaselineError when the baseline is not a report, was computed on another dataset, or has a
    different number of repeats per rendering."""
    from ..analysis.compare import ComparisonError, Margin, compare_reports

    config = thresholds.regression if isinstance(thresholds, Thresholds) else thresholds or RegressionConfig()
    check_baseline(baseline_report, (report.get("dataset") or {}).get("sha256"), baseline_name)
    margins = {p: Margin(config.drop[p], config.fail_drop[p]) for p in PRIMITIVES}
    try:
        comparison = compare_reports(
            report,
            baseline_report,
            margins=margins,
            alpha=config.alpha,
            seed=seed,
            resamples=config.resamples,
            primitives=config.primitives,
        )
    except ComparisonError as exc:
        raise BaselineError(f"{baseline_name}: {exc}") from None
    return [_regression_row(prim, m, comparison) for prim, m in comparison["metrics"].items()]


def _regression_row(prim: str, m: Mapping[str, Any], comparison: Mapping[str, Any]) -> dict[str, Any]:
    verdict = m["verdict"]
    row = {
        "name": f"regression.{prim}.mean_ovl",
        "metric": f"primitives.{prim}.mean_ovl (new − baseline, paired)",
        "observed": m["difference"],
        "limit": -m["margin"],
        "passed": {PASSED: True, FAILED: False}.get(verdict),
        "verdict": verdict,
        "baseline": m["baseline"],
        "new": m["new"],
        "details": {
            **m,
            "matched": comparison["matched"],
            "only_in_new": comparison["only_in_new"],
            "only_in_baseline": comparison["only_in_baseline"],
            "repeats": comparison["repeats"],
            "resamples": comparison["resamples"],
            "seed": comparison["seed"],
        },
    }
    if verdict == NOT_MEASURED:
        row["explanation"] = f"{m['label']} was not compared: {m['reason']}."
        return row
    head = (
        f"{m['label']} {m['new']:.3f} vs baseline {m['baseline']:.3f} on {m['n']} paired renderings: "
        f"Δ = {m['difference']:+.4f}"
    )
    lower = f"one-sided {_level(m['lower_level'])} lower bound {m['lower']:+.4f}"
    upper = f"one-sided {_level(m['upper_level'])} upper bound {m['upper']:+.4f}"
    if verdict == FAILED:
        text = (
            f"{head}; its {upper} is below -{m['fail_margin']:g}, so the drop is real and larger than the "
            f"{m['fail_margin']:g} tolerated."
        )
    elif verdict == PASSED:
        text = f"{head}; its {lower} is above -{m['margin']:g}, so any drop is within the margin {m['margin']:g}."
    else:
        text = (
            f"{head}; neither shown within the margin ({lower} is not above -{m['margin']:g}) nor shown worse "
            f"({upper} is not below -{m['fail_margin']:g}). {_capital(m['advice']['text'])}."
        )
    row["explanation"] = text
    return row


def _level(level: float) -> str:
    text = f"{100 * level:.1f}".rstrip("0").rstrip(".")
    return f"{text}%"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
