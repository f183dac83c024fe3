"""How many latent problems, renderings and repeats a dataset needs to detect a drop in mean OVL
(`python -m pytest_sys1cal power REPORT.json --drop 0.02`). calibration-statistics.md §3.2.

**Formula.** For a paired comparison (the upgrade gate: the same renderings measured by two versions),
per-rendering differences D_i have variance σ_Δ² + 2σ_w²/r, so detecting a drop δ at one-sided level α with
power 1 − β needs

    n = (z_{1−α} + z_{1−β})² · (σ_Δ² + 2σ_w²/r) / δ² · DEFF        renderings, DEFF = 1 + (m − 1)ρ,

and a design of n renderings detects MDE = (z_{1−α} + z_{1−β}) · sqrt((σ_Δ² + 2σ_w²/r) · DEFF / n).
`sample_size` and `detectable_drop` are exactly these (the statistics doc's table: δ = 0.02, σ_Δ = σ_w = 0.1,
r = 10 → 186). The plan corrects small designs (< 30 latent problems) with Student t quantiles, df = latent
problems − 1, iterated.

**What a report measures.**

* σ_w: the SD over repeats of a rendering's per-repeat OVL, pooled over renderings (Score through its
  expectation μ_S); the doc's definition. The gates read the OVL of the repeat mean, 1 − |p̄ − p*|, whose
  repeat noise is σ_w²/r exactly for a model far from p* and, by the folding at p*, also for an unbiased
  one ((1 − 2/π)·s²/r either way, s the SD of the answers); in between it is somewhat larger. The SD of the
  answers themselves (what analysis/compare.py pools) is reported too: it overstates that noise by up to
  1/(1 − 2/π) ≈ 2.8× in variance for a well-calibrated model, which would leave no item-to-item spread. A
  report with a single repeat per rendering (the bundled reconstructed Jev cassettes) cannot measure σ_w: it
  is then an explicit assumption (``--sigma-w``, default 0.10).
* The between-rendering SD of per-rendering OVL, with the repeat noise σ_w²/r removed: the item-to-item
  spread of difficulty. It drives the **unpaired** design (the contamination check: public vs fresh items).
* ρ: the intra-problem correlation of per-rendering OVL, a one-way random-effects ANOVA over latent problems
  (ICC(1) for unequal sizes), with the repeat noise removed from the within-problem variance, so it is the
  correlation of the noise-free values. m in the DEFF is the size-weighted mean Σ m_j² / Σ m_j (exact for
  the variance of a mean over unequal clusters).

**Assumptions, stated in the output.**

* σ_Δ, the SD over renderings of the true change between two versions, is not in a single report: it is a
  planning value (``--sigma-delta``, default 0.05, the middle of the doc's range 0.02-0.10), or measured from
  two reports of the same dataset with ``--baseline`` (paired differences, minus their repeat noise).
* The change clusters within latent problems as OVL does (ρ_Δ = ρ of OVL) unless ``--baseline`` gives the
  paired differences.
* Repeat noise is not shared between renderings, so at r repeats the correlation of D between renderings of
  a problem is ρ_r = ρ·σ_Δ² / (σ_Δ² + 2σ_w²/r), and DEFF_r = 1 + (m − 1)ρ_r enters the formula above. (With
  DEFF applied to the whole variance, this equals DEFF applied to σ_Δ² alone.)

**Unpaired design** (``--design unpaired``; the contamination check): each arm's per-rendering variance is
V = σ_B² + σ_w²/r (σ_B the noise-free between-rendering SD), the public arm is fixed at this report's size
N₀, and the fresh arm needs n with V·DEFF·(1/n + 1/N₀) ≤ δ²/(z_{1−α} + z_{1−β})². When V·DEFF/N₀ alone
exceeds that, no fresh set is large enough: the public set's own size limits what can be detected. The
family reweighting of the contamination check removes some of V, so these numbers are conservative.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from .analysis.compare import COLUMNS
from .analysis.stats import Clusters
from .analysis.student_t import t_ppf
from .argtypes import open_probability
from .report.json_report import ReportError, read_report, validate_report
from .vocabulary import LABELS, PRIMITIVES

__all__ = [
    "Estimates",
    "add_arguments",
    "design_effect",
    "detectable_drop",
    "estimate",
    "format_plan",
    "intraclass_correlation",
    "plan_power",
    "repeat_sd",
    "run",
    "sample_size",
]

REPEATS = (1, 3, 5, 10, 20)
DEFAULT_SIGMA_W = 0.10
DEFAULT_SIGMA_DELTA = 0.05
SIGMA_DELTA_WHAT_IF = (0.02, 0.05, 0.10)
SMALL = 30  # latent problems below which z is replaced by Student t (calibration-statistics.md §3.2)
DESIGNS = ("paired", "unpaired")


class PowerError(ValueError):
    """A power analysis that cannot be done (bad parameters, nothing measured); worded for the user."""


# ---------------------------------------------------------------------------------------------- formula


def _z(alpha: float, power: float) -> float:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise PowerError(f"alpha and power must lie in (0, 1), got alpha={alpha}, power={power}")
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha) + normal.inv_cdf(power)


def _t(alpha: float, power: float, df: float) -> float:
    return t_ppf(df, 1 - alpha) + t_ppf(df, power)


def design_effect(m: float, rho: float) -> float:
    """DEFF = 1 + (m − 1)ρ for m renderings per latent problem with intra-problem correlation ρ."""
    return 1 + (m - 1) * rho


def _variance(sigma_delta: float, sigma_w: float, repeats: float) -> float:
    return sigma_delta**2 + (2 * sigma_w**2 / repeats if math.isfinite(repeats) else 0.0)


def sample_size(
    delta: float,
    sigma_delta: float,
    sigma_w: float,
    repeats: float,
    *,
    deff: float = 1.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """Renderings needed to detect a drop `delta` in a paired comparison (one-sided):
    n = (z_{1−α} + z_{power})² · (σ_Δ² + 2σ_w²/r) / δ² · DEFF, rounded up. repeats may be math.inf."""
    if delta <= 0:
        raise PowerError(f"the drop must be positive, got {delta}")
    exact = _z(alpha, power) ** 2 * _variance(sigma_delta, sigma_w, repeats) * deff / delta**2
    return max(1, math.ceil(exact - 1e-9))  # the guard keeps an exact integer from rounding up by float noise


def detectable_drop(
    renderings: float,
    sigma_delta: float,
    sigma_w: float,
    repeats: float,
    *,
    deff: float = 1.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """Minimum detectable drop of a paired design with `renderings` renderings:
    MDE = (z_{1−α} + z_{power}) · sqrt((σ_Δ² + 2σ_w²/r) · DEFF / n)."""
    return _z(alpha, power) * math.sqrt(_variance(sigma_delta, sigma_w, repeats) * deff / renderings)


# ---------------------------------------------------------------------------------------------- estimators


def _items(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    items = report.get("items")
    if not isinstance(items, list) or not items:
        raise PowerError("the report has no items[]")
    return items


def _repeats(report: Mapping[str, Any]) -> int:
    counts = {int(item["repeats"]) for item in _items(report) if item.get("repeats") is not None}
    if len(counts) > 1:
        raise PowerError(f"the renderings have different repeat counts ({', '.join(map(str, sorted(counts)))})")
    if counts:
        return counts.pop()
    if isinstance(report.get("repeats"), int):
        return int(report["repeats"])
    raise PowerError("the report does not say how many repeats each rendering has")


def repeat_sd(report: Mapping[str, Any], primitive: str, of: str = "ovl") -> float | None:
    """σ_w: the pooled within-rendering SD over repeats of the per-repeat OVL (of="ovl", the statistics doc's
    definition, which the upgrade gate uses too) or of the answer itself (of="answer"). None with a single repeat
    or no per-repeat samples."""
    # Shared with the upgrade gate, so the gate and this plan read the per-repeat samples the same way.
    from .analysis.compare import per_repeat, per_repeat_ovl, within_variance

    if of not in ("ovl", "answer"):
        raise ValueError(f"of must be 'ovl' or 'answer', got {of!r}")
    items = _items(report)
    values = per_repeat(items, _repeats(report))[primitive]
    if of == "ovl":
        values = per_repeat_ovl(values, np.asarray([float(item["p_star"]) for item in items]))
    column = COLUMNS[primitive][0]
    rows = np.asarray([item.get(column) is not None for item in items])
    variance = within_variance(values, rows)
    return None if variance is None else math.sqrt(variance)


def intraclass_correlation(values: np.ndarray, groups: Sequence[str] | np.ndarray, noise_var: float = 0.0) -> float:
    """Correlation of two renderings of one latent problem: one-way random-effects ANOVA, ICC(1) for unequal
    group sizes, ρ = τ² / (τ² + σ_e² − noise_var), τ² = (MSB − MSW)/n₀, σ_e² = MSW. noise_var: variance in each
    value that is not shared with anything (repeat noise, σ_w²/r), removed so that ρ describes the noise-free
    values. Clipped to [0, 1]. Raises PowerError without two problems or a problem with two renderings."""
    values = np.asarray(values, dtype=float)
    groups = np.asarray(groups, dtype=str)
    keep = ~np.isnan(values)
    values, groups = values[keep], groups[keep]
    clusters = Clusters.of(groups)
    j, n = clusters.count, values.size
    if j < 2 or n <= j:
        raise PowerError("ρ needs at least two latent problems and one with two renderings")
    means = clusters.means(values)
    sizes = clusters.sizes
    msb = float(np.sum(sizes * (means - values.mean()) ** 2)) / (j - 1)
    msw = float(np.sum((values - means[clusters.codes]) ** 2)) / (n - j)
    n0 = (n - float(np.sum(sizes**2)) / n) / (j - 1)
    tau2 = max((msb - msw) / n0, 0.0)
    total = tau2 + max(msw - noise_var, 0.0)
    return min(tau2 / total, 1.0) if total > 0 else 0.0


@dataclass(frozen=True)
class Estimates:
    """What one report says about one primitive's noise and clustering."""

    primitive: str
    renderings: int
    latent_problems: int
    repeats: int
    per_problem: float  # mean renderings per latent problem
    per_problem_weighted: float  # Σ m_j² / Σ m_j, the m of the design effect
    sigma_w: float | None  # SD over repeats of per-repeat OVL; None: a single repeat, not measurable
    answer_sd: float | None  # SD over repeats of the answer itself
    sd_ovl: float  # observed SD over renderings of per-rendering OVL (repeat mean)
    sigma_between: float  # the same without the repeat noise σ_w²/r (= sd_ovl when σ_w is unknown)
    rho: float  # intra-problem correlation of per-rendering OVL, noise removed when σ_w is known
    mean_ovl: float


