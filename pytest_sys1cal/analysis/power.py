"""How many latent problems, renderings and repeats a dataset needs to detect a drop in mean OVL: the
sample-size formula, what a report measures (repeat noise σ_w, item spread, intra-problem correlation ρ) and
the plan over repeat counts that `python -m pytest_sys1cal power` prints. See docs/power.md."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any, NamedTuple

import numpy as np

from ..document import dataset_sha, model_source
from ..errors import InputError
from ..vocabulary import LABELS, PRIMITIVES
from .paired import COLUMNS, PairingError, pair_reports, per_repeat, per_repeat_ovl, rendering_ovl, within_variance
from .stats import Clusters
from .student_t import t_ppf

REPEATS = (1, 3, 5, 10, 20)
DEFAULT_SIGMA_W = 0.10
DEFAULT_SIGMA_DELTA = 0.05
SIGMA_DELTA_WHAT_IF = (0.02, 0.05, 0.10)
SMALL = 30  # latent problems below which z is replaced by Student t (docs/power.md)
DESIGNS = ("paired", "unpaired")


class PowerError(InputError):
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
    """σ_w: the pooled within-rendering SD over repeats of the per-repeat OVL (of="ovl", as docs/power.md
    defines it, and as the upgrade gate reads it too) or of the answer itself (of="answer"). None with a single repeat
    or no per-repeat samples."""
    # per_repeat and within_variance are the upgrade gate's, so the gate and this plan read the samples alike.
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
    ovl = rendering_ovl(asked, primitive)
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
    ours, theirs = dataset_sha(report), dataset_sha(baseline)
    if ours != theirs:
        raise PowerError(
            f"--baseline was computed on dataset sha256 {theirs}, the report on {ours}: paired differences need "
            "the same renderings"
        )
    try:
        paired = pair_reports(report, baseline)
    except PairingError as exc:
        raise PowerError(f"--baseline: {exc}") from None
    new, base = paired.new[primitive], paired.base[primitive]
    both = ~np.isnan(new) & ~np.isnan(base)
    if np.unique(paired.latent_ids[both]).size < 2:
        raise PowerError(f"--baseline: {LABELS[primitive]} is measured on fewer than 2 latent problems in both reports")
    d = (np.abs(base - paired.p_star) - np.abs(new - paired.p_star))[both]  # OVL_report − OVL_baseline
    sd_new, sd_base = (repeat_sd(r, primitive) for r in (report, baseline))
    var_d = float(d.var(ddof=1))
    if sd_new is None or sd_base is None:
        noise, sigma_w = 0.0, None
        source = "measured: SD of the paired differences (1 repeat: repeat noise not removed, an upper bound)"
    else:
        noise = (sd_new**2 + sd_base**2) / paired.repeats
        sigma_w = math.sqrt((sd_new**2 + sd_base**2) / 2)
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

    report, baseline: reports as `read_report` returns them. sigma_w / sigma_delta override what the report
    (or `baseline`, paired design only) measures; renderings_per_problem: the m of the planned dataset
    (default: the report's)."""
    _check_arguments(design, drop, sigma_w, sigma_delta)
    z = _z(alpha, power)
    est = estimate(report, primitive)
    from_baseline = _from_baseline(report, baseline, primitive) if baseline is not None and design == "paired" else None
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
    result = _result(report, plan, rows, primitive)
    result.update(
        sigma_w_source=w_source,
        spread_source=spread.source,
        baseline=from_baseline,
        assumptions=[*w_assumptions, *spread.assumptions],
        notes=notes,
    )
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
    given: float | None, est: Estimates, from_baseline: Mapping[str, Any] | None, source: str | None
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


def _paired_spread(sigma_delta: float | None, from_baseline: Mapping[str, Any] | None, est: Estimates) -> _Spread:
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


def _result(report: Mapping[str, Any], plan: _Design, rows: list[dict[str, Any]], primitive: str) -> dict[str, Any]:
    """The plan's numbers as the JSON output shows them (sources, assumptions and notes added by the caller)."""
    return {
        "model": dict(report.get("model") or {}),
        "dataset": dict(report.get("dataset") or {}),
        "primitive": primitive,
        "label": LABELS[primitive],
        "design": plan.kind,
        "drop": plan.drop,
        "alpha": plan.alpha,
        "power": plan.power,
        "z": plan.z,
        "estimates": asdict(plan.est),
        "sigma_w": plan.sigma_w,
        "spread": plan.spread,  # σ_Δ (paired) or σ_B (unpaired)
        "rho": plan.rho,
        "renderings_per_problem": plan.m,
        "renderings_per_problem_deff": plan.m_eff,
        "table": rows,
        "own_design": _own(plan),
    }


def _what_if(plan: _Design, repeats: Sequence[int]) -> dict[str, Any]:
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


def _row(plan: _Design, r: int, var: float, deff: float) -> dict[str, Any]:
    """One line of the table: what a dataset with r repeats needs, and what this report's size detects."""
    row: dict[str, Any] = {"repeats": r, "variance": var, "design_effect": deff, "t_corrected": False}
    renderings: int | None
    latent_problems: int | None
    if plan.kind == "paired":
        renderings, latent_problems = _paired_size(plan, var, deff, row)
        mde = plan.z * math.sqrt(var * deff / plan.est.renderings)
    else:
        renderings, latent_problems = _fresh_size(plan, var, deff)
        mde = plan.z * math.sqrt(2 * var * deff / plan.est.renderings)  # a fresh set the size of this one
        row["mde_unlimited_fresh"] = plan.z * math.sqrt(var * deff / plan.est.renderings)
    row.update(
        renderings=renderings,
        latent_problems=latent_problems,
        requests=renderings * r if renderings is not None else None,
        mde_at_report_size=mde,
    )
    return row


def _paired_size(plan: _Design, var: float, deff: float, row: dict[str, Any]) -> tuple[int, int]:
    """Renderings and latent problems of a paired design; marks the row t_corrected when t quantiles were used."""
    n = var * deff * (plan.z / plan.drop) ** 2
    latents = n / plan.m
    if latents < SMALL:  # iterate with t quantiles on df = latent problems − 1
        for _ in range(50):
            df = max(math.ceil(latents) - 1, 1)
            updated = var * deff * (_t(plan.alpha, plan.power, df) / plan.drop) ** 2 / plan.m
            if math.ceil(updated) == math.ceil(latents):
                break
            latents = updated
        row["t_corrected"] = True
        n = latents * plan.m
    latent_problems = math.ceil(latents - 1e-9)
    return max(math.ceil(n - 1e-9), latent_problems), latent_problems


def _fresh_size(plan: _Design, var: float, deff: float) -> tuple[int | None, int | None]:
    """The fresh arm of an unpaired design against this report (N₀ renderings): V·DEFF·(1/n + 1/N₀) ≤ (δ/z)².
    None when even an unlimited fresh set would not do."""
    room = (plan.drop / plan.z) ** 2 / (var * deff) - 1 / plan.est.renderings
    renderings = math.ceil(1 / room - 1e-9) if room > 0 else None
    latent_problems = math.ceil(renderings / plan.m - 1e-9) if renderings is not None else None
    return renderings, latent_problems


def _own(plan: _Design) -> dict[str, Any]:
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
