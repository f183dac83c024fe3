"""The text `python -m pytest_sys1cal contamination` prints: the two sets compared, the table of mean OVL and
differences per primitive, a verdict in words per primitive and overall. See docs/contamination.md."""

from __future__ import annotations

from collections.abc import Sequence

from ..document import model_and_version
from ..document_commands import ContaminationCheck, ContaminationMetric
from .table import aligned


def format_check(result: ContaminationCheck) -> str:
    """The check (`check_contamination`'s result) as text."""
    return "\n".join([*_check_heading(result), "", *_differences(result), "", *_findings(result)])


def _check_heading(result: ContaminationCheck) -> list[str]:
    """What was compared, how, and the caveats."""
    lines = [f"Contamination check: {model_and_version(result['model'])}, mean OVL on the public set vs a fresh set"]
    for which, side in (("public", result["public"]), ("fresh", result["fresh"])):
        families = ", ".join(f"{name} {count}" for name, count in side["families"].items())
        lines.append(
            f"  {which + ':':7} {side['dataset']} (sha256 {str(side['sha256'])[:12]}…), {side['compared_renderings']} of "
            f"{side['renderings']} renderings compared, {side['latent_problems']} latent problems ({families})"
        )
    if result["exclusion_note"]:
        lines.append(f"  {result['exclusion_note']}")
    if result["stratify"] == "none":
        lines.append("  verdict on the raw difference (--stratify none): the two sets' family mixes are not adjusted")
    else:
        lines.append(
            f"  verdict on the reweighted difference: the fresh set's mean OVL per {_mix(result['stratify'])} "
            "weighted by the public set's share of renderings there (like with like); the raw difference alongside"
        )
    lines.append(
        f"  {_level_percent(result)} intervals from {result['resamples']} bootstrap resamples ({result['bootstrap']}); "
        f"seed {result['seed']}; repeats {result['repeats']['public']} public, {result['repeats']['fresh']} fresh"
    )
    return lines + [f"  caveat: {text}" for text in result["caveats"]]


def _differences(result: ContaminationCheck) -> list[str]:
    """The table: per primitive, public and fresh mean OVL, raw and reweighted differences with intervals."""
    level = _level_percent(result)
    header = ["primitive", "public", "fresh", "raw diff", f"{level} CI", "fresh reweighted", "reweighted diff"]
    header.append(f"{level} CI")
    rows = []
    for metric in result["metrics"].values():
        if metric["verdict"] is None:
            rows.append([metric["label"], *["—"] * 7])  # the reason follows below the table
            continue
        raw, reweighted = metric["raw"], metric["reweighted"]
        rows.append(
            [
                metric["label"],
                f"{metric['public']:.3f}",
                f"{metric['fresh']:.3f}",
                f"{raw['difference']:+.3f}",
                _ci(raw["ci"]),
                f"{metric['fresh_reweighted']:.3f}",
                f"{reweighted['difference']:+.3f}",
                _ci(reweighted["ci"]),
            ]
        )
    return aligned(header, rows)


def _findings(result: ContaminationCheck) -> list[str]:
    """One line per primitive (its difference and what it means), then the overall line."""
    lines = [_finding_line(result, metric) for metric in result["metrics"].values()]
    measured = [metric for metric in result["metrics"].values() if metric["verdict"] is not None]
    if measured:
        best = min(measured, key=lambda metric: metric["p_value_holm"])
        summary = (
            f"SUSPICIOUS on {', '.join(result['metrics'][p]['label'] for p in result['suspicious'])}"
            if result["suspicious"]
            else "not suspicious on any primitive"
        )
        lines.append(
            f"Overall: {summary} (smallest Holm-adjusted one-sided p over {len(measured)} primitives: "
            f"{best['p_value_holm']:.4f}, {best['label']})"
        )
    return lines


def _finding_line(result: ContaminationCheck, metric: ContaminationMetric) -> str:
    if metric["verdict"] is None:
        return f"{metric['label']}: not compared: {metric['reason']}"
    reweighted = result["verdict_uses"] == "reweighted"
    chosen = metric["reweighted"] if reweighted else metric["raw"]
    public = metric["public_shared_strata"] if reweighted else metric["public"]
    fresh = metric["fresh_reweighted"] if reweighted else metric["fresh"]
    how = f" (reweighted to the public {_mix(result['stratify'])} mix)" if reweighted else ""
    lost = metric["public_renderings_without_fresh_counterpart"]
    extra = f"; {lost} public renderings have no fresh counterpart and are left out" if reweighted and lost else ""
    return (
        f"{metric['label']}: public {public:.3f} vs fresh {fresh:.3f}{how}, difference {chosen['difference']:+.3f} "
        f"[{_level_percent(result)} CI {chosen['ci'][0]:+.3f}, {chosen['ci'][1]:+.3f}]: {metric['finding']}{extra}"
    )


def _level_percent(result: ContaminationCheck) -> str:
    return f"{result['level']:.0%}"


def _mix(stratify: str) -> str:
    """The strata in words: family+band gives "family × p* band"."""
    names = {"family": "family", "band": "p* band", "representation": "representation"}
    return " × ".join(names[key] for key in stratify.split("+"))


def _ci(ci: Sequence[float]) -> str:
    return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"