def estimate(report: Mapping[str, Any], primitive: str) -> Estimates:
    if primitive not in PRIMITIVES:
        raise PowerError(f"unknown primitive {primitive!r} (choose from {', '.join(PRIMITIVES)})")
    items = _items(report)
    column = COLUMNS[primitive][0]
    asked = [item for item in items if item.get(column) is not None]
    if len(asked) < 3:
        raise PowerError(
            f"{LABELS[primitive]} was measured on {len(asked)} renderings in this report; nothing to plan from"
        )
    p = np.asarray([float(item[column]) for item in asked])
    ovl = 1 - np.abs(p - np.asarray([float(item["p_star"]) for item in asked]))
    latents = [item["latent_instance_id"] for item in asked]
    clusters = Clusters.of(latents)
    repeats = _repeats(report)
    sigma_w = repeat_sd(report, primitive)
    noise = sigma_w**2 / repeats if sigma_w is not None else 0.0
    sd = float(ovl.std(ddof=1))
    return Estimates(
        primitive=primitive,
        renderings=len(asked),
        latent_problems=clusters.count,
        repeats=repeats,
        per_problem=len(asked) / clusters.count,
        per_problem_weighted=float(np.sum(clusters.sizes**2)) / len(asked),
        sigma_w=sigma_w,
        answer_sd=repeat_sd(report, primitive, of="answer"),
        sd_ovl=sd,
        sigma_between=math.sqrt(max(sd**2 - noise, 0.0)),
        rho=intraclass_correlation(ovl, latents, noise),
        mean_ovl=float(ovl.mean()),
    )


