"""The upgrade comparison recorded in rounds (issue 40; docs/statistics.md §7): after each round of latent
problems, per primitive FAILED / passed / continue, keeping over all the looks P(FAILED | Δ ≥ −δ₀) ≤ α and
P(passed | Δ ≤ −δ) ≤ α for the gated primitives together (Holm over them, as the fixed design), and at the
last look the fixed design's three-way verdict. The design (spending, critical values, rounds) is in
sequential_design.py. Stateless: every look is recomputed from the problems recorded so far, so a replay of
a recording stopped early gives the same verdict. Knows nothing of pytest, files or thresholds.yaml."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..defaults import UPGRADE_RESAMPLES
from ..document import ReportDocument
from ..errors import InputError
from ..vocabulary import PRIMITIVES, Verdict
from .paired import pair_reports
from .primitives import ovl
from .sequential_design import DEFAULT_ROUNDS, DEFAULT_SPENDING, Design, problem_order
from .stats import Clusters
from .student_t import t_sf
from .upgrade import Margin

CONTINUE = "continue"
# The two one-sided tests of each primitive, as the fixed design names their families (§6.3): "worse" rejects
# H0 Δ ≥ −δ₀ (a FAIL), "noninferior" rejects H0 Δ ≤ −δ (a pass).
TESTS = ("worse", "noninferior")


class SequentialError(InputError):
    """A recording that is not the first rounds of the design's seeded order cannot be judged sequentially."""


@dataclass(frozen=True)
class Paired:
    """The paired differences of one comparison, for every gated primitive: D_i = OVL_new,i − OVL_base,i (NaN
    where a primitive is not in both), the renderings' latent problems as Clusters (sorted-id numbering, as
    the fixed design's bootstrap draws them) and the clusters in recording order."""

    d: Mapping[str, np.ndarray]
    clusters: Clusters
    order: np.ndarray  # (J,) cluster numbers in recording order


@dataclass(frozen=True)
class Looks:
    """Per primitive, per look so far: Δ̂ on the problems recorded by then, its cluster-robust SE, the
    latent problems with a paired rendering, and the t statistic of each test; and at the last look of the
    design the fixed design's bootstrap p-values."""

    difference: dict[str, np.ndarray]
    se: dict[str, np.ndarray]
    problems: dict[str, np.ndarray]
    statistic: dict[str, dict[str, np.ndarray]]  # test → primitive → (looks,)
    final_p: dict[str, dict[str, float]] | None  # test → primitive → bootstrap p-value, at the design's last look


def interim_looks(paired: Paired, design: Design, margins: Mapping[str, Margin], looks: int) -> Looks:
    """The statistics of looks 1 … `looks` (each on the first ends[k] problems of the order). Δ̂_k is the
    ratio of sums over the recorded renderings (the fixed design's estimate); its variance is the
    cluster-robust one, J/(J − 1)·Σ_j (S_j − Δ̂·N_j)²/N², S_j and N_j problem j's sum of D and paired
    renderings: the bootstrap SE's own limit (its B → ∞ value times √(J/(J − 1))), computed for every look
    at once by cumulative sums. T = (Δ̂ + δ)/se tests non-inferiority, T = (−δ₀ − Δ̂)/se a drop beyond δ₀."""
    ends = np.asarray(design.ends[:looks]) - 1
    out: dict[str, Any] = {"difference": {}, "se": {}, "problems": {}, "statistic": {test: {} for test in TESTS}}
    for prim, d in paired.d.items():
        both = ~np.isnan(d)
        sums = paired.clusters.sums(np.where(both, d, 0.0))[paired.order]
        sizes = paired.clusters.sums(both.astype(float))[paired.order]
        n, s = np.cumsum(sizes)[ends], np.cumsum(sums)[ends]
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = s / n
            count = np.cumsum(sizes > 0)[ends]
            spread = (
                np.cumsum(sums**2)[ends]
                - 2 * diff * np.cumsum(sums * sizes)[ends]
                + diff**2 * np.cumsum(sizes**2)[ends]
            )
            se = np.sqrt(np.maximum(spread, 0.0) * count / (count - 1)) / n
            margin = margins[prim]
            out["statistic"]["noninferior"][prim] = (diff + margin.drop) / se
            out["statistic"]["worse"][prim] = (-margin.fail_drop - diff) / se
        out["difference"][prim], out["se"][prim], out["problems"][prim] = diff, se, count
    return Looks(**out, final_p=None)


