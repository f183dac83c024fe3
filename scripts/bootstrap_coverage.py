"""Coverage of the latent bootstrap's intervals, and how far the one-step warm start moves them.

    python scripts/bootstrap_coverage.py [--datasets 400] [--problems 600] [--per 4] [--resamples 500]
                                         [--truth 0.6,1.5,2.0] [--seed 0] [--record FILE]
    python scripts/bootstrap_coverage.py --from-record FILE
    python scripts/bootstrap_coverage.py --only K,K,... [the run's arguments]

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

Seeded throughout: the same arguments print the same numbers. About 1 s per dataset at the defaults.

Each dataset's outcome is one line of numbers (its index, then per quantity the old and new interval and the
two endpoints' Monte Carlo errors, every float exactly as computed), from which everything printed follows.
`--record FILE` writes those lines (the arguments first) when the run ends; `--from-record FILE` prints the summary
of a recorded run again from its lines alone, by the same code, without simulating; `--only K,K,...` re-runs
just those datasets of the run its other arguments name (the ones before them simulated, for the random
stream, but not bootstrapped) and prints their lines. So the documented run's record,
scripts/bootstrap_coverage_400.tsv, can be checked in seconds: its summary is the table in the docs, and any
of its lines is what the simulation gives (tests/analysis/test_bootstrap_coverage.py re-runs a sample).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_sys1cal.analysis.latent import LatentData, LatentFit, peak_mass  # noqa: E402
from pytest_sys1cal.analysis.stats import percentile_interval  # noqa: E402
from pytest_sys1cal.analysis.uncertainty import bootstrap_fits  # noqa: E402

LEVEL = 0.95
# Resamplings of the B bootstrap values that estimate a percentile's own Monte Carlo error.
MC_RESAMPLINGS = 200
QUANTITIES = {"u_max": peak_mass, "lambda": lambda params: params[:, 0]}
METHODS = {"old": "refits started at the point fit", "new": "refits started one step from it"}
# One dataset's line: its index, then per quantity: old low, old high, new low, new high, and the MC errors of
# the old interval's two endpoints.
PER_QUANTITY = 6


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


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=400, help="simulated datasets (default 400)")
    parser.add_argument("--problems", type=int, default=600, help="latent problems per dataset (default 600)")
    parser.add_argument("--per", type=int, default=4, help="renderings per latent problem (default 4)")
    parser.add_argument("--resamples", type=int, default=500, help="bootstrap resamples (the run's default)")
    parser.add_argument("--truth", default="0.6,1.5,2.0", help="true λ,α,β (default 0.6,1.5,2.0)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record", type=Path, help="write each dataset's line to this file")
    parser.add_argument("--from-record", type=Path, help="print the summary of the run recorded in this file")
    parser.add_argument("--only", help="re-run only these datasets (0-based, comma-separated); print their lines")
    return parser.parse_args(argv)


def arguments(options: argparse.Namespace) -> str:
    """The arguments that decide a run's numbers, as a command line (a record's first line)."""
    return (
        f"--datasets {options.datasets} --problems {options.problems} --per {options.per} "
        f"--resamples {options.resamples} --truth {options.truth} --seed {options.seed}"
    )


def outcome(k: int, data: LatentData, options: argparse.Namespace, rng: np.random.Generator) -> list[float]:
    """Dataset k's line: both bootstraps on the same seeded resamples, each quantity's two intervals and the
    old endpoints' Monte Carlo errors (drawn from `rng`, in the order `skip` draws them)."""
    fit = data.fit
    assert fit is not None
    old = bootstrap_fits(data, fit, options.seed + k, options.resamples, one_step=False)
    new = bootstrap_fits(data, fit, options.seed + k, options.resamples, one_step=True)
    line: list[float] = [k]
    for of in QUANTITIES.values():
        line += percentile_interval(of(old), LEVEL) + percentile_interval(of(new), LEVEL)
        line += percentile_mc_error(of(old), rng).tolist()
    return line


def skip(options: argparse.Namespace, rng: np.random.Generator) -> None:
    """Draw from `rng` exactly what `outcome` draws, without bootstrapping (for --only)."""
    for _ in QUANTITIES:
        rng.integers(0, options.resamples, size=(MC_RESAMPLINGS, options.resamples))