def _from_baseline(report: Mapping[str, Any], baseline: Mapping[str, Any], primitive: str) -> dict[str, Any]:
    """σ_Δ, σ_w and ρ_Δ of the paired differences D_i = OVL_i(report) − OVL_i(baseline) between two reports
    of the same renderings: Var(D) minus the repeat noise of both, (σ²_w,a + σ²_w,b)/r."""
    from .analysis.compare import ComparisonError, pair_reports

    ours, theirs = ((r.get("dataset") or {}).get("sha256") for r in (report, baseline))
    if ours != theirs:
        raise PowerError(
            f"--baseline was computed on dataset sha256 {theirs}, the report on {ours}: paired differences need "
            "the same renderings"
        )
    try:
        paired = pair_reports(report, baseline)
    except ComparisonError as exc:
        raise PowerError(f"--baseline: {exc}") from None
    new, base = paired.new[primitive], paired.base[primitive]
    both = ~np.isnan(new) & ~np.isnan(base)
    if np.unique(paired.latent_ids[both]).size < 2:
        raise PowerError(f"--baseline: {LABELS[primitive]} is measured on fewer than 2 latent problems in both reports")
    d = (np.abs(base - paired.p_star) - np.abs(new - paired.p_star))[both]  # OVL_report − OVL_baseline
    noise_sds = [repeat_sd(r, primitive) for r in (report, baseline)]
    var_d = float(d.var(ddof=1))
    if None in noise_sds:
        noise, sigma_w = 0.0, None
        source = "measured: SD of the paired differences (1 repeat: repeat noise not removed, an upper bound)"
    else:
        noise = (noise_sds[0] ** 2 + noise_sds[1] ** 2) / paired.repeats
        sigma_w = math.sqrt((noise_sds[0] ** 2 + noise_sds[1] ** 2) / 2)
        source = "measured: SD of the paired differences minus their repeat noise"
    return {
        "sigma_delta": math.sqrt(max(var_d - noise, 0.0)),
        "sigma_delta_source": source,
        "sigma_w": sigma_w,
        "rho_delta": intraclass_correlation(d, paired.latent_ids[both], noise),
        "difference": float(d.mean()),
        "matched": int(both.sum()),
    }