def final_p_values(
    paired: Paired, margins: Mapping[str, Margin], seed: int, resamples: int, counts: np.ndarray | None = None
) -> dict[str, dict[str, float]]:
    """The fixed design's bootstrap p-values on every problem (analysis/upgrade.py's, bit for bit: the same
    seeded latent-problem resamples shared by the primitives, (1 + #{resamples on the wrong side})/(B + 1)).
    `counts`: those resamples' counts when the caller already drew them for this seed (a simulation judging
    many recordings of one set of problems on one seed draws them once)."""
    if counts is None:
        counts = paired.clusters.resample_counts(np.random.default_rng(seed), resamples)
    out: dict[str, dict[str, float]] = {test: {} for test in TESTS}
    for prim, d in paired.d.items():
        both = ~np.isnan(d)
        if np.unique(paired.clusters.codes[both]).size < 2:
            continue
        numerator = counts @ paired.clusters.sums(np.where(both, d, 0.0))
        denominator = counts @ paired.clusters.sums(both.astype(float))
        with np.errstate(invalid="ignore", divide="ignore"):
            boot = np.where(denominator > 0, numerator / denominator, np.nan)
        boot = boot[~np.isnan(boot)]
        margin = margins[prim]
        out["noninferior"][prim] = float((1 + np.sum(boot <= -margin.drop)) / (boot.size + 1))
        out["worse"][prim] = float((1 + np.sum(boot >= -margin.fail_drop)) / (boot.size + 1))
    return out


@lru_cache(maxsize=4096)
def t_critical(df: int, tail: float) -> float:
    """The t with P(T_df > t) = tail (inf for tail 0): the look's nominal level on the t scale, so that the
    cluster-robust t on few problems is held to the level its normal-scale critical value stands for."""
    if tail <= 0 or df < 1:
        return math.inf
    low, high = 0.0, 1.0
    while t_sf(df, high) > tail:
        low, high = high, 2 * high
    for _ in range(200):
        middle = (low + high) / 2
        if t_sf(df, middle) > tail:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * high:
            break
    return high


def crossed(looks: Looks, design: Design, test: str, prim: str, level: float) -> bool:
    """Whether `test` of `prim` crossed its critical value at `level` at any look so far: an interim look by
    its t statistic against the t critical value of the look's nominal level, the design's last look by the
    fixed design's bootstrap p-value against that look's nominal level (exactly the fixed design when the
    design has one look)."""
    nominal = design.nominal(level)
    statistic = looks.statistic[test][prim]
    problems = looks.problems[prim]
    final = looks.final_p is not None
    for k in range(statistic.size - (1 if final else 0)):
        if problems[k] >= 2 and nominal[k] > 0 and statistic[k] >= t_critical(int(problems[k]) - 1, nominal[k]):
            return True
    if final and looks.final_p is not None:
        p = looks.final_p[test].get(prim)
        return p is not None and p <= nominal[-1]
    return False


def holm_rejected(looks: Looks, design: Design, test: str, measured: Sequence[str], alpha: float) -> set[str]:
    """Holm's step-down over the measured primitives, each tested by its group-sequential test: reject every
    one that crossed at α/m, then every remaining one that crossed at α/(m − r) with r rejected, until none.
    Each intersection of true nulls is then tested by a Bonferroni split of group-sequential tests (each at
    most α/|I| over all the looks), so by the closure principle the family-wise error stays ≤ α over all
    the looks (Maurer & Bretz 2013's graphical Holm, equal weights)."""
    remaining = list(measured)
    rejected: set[str] = set()
    while remaining:
        level = alpha / len(remaining)
        newly = [prim for prim in remaining if crossed(looks, design, test, prim, level)]
        if not newly:
            break
        rejected.update(newly)
        remaining = [prim for prim in remaining if prim not in rejected]
    return rejected


