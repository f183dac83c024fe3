"""What one report says about a primitive's noise and clustering, the inputs of a power plan (analysis/power.py):
the repeat noise σ_w, the spread of per-rendering OVL between items, the intra-problem correlation ρ, and with
a second report of the same renderings the spread σ_Δ of the paired differences. See docs/power.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..document import Item, ReportDocument, dataset_sha
from ..document_commands import FromBaseline, PowerEstimates
from ..errors import InputError
from ..vocabulary import LABELS, PRIMITIVES
from .paired import (
    COLUMNS,
    PairingError,
    p_stars,
    pair_reports,
    per_repeat,
    per_repeat_ovl,
    rendering_ovl,
    within_variance,
)
from .stats import Clusters


class PowerError(InputError):
    """A power analysis that cannot be done (bad parameters, nothing measured); worded for the user."""


def _items(report: ReportDocument) -> list[Item]:
    items = report.get("items")
    if not isinstance(items, list) or not items:
        raise PowerError("the report has no items[]")
    return items


def _repeats(report: ReportDocument) -> int:
    counts = {int(item["repeats"]) for item in _items(report) if item.get("repeats") is not None}
    if len(counts) > 1:
        raise PowerError(f"the renderings have different repeat counts ({', '.join(map(str, sorted(counts)))})")
    if counts:
        return counts.pop()
    repeats = report.get("repeats")
    if isinstance(repeats, int):
        return repeats
    raise PowerError("the report does not say how many repeats each rendering has")


def repeat_sd(report: ReportDocument, primitive: str, of: str = "ovl") -> float | None:
    """σ_w: the pooled within-rendering SD over repeats of the per-repeat OVL (of="ovl", as docs/power.md
    defines it, and as the upgrade gate reads it too) or of the answer itself (of="answer"). None with a single repeat
    or no per-repeat samples."""
    # per_repeat and within_variance are the upgrade gate's, so the gate and this plan read the samples alike.
    if of not in ("ovl", "answer"):
        raise ValueError(f"of must be 'ovl' or 'answer', got {of!r}")
    items = _items(report)
    values = per_repeat(items, _repeats(report))[primitive]
    if of == "ovl":
        values = per_repeat_ovl(values, p_stars(items))
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

    def json(self) -> PowerEstimates:
        return {
            "primitive": self.primitive,
            "renderings": self.renderings,
            "latent_problems": self.latent_problems,
            "repeats": self.repeats,
            "per_problem": self.per_problem,
            "per_problem_weighted": self.per_problem_weighted,
            "sigma_w": self.sigma_w,
            "answer_sd": self.answer_sd,
            "sd_ovl": self.sd_ovl,
            "sigma_between": self.sigma_between,
            "rho": self.rho,
            "mean_ovl": self.mean_ovl,
        }


def estimate(report: ReportDocument, primitive: str) -> Estimates:
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


def baseline_spread(report: ReportDocument, baseline: ReportDocument, primitive: str) -> FromBaseline:
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