# ---------------------------------------------------------------------------------------------- plan


def plan_power(
    report: Mapping[str, Any],
    *,
    drop: float,
    primitive: str = "choice",
    alpha: float = 0.05,
    power: float = 0.8,
    design: str = "paired",
    sigma_w: float | None = None,
    sigma_delta: float | None = None,
    baseline: Mapping[str, Any] | None = None,
    renderings_per_problem: float | None = None,
    repeats: Sequence[int] = REPEATS,
) -> dict[str, Any]:
    """The sample-size table over `repeats` and the MDE of the report's own design. JSON-able.

    sigma_w / sigma_delta override what the report (or `baseline`, paired design only) measures;
    renderings_per_problem: the m of the planned dataset (default: the report's)."""
    if design not in DESIGNS:
        raise PowerError(f"design must be one of {', '.join(DESIGNS)}, got {design!r}")
    if drop <= 0:
        raise PowerError(f"--drop must be positive, got {drop}")
    for name, value in (("sigma-w", sigma_w), ("sigma-delta", sigma_delta)):
        if value is not None and value < 0:
            raise PowerError(f"--{name} must not be negative, got {value}")
    z = _z(alpha, power)
    validate_report(report)
    if baseline is not None:
        validate_report(baseline, "--baseline")
    est = estimate(report, primitive)
    notes: list[str] = []
    assumptions: list[str] = []

    measured_w = est.sigma_w
    from_baseline = _from_baseline(report, baseline, primitive) if baseline is not None and design == "paired" else None
    if baseline is not None and design == "unpaired":
        raise PowerError("--baseline measures σ_Δ of a paired design; it has no meaning with --design unpaired")
    if sigma_w is not None:
        w, w_source = sigma_w, "given (--sigma-w)"
    elif from_baseline is not None and from_baseline["sigma_w"] is not None:
        w, w_source = from_baseline["sigma_w"], "measured in both reports' repeats"
    elif measured_w is not None:
        w, w_source = (
            measured_w,
            (f"measured: {est.repeats} repeats per rendering (SD of the answers: {est.answer_sd:.3f})"),
        )
    else:
        w, w_source = DEFAULT_SIGMA_W, "ASSUMED (--sigma-w)"
        assumptions.append(
            f"σ_w = {w:.3f}: this report has {est.repeats} repeat per rendering, so the repeat noise is not measurable"
            + (
                " (reconstructed cassettes hold means over the paper's 10 repeats)"
                if _source(report) == "reconstructed"
                else ""
            )
        )
    if est.sigma_w is None:
        notes.append(
            "SD and ρ of per-rendering OVL are not corrected for repeat noise (σ_w not measured in the report)"
        )

    m = renderings_per_problem if renderings_per_problem is not None else est.per_problem
    if m < 1:
        raise PowerError(f"--renderings-per-problem must be at least 1, got {m}")
    # The design effect's m: size-weighted for the report's own (unequal) problems, m itself for a plan.
    m_eff = est.per_problem_weighted if renderings_per_problem is None else m

    if design == "paired":
        if sigma_delta is not None:
            spread, spread_source = sigma_delta, "given (--sigma-delta)"
        elif from_baseline is not None:
            spread, spread_source = from_baseline["sigma_delta"], from_baseline["sigma_delta_source"]
        else:
            spread, spread_source = DEFAULT_SIGMA_DELTA, "ASSUMED (--sigma-delta, or measure it with --baseline)"
            assumptions.append(
                f"σ_Δ = {spread:.3f}: how unevenly a new version changes renderings is not in one report "
                "(calibration-statistics.md §3.2 tabulates 0.02-0.10)"
            )
        rho = from_baseline["rho_delta"] if from_baseline is not None else est.rho
        if from_baseline is None:
            assumptions.append(f"the change clusters within latent problems as OVL does (ρ_Δ = ρ of OVL = {rho:.2f})")
    else:
        spread, spread_source = (
            est.sigma_between,
            "measured: SD of per-rendering OVL" + (" without repeat noise" if est.sigma_w is not None else ""),
        )
        rho = est.rho
        if alpha != 0.025:
            notes.append(
                "the contamination check flags when the lower end of its two-sided 95% interval is above 0, a "
                "one-sided test at α = 0.025: plan for it with --alpha 0.025"
            )

    def variance(r: float) -> float:
        return spread**2 + (2 if design == "paired" else 1) * w**2 / r

    def deff(r: float) -> float:
        share = spread**2 / variance(r) if variance(r) > 0 else 0.0
        return design_effect(m_eff, rho * share)

    rows = [_row(r, design, drop, variance(r), deff(r), z, alpha, power, m, est) for r in repeats]
    own = _own(design, variance(est.repeats), deff(est.repeats), z, est)
    if any(row["t_corrected"] for row in rows):
        notes.append(f"designs under {SMALL} latent problems use Student t quantiles (df = latent problems − 1)")
    result: dict[str, Any] = {
        "model": dict(report.get("model") or {}),
        "dataset": dict(report.get("dataset") or {}),
        "primitive": primitive,
        "label": LABELS[primitive],
        "design": design,
        "drop": drop,
        "alpha": alpha,
        "power": power,
        "z": z,
        "estimates": asdict(est),
        "sigma_w": w,
        "sigma_w_source": w_source,
        "spread": spread,  # σ_Δ (paired) or σ_B (unpaired)
        "spread_source": spread_source,
        "rho": rho,
        "renderings_per_problem": m,
        "renderings_per_problem_deff": m_eff,
        "baseline": from_baseline,
        "table": rows,
        "own_design": own,
        "assumptions": assumptions,
        "notes": notes,
    }
    if design == "paired" and sigma_delta is None and from_baseline is None:
        r_ref = 10 if 10 in repeats else repeats[-1]
        result["what_if"] = {
            "repeats": r_ref,
            "latent_problems": {
                f"{s:.2f}": _row(r_ref, design, drop, s**2 + 2 * w**2 / r_ref,
                                 design_effect(m_eff, rho * s**2 / (s**2 + 2 * w**2 / r_ref)), z, alpha, power, m, est)["latent_problems"]
                for s in SIGMA_DELTA_WHAT_IF
            },
        }  # fmt: skip
    return result