def standings(looks: Looks, design: Design, alpha: float) -> dict[str, str]:
    """Per primitive at the latest look: FAILED (drop beyond δ₀ shown, checked first as in the fixed design),
    passed (drop within δ shown), continue, or at the design's last look inconclusive; NOT_MEASURED when
    fewer than 2 latent problems have the primitive paired."""
    measured = [prim for prim, count in looks.problems.items() if count.size and count[-1] >= 2]
    worse = holm_rejected(looks, design, "worse", measured, alpha)
    noninferior = holm_rejected(looks, design, "noninferior", measured, alpha)
    undecided = Verdict.INCONCLUSIVE if looks.final_p is not None else CONTINUE
    out: dict[str, str] = {}
    for prim in looks.problems:
        if prim not in measured:
            out[prim] = Verdict.NOT_MEASURED
        else:
            out[prim] = Verdict.FAILED if prim in worse else Verdict.PASSED if prim in noninferior else undecided
    return out


@dataclass(frozen=True)
class Outcome:
    """Where a sequential comparison stands: the look it stopped at (1-based; the latest look when it goes on),
    whether it stopped, each primitive's standing at each look up to there, and the statistics."""

    look: int
    stopped: bool
    standing: dict[str, str]
    history: list[dict[str, str]]
    looks: Looks


def run_looks(
    paired: Paired,
    design: Design,
    margins: Mapping[str, Margin],
    *,
    recorded: int,
    alpha: float,
    seed: int,
    resamples: int = UPGRADE_RESAMPLES,
    counts: np.ndarray | None = None,
) -> Outcome:
    """Look after each complete round up to `recorded` problems (an end of a round), stopping at the first
    look where every measured primitive is decided; at the design's last look the fixed design decides.
    `counts`: final_p_values'."""
    if recorded not in design.ends:
        raise SequentialError(
            f"{recorded} latent problems are recorded, which is not the end of a round "
            f"(rounds end at {', '.join(map(str, design.ends))}): resume the recording to the end of its round"
        )
    history: list[dict[str, str]] = []
    last = design.ends.index(recorded) + 1
    # Every look's statistics at once: look k's are the first k of them (cumulative sums, element by element).
    every = interim_looks(paired, design, margins, last)
    for k in range(1, last + 1):
        looks = _first_looks(every, k)
        if k == design.rounds:
            looks = Looks(**{**looks.__dict__, "final_p": final_p_values(paired, margins, seed, resamples, counts)})
        standing = standings(looks, design, alpha)
        history.append(standing)
        if all(s != CONTINUE for s in standing.values()):
            return Outcome(look=k, stopped=True, standing=standing, history=history, looks=looks)
    return Outcome(look=len(history), stopped=False, standing=history[-1], history=history, looks=looks)


def _first_looks(looks: Looks, k: int) -> Looks:
    """The statistics of looks 1 … k of `looks`."""
    return Looks(
        difference={prim: v[:k] for prim, v in looks.difference.items()},
        se={prim: v[:k] for prim, v in looks.se.items()},
        problems={prim: v[:k] for prim, v in looks.problems.items()},
        statistic={test: {prim: v[:k] for prim, v in by.items()} for test, by in looks.statistic.items()},
        final_p=None,
    )


# ---------------------------------------------------------------------------------------------- from reports


