"""Why a primitive moved in an upgrade, and whether a recalibration would give its quality back (docs/statistics.md
§8.5): the paired changes in miscalibration and discrimination, the recalibrated Δ, and the diagnosis.

On the paired renderings of one primitive, with the upgrade comparison's own latent-problem resamples:

- ΔMCB and ΔDSC (candidate − baseline), each side's decomposition computed under the same resample
  (analysis/decomposition.py), with percentile intervals;
- the recalibrated Δ: each version's answers through isotonic maps fitted on held-out latent problems (the
  run's seeded splits, analysis/held_out_maps.py), OVL averaged over the splits per rendering, and the mean
  of their paired difference with one-sided bootstrap bounds at the comparison's α (both versions at their best
  monotone calibration: what is left is what a recalibration cannot give back); for Choice also through the
  paper's inverse map.

The rule (its error rates: scripts/diagnosis_simulation.py, docs/statistics.md §8.5), for a primitive whose raw
verdict is FAILED or inconclusive: **miscalibration** when the recalibrated Δ's lower bound is above −δ (a
recalibration is shown to give the old quality back, within the margin); **lost discrimination** when its upper
bound is below −δ₀ (even recalibrated, the candidate is shown worse); otherwise **not determined**. The raw
verdict still decides: the diagnosis never changes it.
"""

from __future__ import annotations

import numpy as np

from ..document_upgrade import UpgradeMetric
from ..document_why import PartChange, RecalibratedChange, Why
from ..vocabulary import LABELS, Verdict
from .decomposition import resampled
from .held_out_maps import held_out_answers, held_out_inverse
from .latent import LatentData
from .paired import Paired
from .primitives import ovl
from .recalibration import split_halves, split_seeds
from .stats import Clusters, percentile_interval

MISCALIBRATION, LOST, UNDETERMINED = "miscalibration", "lost discrimination", "not determined"
MOVED = (Verdict.FAILED, Verdict.INCONCLUSIVE)  # the verdicts a diagnosis line is written for
LEVEL = 0.95  # of the ΔMCB and ΔDSC intervals
# ΔMCB and ΔDSC take the first this many of the comparison's resamples (a refit of both versions' curves per
# resample; 500 is the analysis's own figure for its intervals): the recalibrated Δ, a mean, takes them all.
PART_RESAMPLES = 500


def diagnose(
    paired: Paired,
    prim: str,
    clusters: Clusters,
    counts: np.ndarray,
    metric: UpgradeMetric,
    *,
    alpha: float,
    seed: int,
    splits: int,
) -> Why:
    """The ``why`` block of one compared primitive (`metric`: its row of the comparison, verdict included)."""
    new, base = paired.new[prim], paired.base[prim]
    both = ~np.isnan(new) & ~np.isnan(base)
    p_star, codes = paired.p_star[both], clusters.codes[both]
    mcb, dsc = _parts(counts[:PART_RESAMPLES], codes, p_star, new[both], base[both])
    firsts = [first[both] for first in split_halves(paired.latent_ids, paired.p_star, split_seeds(seed, splits))]
    recalibrated = _recalibrated(
        [held_out_answers(side, p_star, firsts) for side in (base[both], new[both])], p_star, codes, counts, alpha
    )
    if prim == "choice":
        recalibrated["inverse"] = _inverse(paired, both, firsts, codes, counts, alpha)
    out: Why = {"mcb": mcb, "dsc": dsc, "recalibrated": recalibrated, "cause": None, "line": None}
    if metric["verdict"] in MOVED:
        out["cause"], out["line"] = verdict_line(prim, metric, out)
    return out


def _parts(
    counts: np.ndarray, codes: np.ndarray, p_star: np.ndarray, new: np.ndarray, base: np.ndarray
) -> tuple[PartChange, PartChange]:
    """MCB and DSC of both versions and their differences, for the run (row 0) and under every resample (`counts`:
    latent-problem multiplicities, `codes`: each rendering's problem)."""
    new_values = resampled(new, p_star, counts, codes)[0]
    base_values = resampled(base, p_star, counts, codes)[0]
    out: list[PartChange] = []
    for key in ("mcb", "dsc"):
        change = new_values[key] - base_values[key]
        out.append(
            {
                "baseline": float(base_values[key][0]),
                "new": float(new_values[key][0]),
                "difference": float(change[0]),
                "ci": percentile_interval(change[1:], LEVEL),
                "level": LEVEL,
                "resamples": int(change.size - 1),
            }
        )
    return out[0], out[1]


