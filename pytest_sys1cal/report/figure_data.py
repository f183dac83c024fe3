"""What the HTML report's figures plot, read from a JSON report alone (its ``items`` and blocks), so a saved
report redraws the same figures. Pure numpy: no matplotlib here."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.calibration import BINS, equal_width_bins
from ..analysis.latent import uncertain_mass
from ..analysis.paired import column, p_stars
from ..defaults import ALPHA
from ..document import ANSWER_COLUMNS, ReportDocument, Uncertainty
from .table import fmt_p

# The gates that hold the valid test of λ = 0 to a level (gates/kinds.py's LambdaTest): their limit is α.
LAMBDA_GATES = ("uncertainty.require_lambda_positive", "uncertainty.require_lambda_zero")


@dataclass(frozen=True)
class Columns:
    """The report's items as columns, in the report's order (sorted by instance id)."""

    p_star: np.ndarray
    answers: dict[str, np.ndarray]  # primitive → answer, NaN where not asked
    choice_swapped: np.ndarray  # P(True) asked with options [True, False]
    latent: np.ndarray
    family: np.ndarray
    representation: np.ndarray

    @classmethod
    def of(cls, report: ReportDocument) -> Columns:
        items = list(report.get("items") or [])
        return cls(
            p_star=p_stars(items),
            answers={prim: column(items, key) for prim, key in ANSWER_COLUMNS.items()},
            choice_swapped=column(items, "p_choice_swapped"),
            latent=np.array([str(item.get("latent_instance_id")) for item in items], dtype=str),
            family=np.array([str(item.get("family")) for item in items], dtype=str),
            representation=np.array([str(item.get("representation")) for item in items], dtype=str),
        )

    def asked(self, prim: str) -> tuple[np.ndarray, np.ndarray]:
        """(p*, answer) on the renderings where the primitive was asked."""
        p = self.answers[prim]
        keep = ~np.isnan(p)
        return self.p_star[keep], p[keep]

    def readout_answer(self, prim: str) -> np.ndarray:
        """The probability the report's readout block reads: Choice averaged over both orders where asked."""
        if prim != "choice":
            return self.answers[prim]
        plain, swapped = self.answers["choice"], self.choice_swapped
        return np.where(np.isnan(plain), swapped, np.where(np.isnan(swapped), plain, (plain + swapped) / 2))


@dataclass(frozen=True)
class Reliability:
    """Non-empty bins of the answer (15 equal-width bins, as for ``calibration.<p>.ece``)."""

    centers: np.ndarray  # of every bin, empty ones included (for the count bars)
    counts: np.ndarray  # renderings per bin, every bin
    mean_answer: np.ndarray  # per non-empty bin
    mean_p_star: np.ndarray


def reliability(p_star: np.ndarray, answer: np.ndarray, bins: int = BINS) -> Reliability:
    bin_of = equal_width_bins(answer, bins)
    counts = np.bincount(bin_of, minlength=bins)
    filled = counts > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_answer = np.bincount(bin_of, weights=answer, minlength=bins) / counts
        mean_star = np.bincount(bin_of, weights=p_star, minlength=bins) / counts
    return Reliability(
        centers=(np.arange(bins) + 0.5) / bins,
        counts=counts,
        mean_answer=mean_answer[filled],
        mean_p_star=mean_star[filled],
    )


@dataclass(frozen=True)
class Ranges:
    """Per latent problem with ≥ 2 answered renderings: its p* and the lowest and highest answer."""

    p_star: np.ndarray
    low: np.ndarray
    high: np.ndarray


def latent_ranges(p_star: np.ndarray, answer: np.ndarray, latent: np.ndarray) -> Ranges:
    keep = ~np.isnan(answer)
    ids, codes = np.unique(latent[keep], return_inverse=True)
    codes = codes.reshape(-1)
    values, stars = answer[keep], p_star[keep]
    sizes = np.bincount(codes, minlength=ids.size)
    low = np.full(ids.size, np.inf)
    high = np.full(ids.size, -np.inf)
    np.minimum.at(low, codes, values)
    np.maximum.at(high, codes, values)
    star = np.zeros(ids.size)
    star[codes] = stars  # renderings of one latent problem share p* exactly
    multi = sizes >= 2
    return Ranges(p_star=star[multi], low=low[multi], high=high[multi])


def latent_curve(uncertainty: Uncertainty, points: int = 401) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(μ, U(μ), f(μ)) of the fitted latent model on a grid, or None when it was not fitted."""
    lam, alpha, beta = uncertainty.get("lambda"), uncertainty.get("alpha"), uncertainty.get("beta")
    if lam is None or alpha is None or beta is None:
        return None
    mu = np.linspace(0.0, 1.0, points)
    mass = uncertain_mass(mu, lam, alpha, beta)
    with np.errstate(invalid="ignore", divide="ignore"):
        curve = np.where(mass < 1, mu / (1 - mass), 1.0)
    return mu, mass, np.minimum(curve, 1.0)


def roc_points(scores: np.ndarray, positive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(false-positive rates, true-positive rates) of the ROC curve, the threshold lowered past one distinct score at
    a time (tied scores move both rates at once, the diagonal step whose area is the readout's "ties ½")."""
    order = np.argsort(-scores, kind="stable")
    ranked, hits = scores[order], positive[order]
    last = np.concatenate([ranked[1:] != ranked[:-1], [True]])  # the last of each run of tied scores
    true_rate = np.concatenate([[0.0], np.cumsum(hits)[last] / hits.sum()])
    false_rate = np.concatenate([[0.0], np.cumsum(~hits)[last] / (~hits).sum()])
    return false_rate, true_rate


@dataclass(frozen=True)
class LatentBand:
    """Whether Table 2 and the Score → Choice map show the latent-uncertainty (T/U/F) band: only when the valid
    test rejects λ = 0 at the λ gate's α (the default α without such a gate), so that a figure never shows an
    effect the test does not find (docs/statistics.md §2.3)."""

    shown: bool
    p_value: float | None
    alpha: float
    alpha_source: str  # "the gate's" or "the default, no λ gate in force"

    @classmethod
    def of(cls, result: ReportDocument) -> LatentBand:
        p = ((result.get("uncertainty") or {}).get("test") or {}).get("p_value")
        limits = [g.get("limit") for g in result.get("gates") or [] if g.get("name") in LAMBDA_GATES]
        alpha = next((float(limit) for limit in limits if isinstance(limit, int | float)), None)
        source = "the λ gate's" if alpha is not None else "the default; no λ gate in force"
        alpha = ALPHA if alpha is None else alpha
        return cls(shown=p is not None and p < alpha, p_value=p, alpha=alpha, alpha_source=source)

    def absent(self) -> str:
        """The words in place of the band: "no unspoken mass detected (p = 0.649 ≥ α = 0.01, the λ gate's)"."""
        if self.p_value is None:
            return "no unspoken mass detected (the test of λ = 0 could not be run)"
        return f"no unspoken mass detected (p = {fmt_p(self.p_value, floored=True)} ≥ α = {self.alpha:g}, {self.alpha_source})"


def r2_words(r2: float | None) -> str:
    """R² with a negative one said in words: the fitted curve then predicts Choice worse than Choice's own mean."""
    if r2 is None or r2 >= 0:
        return "" if r2 is None else f"{r2:.3f}"
    return f"{r2:.3f} (below 0: worse than a flat line at Choice's mean)"