def paired_from_reports(
    new: ReportDocument, baseline: ReportDocument, primitives: Iterable[str], seed: int
) -> tuple[Paired, int, int]:
    """The paired differences of a (possibly partial) recording against its baseline, with the number of
    latent problems recorded and the number in the whole comparison (the baseline's). The recorded problems
    must be the first of the seeded order (sequential_design.problem_order over the baseline's problems)."""
    gated = [p for p in PRIMITIVES if p in set(primitives)]
    paired = pair_reports(new, baseline)
    base_items = baseline.get("items") or []
    order = problem_order([item["latent_instance_id"] for item in base_items], seed)
    clusters = Clusters.of(paired.latent_ids)
    recorded = sorted(set(paired.latent_ids.tolist()))
    position = {latent: k for k, latent in enumerate(order)}
    prefix = sorted(order[: len(recorded)])
    if recorded != prefix:
        stray = next(latent for latent in recorded if position.get(latent, len(order)) >= len(recorded))
        raise SequentialError(
            f"the recording holds {len(recorded)} latent problems, but not the first {len(recorded)} of the order "
            f"seeded {seed} (latent problem {stray} comes later): record with the same seed, or replay it without "
            "the sequential design"
        )
    ranked = np.argsort([position[latent] for latent in recorded], kind="stable")  # cluster numbers, in order
    d = {}
    for prim in gated:
        got_new, got_base = ovl(paired.new[prim], paired.p_star), ovl(paired.base[prim], paired.p_star)
        d[prim] = got_new - got_base  # NaN where either is
    return Paired(d=d, clusters=clusters, order=ranked), len(recorded), len(order)


def sequential_compare(
    new: ReportDocument,
    baseline: ReportDocument,
    *,
    rounds: int = DEFAULT_ROUNDS,
    spending: str = DEFAULT_SPENDING,
    margins: Mapping[str, Margin] | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    resamples: int = UPGRADE_RESAMPLES,
    primitives: Iterable[str] = PRIMITIVES,
) -> dict[str, Any]:
    """The sequential upgrade comparison of a recording of the first rounds: where it stands. JSON-able."""
    gated = [p for p in PRIMITIVES if p in set(primitives)]
    margins = {p: (margins or {}).get(p, Margin()) for p in gated}
    outcome, design = judge(new, baseline, rounds, spending, margins, alpha, seed, resamples)
    return describe(outcome, design, margins)


def judge(
    new: ReportDocument,
    baseline: ReportDocument,
    rounds: int,
    spending: str,
    margins: Mapping[str, Margin],
    alpha: float,
    seed: int,
    resamples: int = UPGRADE_RESAMPLES,
) -> tuple[Outcome, Design]:
    """Every look of a recording of the first rounds (each gated primitive a key of `margins`), and its design."""
    paired, recorded, problems = paired_from_reports(new, baseline, margins, seed)
    design = Design.of(problems, rounds, alpha, spending)
    outcome = run_looks(paired, design, margins, recorded=recorded, alpha=alpha, seed=seed, resamples=resamples)
    return outcome, design


def describe(outcome: Outcome, design: Design, margins: Mapping[str, Margin]) -> dict[str, Any]:
    """The outcome as the report and the progress line read it."""
    k = outcome.look - 1
    looks = outcome.looks
    metrics: dict[str, Any] = {}
    for prim, standing in outcome.standing.items():
        decided = next((j + 1 for j, h in enumerate(outcome.history) if h[prim] != CONTINUE), None)
        metrics[prim] = {
            "standing": standing,
            "decided_at": decided,
            "difference": _finite(looks.difference[prim][k]),
            "se": _finite(looks.se[prim][k]),
            "latent_problems": int(looks.problems[prim][k]),
            "margin": margins[prim].drop,
            "fail_margin": margins[prim].fail_drop,
            "t_noninferior": _finite(looks.statistic["noninferior"][prim][k]),
            "t_worse": _finite(looks.statistic["worse"][prim][k]),
        }
    return {
        "look": outcome.look,
        "rounds": design.rounds,
        "stopped": outcome.stopped,
        "latent_problems": design.ends[k],
        "of_latent_problems": design.problems,
        "spending": design.spending,
        "alpha": design.alpha,
        "metrics": metrics,
    }


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None
