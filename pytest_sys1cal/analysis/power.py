"""How many latent problems, renderings and repeats a dataset needs to detect a drop in mean OVL: the
sample-size formula and the plan over repeat counts that `python -m pytest_sys1cal power` prints, from what a
report measures (power_estimates.py: repeat noise σ_w, item spread, intra-problem correlation ρ). See
docs/power.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import NamedTuple

from ..document import ReportDocument, model_source
from ..document_commands import FromBaseline, OwnDesign, PlanNumbers, PowerPlan, PowerRow, WhatIf
from ..vocabulary import LABELS
from .power_estimates import Estimates, PowerError, baseline_spread, estimate
from .student_t import t_ppf

REPEATS = (1, 3, 5, 10, 20)
DEFAULT_SIGMA_W = 0.10
DEFAULT_SIGMA_DELTA = 0.05
SIGMA_DELTA_WHAT_IF = (0.02, 0.05, 0.10)
SMALL = 30  # latent problems below which z is replaced by Student t (docs/power.md)
DESIGNS = ("paired", "unpaired")


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


# ---------------------------------------------------------------------------------------------- plan


class _Spread(NamedTuple):
    """σ_Δ (paired) or σ_B (unpaired), where it comes from, and the ρ that clusters it."""

    value: float
    source: str
    rho: float
    assumptions: list[str]
    notes: list[str]


@dataclass(frozen=True)
class _Design:
    """The numbers every line of the plan is computed from."""

    kind: str  # "paired" or "unpaired"
    drop: float
    alpha: float
    power: float
    z: float
    est: Estimates
    sigma_w: float
    spread: float
    rho: float
    m: float  # renderings per latent problem of the planned dataset
    m_eff: float  # the m of the design effect (size-weighted for the report's own problems)

    def variance(self, r: float) -> float:
        """Per-rendering variance at r repeats: σ² + 2σ_w²/r (paired) or σ_B² + σ_w²/r (unpaired)."""
        return self.spread**2 + (2 if self.kind == "paired" else 1) * self.sigma_w**2 / r

    def deff(self, r: float) -> float:
        """DEFF_r = 1 + (m − 1)·ρ_r, ρ_r = ρ × the share of the variance that is not repeat noise."""
        share = self.spread**2 / self.variance(r) if self.variance(r) > 0 else 0.0
        return design_effect(self.m_eff, self.rho * share)


def plan_power(
    report: ReportDocument,
    *,
    drop: float,
    primitive: str = "choice",
    alpha: float = 0.05,
    power: float = 0.8,
    design: str = "paired",
    sigma_w: float | None = None,
    sigma_delta: float | None = None,
    baseline: ReportDocument | None = None,
    renderings_per_problem: float | None = None,
    repeats: Sequence[int] = REPEATS,
) -> PowerPlan:
    """The sample-size table over `repeats` and the MDE of the report's own design. JSON-able.

    report, baseline: reports as `read_report` returns them. sigma_w / sigma_delta override what the report
    (or `baseline`, paired design only) measures; renderings_per_problem: the m of the planned dataset
    (default: the report's)."""
    _check_arguments(design, drop, sigma_w, sigma_delta)
    z = _z(alpha, power)
    est = estimate(report, primitive)
    from_baseline = (
        baseline_spread(report, baseline, primitive) if baseline is not None and design == "paired" else None
    )
    if baseline is not None and design == "unpaired":
        raise PowerError("--baseline measures σ_Δ of a paired design; it has no meaning with --design unpaired")
    w, w_source, w_assumptions = _repeat_noise(sigma_w, est, from_baseline, model_source(report))
    m = renderings_per_problem if renderings_per_problem is not None else est.per_problem
    if m < 1:
        raise PowerError(f"--renderings-per-problem must be at least 1, got {m}")
    spread = _paired_spread(sigma_delta, from_baseline, est) if design == "paired" else _unpaired_spread(est, alpha)
    # The design effect's m: size-weighted for the report's own (unequal) problems, m itself for a plan.
    m_eff = est.per_problem_weighted if renderings_per_problem is None else m
    plan = _Design(design, drop, alpha, power, z, est, w, spread.value, spread.rho, m, m_eff)
    rows = [_row(plan, r, plan.variance(r), plan.deff(r)) for r in repeats]
    notes = [*_uncorrected_note(est), *spread.notes]
    if any(row["t_corrected"] for row in rows):
        notes.append(f"designs under {SMALL} latent problems use Student t quantiles (df = latent problems − 1)")
    result: PowerPlan = {
        **_result(report, plan, rows, primitive),
        "sigma_w_source": w_source,
        "spread_source": spread.source,
        "baseline": from_baseline,
        "assumptions": [*w_assumptions, *spread.assumptions],
        "notes": notes,
    }
    if design == "paired" and sigma_delta is None and from_baseline is None:
        result["what_if"] = _what_if(plan, repeats)
    return result


def _check_arguments(design: str, drop: float, sigma_w: float | None, sigma_delta: float | None) -> None:
    if design not in DESIGNS:
        raise PowerError(f"design must be one of {', '.join(DESIGNS)}, got {design!r}")
    if drop <= 0:
        raise PowerError(f"--drop must be positive, got {drop}")
    for name, value in (("sigma-w", sigma_w), ("sigma-delta", sigma_delta)):
        if value is not None and value < 0:
            raise PowerError(f"--{name} must not be negative, got {value}")


def _repeat_noise(
    given: float | None, est: Estimates, from_baseline: FromBaseline | None, source: str | None
) -> tuple[float, str, list[str]]:
    """σ_w: given, measured in both reports' repeats, in this report's, or assumed (and said so)."""
    if given is not None:
        return given, "given (--sigma-w)", []
    if from_baseline is not None and from_baseline["sigma_w"] is not None:
        return from_baseline["sigma_w"], "measured in both reports' repeats", []
    if est.sigma_w is not None:
        measured = f"measured: {est.repeats} repeats per rendering (SD of the answers: {est.answer_sd:.3f})"
        return est.sigma_w, measured, []
    why = (
        f"σ_w = {DEFAULT_SIGMA_W:.3f}: this report has {est.repeats} repeat per rendering, so the repeat noise is not "
        "measurable"
    )
    if source == "reconstructed":
        why += " (reconstructed cassettes hold means over the paper's 10 repeats)"
    return DEFAULT_SIGMA_W, "ASSUMED (--sigma-w)", [why]


def _uncorrected_note(est: Estimates) -> list[str]:
    if est.sigma_w is not None:
        return []
    return ["SD and ρ of per-rendering OVL are not corrected for repeat noise (σ_w not measured in the report)"]


def _paired_spread(sigma_delta: float | None, from_baseline: FromBaseline | None, est: Estimates) -> _Spread:
    """σ_Δ: given, measured from --baseline, or assumed; ρ_Δ from --baseline, else assumed to be ρ of OVL."""
    assumptions = []
    if sigma_delta is not None:
        value, source = sigma_delta, "given (--sigma-delta)"
    elif from_baseline is not None:
        value, source = from_baseline["sigma_delta"], from_baseline["sigma_delta_source"]
    else:
        value, source = DEFAULT_SIGMA_DELTA, "ASSUMED (--sigma-delta, or measure it with --baseline)"
        assumptions.append(
            f"σ_Δ = {value:.3f}: how unevenly a new version changes renderings is not in one report "
            "(docs/power.md tabulates 0.02-0.10)"
        )
    if from_baseline is not None:
        return _Spread(value, source, from_baseline["rho_delta"], assumptions, [])
    assumptions.append(f"the change clusters within latent problems as OVL does (ρ_Δ = ρ of OVL = {est.rho:.2f})")
    return _Spread(value, source, est.rho, assumptions, [])


def _unpaired_spread(est: Estimates, alpha: float) -> _Spread:
    """σ_B, the item-to-item spread of per-rendering OVL, and ρ of OVL, both measured in the report."""
    source = "measured: SD of per-rendering OVL" + (" without repeat noise" if est.sigma_w is not None else "")
    notes = []
    if alpha != 0.025:
        notes.append(
            "the contamination check flags when the lower end of its two-sided 95% interval is above 0, a "
            "one-sided test at α = 0.025: plan for it with --alpha 0.025"
        )
    return _Spread(est.sigma_between, source, est.rho, [], notes)


def _result(report: ReportDocument, plan: _Design, rows: list[PowerRow], primitive: str) -> PlanNumbers:
    """The plan's numbers as the JSON output shows them (sources, assumptions and notes added by the caller)."""
    return {
        "model": report["model"].copy(),
        "dataset": report["dataset"].copy(),
        "primitive": primitive,
        "label": LABELS[primitive],
        "design": plan.kind,
        "drop": plan.drop,
        "alpha": plan.alpha,
        "power": plan.power,
        "z": plan.z,
        "estimates": plan.est.json(),
        "sigma_w": plan.sigma_w,
        "spread": plan.spread,  # σ_Δ (paired) or σ_B (unpaired)
        "rho": plan.rho,
        "renderings_per_problem": plan.m,
        "renderings_per_problem_deff": plan.m_eff,
        "table": rows,
        "own_design": _own(plan),
    }


def _what_if(plan: _Design, repeats: Sequence[int]) -> WhatIf:
    """Latent problems needed at r = 10 (or the largest r) if σ_Δ were each of SIGMA_DELTA_WHAT_IF."""
    r_ref = 10 if 10 in repeats else repeats[-1]
    w, m_eff, rho = plan.sigma_w, plan.m_eff, plan.rho
    return {
        "repeats": r_ref,
        "latent_problems": {
            f"{s:.2f}": _row(plan, r_ref, s**2 + 2 * w**2 / r_ref,
                             design_effect(m_eff, rho * s**2 / (s**2 + 2 * w**2 / r_ref)))["latent_problems"]
            for s in SIGMA_DELTA_WHAT_IF
        },
    }  # fmt: skip


def _row(plan: _Design, r: int, var: float, deff: float) -> PowerRow:
    """One line of the table: what a dataset with r repeats needs, and what this report's size detects."""
    renderings: int | None
    latent_problems: int | None
    if plan.kind == "paired":
        renderings, latent_problems, t_corrected = _paired_size(plan, var, deff)
        mde = plan.z * math.sqrt(var * deff / plan.est.renderings)
    else:
        (renderings, latent_problems), t_corrected = _fresh_size(plan, var, deff), False
        mde = plan.z * math.sqrt(2 * var * deff / plan.est.renderings)  # a fresh set the size of this one
    row: PowerRow = {
        "repeats": r,
        "variance": var,
        "design_effect": deff,
        "t_corrected": t_corrected,
        "renderings": renderings,
        "latent_problems": latent_problems,
        "requests": renderings * r if renderings is not None else None,
        "mde_at_report_size": mde,
    }
    if plan.kind != "paired":
        row["mde_unlimited_fresh"] = plan.z * math.sqrt(var * deff / plan.est.renderings)
    return row


def _paired_size(plan: _Design, var: float, deff: float) -> tuple[int, int, bool]:
    """Renderings and latent problems of a paired design, and whether t quantiles were used."""
    n = var * deff * (plan.z / plan.drop) ** 2
    latents = n / plan.m
    t_corrected = latents < SMALL
    if t_corrected:  # iterate with t quantiles on df = latent problems − 1
        for _ in range(50):
            df = max(math.ceil(latents) - 1, 1)
            updated = var * deff * (_t(plan.alpha, plan.power, df) / plan.drop) ** 2 / plan.m
            if math.ceil(updated) == math.ceil(latents):
                break
            latents = updated
        n = latents * plan.m
    latent_problems = math.ceil(latents - 1e-9)
    return max(math.ceil(n - 1e-9), latent_problems), latent_problems, t_corrected


def _fresh_size(plan: _Design, var: float, deff: float) -> tuple[int | None, int | None]:
    """The fresh arm of an unpaired design against this report (N₀ renderings): V·DEFF·(1/n + 1/N₀) ≤ (δ/z)².
    None when even an unlimited fresh set would not do."""
    room = (plan.drop / plan.z) ** 2 / (var * deff) - 1 / plan.est.renderings
    renderings = math.ceil(1 / room - 1e-9) if room > 0 else None
    latent_problems = math.ceil(renderings / plan.m - 1e-9) if renderings is not None else None
    return renderings, latent_problems


def _own(plan: _Design) -> OwnDesign:
    """The report's own design and the drop it detects (against a fresh set of its size, when unpaired)."""
    est = plan.est
    var, deff = plan.variance(est.repeats), plan.deff(est.repeats)
    factor = 2 if plan.kind == "unpaired" else 1
    return {
        "renderings": est.renderings,
        "latent_problems": est.latent_problems,
        "repeats": est.repeats,
        "design_effect": deff,
        "mde": plan.z * math.sqrt(factor * var * deff / est.renderings),
    }