def outcomes(options: argparse.Namespace, only: set[int] | None) -> Iterator[list[float]]:
    """Each fitted dataset's line in order (with `only`, just those datasets'), simulated from one seeded
    stream: dataset k's numbers depend on the k before it, so the ones skipped are still simulated."""
    truth = LatentFit(*(float(v) for v in options.truth.split(",")))
    rng = np.random.default_rng(options.seed)
    last = options.datasets if only is None else min(options.datasets, max(only, default=-1) + 1)
    for k in range(last):
        data = simulate(truth, options.problems, options.per, rng)
        if data.fit is None:
            continue
        if only is None or k in only:
            yield outcome(k, data, options, rng)
        else:
            skip(options, rng)


def summarise(lines: list[list[float]], options: argparse.Namespace, seconds: float, out: TextIO) -> None:
    """What a run prints, from its datasets' lines alone (a fresh run and --from-record share it)."""
    truth = LatentFit(*(float(v) for v in options.truth.split(",")))
    truths = {"u_max": truth.u_max, "lambda": truth.lam}
    fitted = len(lines)
    covered = {(name, method): 0 for name in QUANTITIES for method in METHODS}
    shifts: list[float] = []  # |new − old| / MC error, every endpoint
    moved = 0
    for line in lines:
        for q, name in enumerate(QUANTITIES):
            old_low, old_high, new_low, new_high, *error = line[1 + q * PER_QUANTITY : 1 + (q + 1) * PER_QUANTITY]
            intervals = {"old": (old_low, old_high), "new": (new_low, new_high)}
            for method, (low, high) in intervals.items():
                covered[name, method] += int(low <= truths[name] <= high)
            difference = np.abs(np.subtract(intervals["new"], intervals["old"]))
            moved += int(np.count_nonzero(difference))
            shifts += (difference / np.where(np.asarray(error) > 0, error, np.inf)).tolist()
    print(
        f"{fitted} simulated datasets (of {options.datasets}; seed {options.seed}): {options.problems} latent "
        f"problems × {options.per} renderings, truth λ, α, β = {truth.lam:g}, {truth.alpha:g}, {truth.beta:g} "
        f"(u_max {truth.u_max:.4f}), {options.resamples} resamples each; {seconds:.0f} s",
        file=out,
    )
    print(f"{'quantity':<8} {'method':<34} {'nominal':>7} {'achieved':>8} {'MC s.e.':>7}", file=out)
    for name in QUANTITIES:
        for method, label in METHODS.items():
            p = covered[name, method] / max(fitted, 1)
            se = np.sqrt(p * (1 - p) / max(fitted, 1))
            print(f"{name:<8} {label:<34} {LEVEL:>7.3f} {p:>8.3f} {se:>7.3f}", file=out)
    ratios = np.asarray(shifts)
    print(
        f"interval endpoints, new − old: {moved} of {ratios.size} moved at all; |new − old| / the endpoint's "
        f"Monte Carlo error: median {np.median(ratios):.2e}, largest {ratios.max():.2e}",
        file=out,
    )


def text(line: list[float]) -> str:
    """A dataset's line as written: the index, then every float by repr (read back bit for bit)."""
    return "\t".join([str(int(line[0])), *(repr(float(v)) for v in line[1:])])


def read_record(path: Path) -> tuple[argparse.Namespace, float, list[list[float]]]:
    """A record's run arguments, its seconds and its datasets' lines."""
    header, *rows = path.read_text(encoding="utf-8").splitlines()
    command, _, seconds = header.removeprefix("# ").rpartition("; ")
    lines = [[float(v) for v in row.split("\t")] for row in rows if row and not row.startswith("#")]
    return parse(shlex.split(command)), float(seconds.removesuffix(" s")), lines


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    if options.from_record is not None:
        recorded, seconds, lines = read_record(options.from_record)
        summarise(lines, recorded, seconds, sys.stdout)
        return 0
    if options.only is not None:
        for line in outcomes(options, {int(k) for k in options.only.split(",")}):
            print(text(line))
        return 0
    started = time.perf_counter()
    lines = []
    for line in outcomes(options, None):
        lines.append(line)
    seconds = time.perf_counter() - started
    if options.record is not None:
        body = "".join(text(line) + "\n" for line in lines)
        options.record.write_text(f"# {arguments(options)}; {seconds:.0f} s\n{body}", encoding="utf-8")
    summarise(lines, options, seconds, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