def _recalibrated(
    sides: list[np.ndarray], p_star: np.ndarray, codes: np.ndarray, counts: np.ndarray, alpha: float
) -> RecalibratedChange:
    """Mean OVL of both versions' held-out recalibrated answers (the splits every rendering was scored in, both
    sides alike), and their paired difference with one-sided bootstrap bounds at `alpha`."""
    scored = ~np.isnan(sides[0]).any(axis=1) & ~np.isnan(sides[1]).any(axis=1)
    if not scored.any():
        return {"reason": "not enough data: every split left a half without renderings to fit on"}
    base, new = (ovl(side[scored], p_star[None, :]).mean(axis=0) for side in sides)
    d = new - base
    sums = np.bincount(codes, weights=d, minlength=counts.shape[1])
    sizes = np.bincount(codes, minlength=counts.shape[1]).astype(float)
    boot = (counts @ sums) / (counts @ sizes)
    return {
        "baseline": float(base.mean()),
        "new": float(new.mean()),
        "difference": float(d.mean()),
        "lower": float(np.quantile(boot, alpha)),
        "upper": float(np.quantile(boot, 1 - alpha)),
        "level": 1 - alpha,
        "splits": int(scored.sum()),
    }


def _inverse(
    paired: Paired, both: np.ndarray, firsts: list[np.ndarray], codes: np.ndarray, counts: np.ndarray, alpha: float
) -> RecalibratedChange:
    """Choice through the paper's inverse map (refitted on held-out halves), both versions, where Score was asked too."""
    with_score = ~np.isnan(paired.new["score"][both]) & ~np.isnan(paired.base["score"][both])
    if not with_score.any():
        return {"reason": "Score was not asked in both versions, so the inverse map through μ_S cannot be fitted"}
    p_star = paired.p_star[both][with_score]
    sides = []
    for side in (paired.base, paired.new):
        data = LatentData.of(
            side["score"][both][with_score], side["choice"][both][with_score], p_star, codes[with_score].astype(str)
        )
        if data.fit is None:
            return {"reason": data.reason or "the latent model could not be fitted"}
        sides.append(held_out_inverse(data, [first[with_score] for first in firsts]))
    return _recalibrated(sides, p_star, codes[with_score], counts, alpha)


def verdict_line(prim: str, metric: UpgradeMetric, why: Why) -> tuple[str | None, str | None]:
    """(cause, the line a reviewer reads) for a primitive whose raw verdict is FAILED or inconclusive."""
    recal = why["recalibrated"]
    label = LABELS.get(prim, prim)
    drop, margin, fail_margin = metric["difference"], metric["margin"], metric["fail_margin"]
    if "difference" not in recal or drop is None:
        return None, f"{label}: not diagnosed ({recal.get('reason', 'no recalibrated Δ')})"
    if recal["lower"] > -margin:
        cause = MISCALIBRATION
    elif recal["upper"] < -fail_margin:
        cause = LOST
    else:
        cause = UNDETERMINED
    recovered = recal["difference"] - drop
    if drop >= 0:
        said = f"recalibration fitted on held-out problems moves Δ {signed(drop)} by {signed(recovered)}"
    else:
        part = f"{recovered:.3f} of" if round(recovered, 3) > 0 else "none of"
        said = f"recalibration fitted on held-out problems recovers {part} the {-drop:.3f} drop"
    both = f"both recalibrated, Δ {signed(recal['difference'])}"
    discrimination = _discrimination(why["dsc"])
    text = {
        MISCALIBRATION: f"{said} ({both}, within the margin {margin:g}); {discrimination}",
        LOST: f"{said} ({both}, still shown worse than −{fail_margin:g}); {discrimination}: retraining, not "
        "recalibration",
        UNDETERMINED: f"{said} ({both}, bounds [{signed(recal['lower'])}, {signed(recal['upper'])}]: neither within "
        f"the margin {margin:g} nor shown worse than −{fail_margin:g}); {discrimination}",
    }[cause]
    return cause, f"{label}: {cause} — {text}"


def signed(value: float) -> str:
    """Three decimals, the sign always, a true minus sign (as the verdict line writes a Δ)."""
    return f"{round(value, 3) + 0.0:+.3f}".replace("-", "−")  # + 0.0: −0.0004 shows as +0.000, not −0.000


def _discrimination(dsc: PartChange) -> str:
    """ "discrimination unchanged (ΔDSC +0.000 [−0.002, +0.003])" or "… down/up …" by the interval."""
    low, high = dsc["ci"]
    state = "unchanged" if low <= 0 <= high else "down" if high < 0 else "up"
    return f"discrimination {state} (ΔDSC {signed(dsc['difference'])} [{signed(low)}, {signed(high)}])"