def _source(report: Mapping[str, Any]) -> str | None:
    return (report.get("model") or {}).get("source")


def _row(
    r: int,
    design: str,
    drop: float,
    var: float,
    deff: float,
    z: float,
    alpha: float,
    power: float,
    m: float,
    est: Estimates,
) -> dict[str, Any]:
    """One line of the table: what a dataset with r repeats needs, and what this report's size detects."""
    row: dict[str, Any] = {"repeats": r, "variance": var, "design_effect": deff, "t_corrected": False}
    if design == "paired":
        n = var * deff * (z / drop) ** 2
        latents = n / m
        if latents < SMALL:  # iterate with t quantiles on df = latent problems − 1
            for _ in range(50):
                df = max(math.ceil(latents) - 1, 1)
                updated = var * deff * (_t(alpha, power, df) / drop) ** 2 / m
                if math.ceil(updated) == math.ceil(latents):
                    break
                latents = updated
            row["t_corrected"] = True
            n = latents * m
        latent_problems = math.ceil(latents - 1e-9)
        renderings = max(math.ceil(n - 1e-9), latent_problems)
        mde = z * math.sqrt(var * deff / est.renderings)
    else:
        # The public arm is this report (N₀ renderings); the fresh arm needs n: V·DEFF·(1/n + 1/N₀) ≤ (δ/z)².
        room = (drop / z) ** 2 / (var * deff) - 1 / est.renderings
        renderings = math.ceil(1 / room - 1e-9) if room > 0 else None
        latent_problems = math.ceil(renderings / m - 1e-9) if renderings is not None else None
        mde = z * math.sqrt(2 * var * deff / est.renderings)  # a fresh set the size of this one
        row["mde_unlimited_fresh"] = z * math.sqrt(var * deff / est.renderings)
    row.update(
        renderings=renderings,
        latent_problems=latent_problems,
        requests=renderings * r if renderings is not None else None,
        mde_at_report_size=mde,
    )
    return row


