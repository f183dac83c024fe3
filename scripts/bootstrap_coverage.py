"""Coverage of the latent bootstrap's intervals, and how far the one-step warm start moves them.

    python scripts/bootstrap_coverage.py [--datasets 400] [--problems 600] [--per 4] [--resamples 500]
                                         [--truth 0.6,1.5,2.0] [--seed 0]

Simulates datasets from the latent model with the structure of a run (docs/statistics.md §2.2): J latent
problems, each with a centre μ_j ~ U(0.05, 0.95) and `--per` renderings at μ = μ_j + N(0, 0.03²) (clipped
to [0, 1]); Choice = f(μ; λ, α, β) + u_j + e, with a shared shift u_j ~ N(0, 0.03²) per latent problem (the
reason the bootstrap resamples problems, not renderings) and e ~ N(0, 0.02²) per rendering. E[Choice | μ] is
f(μ), so the least-squares target is the true (λ, α, β), and the true u_max is that of the truth.

Each dataset gets the plugin's own point fit and two bootstraps on the same seeded resamples
(uncertainty.bootstrap_fits): refits started at the point fit and run by Levenberg–Marquardt (the method
before issue 27, and still that of runs with fewer than 500 latent problems), and refits started one
Gauss–Newton step from it and run by Newton's method (latent.fit_batch's newton_first: the method of runs
with 500 or more latent problems). Printed:

- nominal and achieved coverage of the 95% percentile intervals for u_max and λ, each with its own Monte
  Carlo standard error sqrt(p(1 − p)/datasets), for both methods;
- the old-vs-new difference of every interval endpoint divided by that endpoint's Monte Carlo error (the
  SD of the percentile over 200 seeded resamplings of the B bootstrap values): the median and the largest
  over all datasets, and how many endpoints moved at all.

Seeded throughout: the same arguments print the same numbers. About 0.2 s per dataset at the defaults.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_sys1cal.analysis.latent import LatentData, LatentFit, peak_mass  # noqa: E402
from pytest_sys1cal.analysis.stats import percentile_interval  # noqa: E402
from pytest_sys1cal.analysis.uncertainty import bootstrap_fits  # noqa: E402

LEVEL = 0.95
# Resamplings of the B bootstrap values that estimate a percentile's own Monte Carlo error.
MC_RESAMPLINGS = 200
QUANTITIES = {"u_max": peak_mass, "lambda": lambda params: params[:, 0]}


def simulate(truth: LatentFit, problems: int, per: int, rng: np.random.Generator) -> LatentData:
    centre = np.repeat(rng.uniform(0.05, 0.95, problems), per)
    mu = np.clip(centre + rng.normal(0, 0.03, centre.size), 0.0, 1.0)
    shift = np.repeat(rng.normal(0, 0.03, problems), per)
    choice = truth.choice(mu) + shift + rng.normal(0, 0.02, mu.size)
    ids = np.repeat([f"p{j:05d}" for j in range(problems)], per)
    return LatentData.of(mu, choice, np.full(mu.size, 0.5), ids)


def percentile_mc_error(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The Monte Carlo SD of the two percentile endpoints of B bootstrap values, by resampling the values."""
    draws = rng.integers(0, values.size, size=(MC_RESAMPLINGS, values.size))
    tail = 100 * (1 - LEVEL) / 2
    return np.std(np.percentile(values[draws], [tail, 100 - tail], axis=1), axis=1, ddof=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=400, help="simulated datasets (default 400)")
    parser.add_argument("--problems", type=int, default=600, help="latent problems per dataset (default 600)")
    parser.add_argument("--per", type=int, default=4, help="renderings per latent problem (default 4)")
    parser.add_argument("--resamples", type=int, default=500, help="bootstrap resamples (the run's default)")
    parser.add_argument("--truth", default="0.6,1.5,2.0", help="true λ,α,β (default 0.6,1.5,2.0)")
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    truth = LatentFit(*(float(v) for v in options.truth.split(",")))
    truths = {"u_max": truth.u_max, "lambda": truth.lam}
    rng = np.random.default_rng(options.seed)
    covered = {(name, method): 0 for name in QUANTITIES for method in ("old", "new")}
    shifts: list[float] = []  # |new − old| / MC error, every endpoint
    moved = 0
    fitted = 0
    started = time.perf_counter()
    for k in range(options.datasets):
        data = simulate(truth, options.problems, options.per, rng)
        if data.fit is None:
            continue
        fitted += 1
        old = bootstrap_fits(data, data.fit, options.seed + k, options.resamples, one_step=False)
        new = bootstrap_fits(data, data.fit, options.seed + k, options.resamples, one_step=True)
        for name, of in QUANTITIES.items():
            intervals = {"old": percentile_interval(of(old), LEVEL), "new": percentile_interval(of(new), LEVEL)}
            for method, (low, high) in intervals.items():
                covered[name, method] += int(low <= truths[name] <= high)
            error = percentile_mc_error(of(old), rng)
            difference = np.abs(np.subtract(intervals["new"], intervals["old"]))
            moved += int(np.count_nonzero(difference))
            shifts += (difference / np.where(error > 0, error, np.inf)).tolist()
    seconds = time.perf_counter() - started
    print(
        f"{fitted} simulated datasets (of {options.datasets}; seed {options.seed}): {options.problems} latent "
        f"problems × {options.per} renderings, truth λ, α, β = {truth.lam:g}, {truth.alpha:g}, {truth.beta:g} "
        f"(u_max {truth.u_max:.4f}), {options.resamples} resamples each; {seconds:.0f} s"
    )
    print(f"{'quantity':<8} {'method':<34} {'nominal':>7} {'achieved':>8} {'MC s.e.':>7}")
    labels = {"old": "refits started at the point fit", "new": "refits started one step from it"}
    for name in QUANTITIES:
        for method in ("old", "new"):
            p = covered[name, method] / max(fitted, 1)
            se = np.sqrt(p * (1 - p) / max(fitted, 1))
            print(f"{name:<8} {labels[method]:<34} {LEVEL:>7.3f} {p:>8.3f} {se:>7.3f}")
    ratios = np.asarray(shifts)
    print(
        f"interval endpoints, new − old: {moved} of {ratios.size} moved at all; |new − old| / the endpoint's "
        f"Monte Carlo error: median {np.median(ratios):.2e}, largest {ratios.max():.2e}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