def _own(design: str, var: float, deff: float, z: float, est: Estimates) -> dict[str, Any]:
    factor = 2 if design == "unpaired" else 1
    return {
        "renderings": est.renderings,
        "latent_problems": est.latent_problems,
        "repeats": est.repeats,
        "design_effect": deff,
        "mde": z * math.sqrt(factor * var * deff / est.renderings),
    }


# ---------------------------------------------------------------------------------------------- text


def format_plan(result: Mapping[str, Any]) -> str:
    est = result["estimates"]
    model, dataset = result["model"], result["dataset"]
    paired = result["design"] == "paired"
    label = result["label"]
    effect = "a drop" if paired else "a public-set advantage"
    what = (
        "paired design: the same renderings measured by two versions (the upgrade gate, --sys1cal-baseline)"
        if paired
        else "unpaired design: this report's set against a fresh one (the contamination check)"
    )
    lines = [
        f"Power for {label} mean OVL: detect {effect} of {result['drop']:.3f} at one-sided α = {result['alpha']:g} with "
        f"power {result['power']:.0%}",
        f"  {what}",
        f"  report: {model.get('name')} {model.get('version')} on {dataset.get('name')}, {est['renderings']} renderings of "
        f"{est['latent_problems']} latent problems, {est['repeats']} repeat{'s' if est['repeats'] != 1 else ''}; "
        f"mean OVL {est['mean_ovl']:.3f}",
        "",
    ]
    rho_kind = "ρ_Δ of the paired differences" if result["baseline"] else "ρ  of per-rendering OVL"
    spread_name = (
        "σ_Δ SD over renderings of the true change" if paired else "σ_B SD over renderings of per-rendering OVL"
    )
    measured = [
        ("σ_w repeat noise (SD of per-repeat OVL over repeats)", result["sigma_w"], result["sigma_w_source"]),
        (spread_name, result["spread"], result["spread_source"]),
        (
            f"{rho_kind} within a latent problem",
            result["rho"],
            "one-way ANOVA ICC" + (", noise removed" if est["sigma_w"] is not None else ""),
        ),
        (
            "m   renderings per latent problem",
            result["renderings_per_problem"],
            f"{result['renderings_per_problem_deff']:.2f} size-weighted in DEFF = 1 + (m − 1)ρ_r",
        ),
    ]
    if paired:
        measured.insert(2, ("SD over renderings of per-rendering OVL (for reference)", est["sd_ovl"], "observed"))
    width = max(len(name) for name, _, _ in measured)
    lines += [f"  {name:<{width}}  {value:6.3f}  {source}" for name, value, source in measured]
    lines += [f"  assumption: {text}" for text in result["assumptions"]]
    lines.append("")
    own_size = f"MDE at {est['renderings']} renderings"
    if paired:
        header = ("repeats", "ρ_r", "DEFF", "renderings", "latent problems", "requests", own_size)
    else:
        header = (
            "repeats",
            "ρ_r",
            "DEFF",
            "fresh renderings",
            "fresh latent problems",
            "requests",
            "MDE, fresh as large",
            "MDE, fresh unlimited",
        )
    rows = []
    for row in result["table"]:
        rho_r = (
            (row["design_effect"] - 1) / (result["renderings_per_problem_deff"] - 1)
            if result["renderings_per_problem_deff"] > 1
            else 0.0
        )
        cells = [
            str(row["repeats"]),
            f"{rho_r:.2f}",
            f"{row['design_effect']:.2f}",
            _count(row["renderings"]),
            _count(row["latent_problems"]) + ("*" if row["t_corrected"] else ""),
            _count(row["requests"]),
            f"{row['mde_at_report_size']:.4f}",
        ]
        if not paired:
            cells.append(f"{row['mde_unlimited_fresh']:.4f}")
        rows.append(cells)
    lines += _table(header, rows)
    if any(row["t_corrected"] for row in result["table"]):
        lines.append(f"  * fewer than {SMALL} latent problems: Student t quantiles, df = latent problems − 1")
    if not paired and any(row["renderings"] is None for row in result["table"]):
        lines.append(
            "  — not reachable: this report's own size limits the comparison; no fresh set detects the drop (see the "
            "last column for what an unlimited fresh set would detect)"
        )
    lines.append("")
    own = result["own_design"]
    verdict = "detectable" if own["mde"] <= result["drop"] else "NOT reliably detectable"
    design_words = "this report's design" if paired else "this report against a fresh set of the same size"
    lines.append(
        f"MDE of {design_words} ({own['renderings']} renderings, {own['repeats']} repeat{'s' if own['repeats'] != 1 else ''}, "
        f"DEFF {own['design_effect']:.2f}): {own['mde']:.4f}, so {effect} of {result['drop']:.3f} is {verdict} with "
        f"{result['power']:.0%} power"
    )
    if "what_if" in result:
        what_if = result["what_if"]
        cases = ", ".join(f"σ_Δ = {s}: {_count(n)}" for s, n in what_if["latent_problems"].items())
        lines.append(f"σ_Δ is assumed; latent problems needed at r = {what_if['repeats']} if it were {cases}")
    lines.append(
        "Requests = renderings × repeats (one request per repeat asks every question). Generated problems cost "
        "nothing, so more problems with fewer repeats is the cheaper way to power; compare only reports with the "
        "same repeats (the OVL of a repeat mean depends on r)."
    )
    lines += [f"Note: {text}" for text in result["notes"]]
    return "\n".join(lines)


def _count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[k]) for row in [header, *rows]) for k in range(len(header))]
    out = ["  ".join(cell.rjust(w) for cell, w in zip(header, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    return out


# ---------------------------------------------------------------------------------------------- command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", metavar="REPORT.json", help="a JSON report written by --sys1cal-report")
    parser.add_argument(
        "--drop", type=open_probability, required=True, help="the drop in mean OVL to detect, e.g. 0.02"
    )
    parser.add_argument("--alpha", type=open_probability, default=0.05, help="one-sided level (default 0.05)")
    parser.add_argument("--power", type=open_probability, default=0.8, help="power (default 0.8)")
    parser.add_argument(
        "--primitive", choices=PRIMITIVES, default="choice", help="which primitive's mean OVL (default choice)"
    )
    parser.add_argument(
        "--design",
        choices=DESIGNS,
        default="paired",
        help="paired: upgrade gate on the same renderings (default); unpaired: this set against a fresh one",
    )
    parser.add_argument(
        "--sigma-w", type=float, help=f"repeat noise σ_w to assume (default: measured, else {DEFAULT_SIGMA_W})"
    )
    parser.add_argument(
        "--sigma-delta",
        type=float,
        help=f"σ_Δ of the paired design (default: from --baseline, else {DEFAULT_SIGMA_DELTA})",
    )
    parser.add_argument(
        "--baseline", metavar="OTHER.json", help="a report of another run on the same dataset: measures σ_Δ and ρ_Δ"
    )
    parser.add_argument(
        "--renderings-per-problem",
        type=float,
        help="renderings per latent problem of the planned dataset (default: the report's)",
    )
    parser.add_argument("--json", action="store_true", help="print the plan as JSON instead of text")


def run(args: argparse.Namespace) -> int:
    try:
        report = read_report(args.report)
        baseline = read_report(args.baseline) if args.baseline else None
        result = plan_power(
            report,
            drop=args.drop,
            primitive=args.primitive,
            alpha=args.alpha,
            power=args.power,
            design=args.design,
            sigma_w=args.sigma_w,
            sigma_delta=args.sigma_delta,
            baseline=baseline,
            renderings_per_problem=args.renderings_per_problem,
        )
    except (ReportError, PowerError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False))
    else:
        print(format_plan(result))
    return 0
