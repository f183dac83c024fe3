"""Error rates and cost of the sequential upgrade comparison (issue 40), beside the fixed design, by simulation.

    python scripts/sequential_simulation.py [--recordings 2000] [--rounds 10] [--spending obrien-fleming]
                                            [--seed 0] [--sigma-w 0.10] [--repeats 10] [--advice 400]
                                            [--new tests/golden/gemma-report.json]
                                            [--baseline tests/golden/semif-report.json]

What a simulated recording looks like is read off two reports of the same 365 renderings (default: the
bundled SemIf sets of Gemma-3-270M and SmolLM2-135M, two models behind one engine, the bundled pair nearest
to an upgrade: their mean OVLs differ by at most 0.05 in every primitive; tests/golden/ holds them as
`pytest --sys1cal --model semif --sys1cal-model-version=… --sys1cal-report=…` writes them). Per primitive
the paired differences D_i = OVL_new,i − OVL_base,i give σ_Δ (their SD) and ρ_Δ (their intra-problem
correlation, analysis/power.py's ICC). Those sets hold one answer per rendering, so the repeat noise is
an assumption, σ_w = `--sigma-w` at r = `--repeats` (docs/power.md's planning value). A simulated recording
keeps the reports' 92 latent problems and their renderings, and draws per primitive

    D_i = Δ + u_j + e_i + ε_i,   u_j ~ N(0, ρ_Δ·σ_Δ²), e_i ~ N(0, (1 − ρ_Δ)·σ_Δ²), ε_i ~ N(0, 2σ_w²/r),

independently across primitives, with the same true Δ for all three primitives in a cell: Δ = +δ (an
improvement), 0, −δ₀, −(δ₀ + δ)/2, −δ and −2δ, δ and δ₀ the default margins (0.02, 0.01). Each recording
is judged by the fixed design (every problem, analysis/upgrade.py's bootstrap verdict) and by the sequential
design (analysis/sequential.py: rounds of latent problems in the recording's own seeded order, a look after
every round), both with Holm over the three primitives at α = 0.05 and 2,000 bootstrap resamples.

Printed per cell, each with its Monte Carlo standard error: the family-wise false FAILED rate (any primitive
FAILED where Δ ≥ −δ₀) and false pass rate (any passed where Δ ≤ −δ), P(passed), P(FAILED) and
P(inconclusive) per primitive (over all three), and the expected requests as a share of the fixed design's.
Then `--advice` inconclusive verdicts of the fixed design are followed up: the advice analysis/upgrade.py
gives (renderings, and latent problems at the set's renderings per problem) is tried by recording that many
problems afresh at the same true Δ, and the share decided in the direction the advice heads for is printed
beside the 80 % it promises. Seeded throughout: the same arguments print the same numbers.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_sys1cal.analysis.decisive import decisive_size  # noqa: E402
from pytest_sys1cal.analysis.paired import pair_reports  # noqa: E402
from pytest_sys1cal.analysis.power_estimates import intraclass_correlation  # noqa: E402
from pytest_sys1cal.analysis.primitives import ovl  # noqa: E402
from pytest_sys1cal.analysis.sequential import Paired, run_looks  # noqa: E402
from pytest_sys1cal.analysis.sequential_design import Design, problem_order  # noqa: E402
from pytest_sys1cal.analysis.stats import Clusters  # noqa: E402
from pytest_sys1cal.analysis.upgrade import POWER, Margin  # noqa: E402
from pytest_sys1cal.defaults import ALPHA, UPGRADE_DROP, UPGRADE_FAIL_DROP, UPGRADE_RESAMPLES  # noqa: E402
from pytest_sys1cal.vocabulary import PRIMITIVES, Verdict  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
NORMAL = NormalDist()
DROP, FAIL_DROP = UPGRADE_DROP, UPGRADE_FAIL_DROP
CELLS = {
    "+δ (better)": DROP,
    "0": 0.0,
    "−δ₀": -FAIL_DROP,
    "−(δ₀+δ)/2": -(FAIL_DROP + DROP) / 2,
    "−δ": -DROP,
    "−2δ": -2 * DROP,
}


@dataclass(frozen=True)
class Noise:
    sigma_delta: float
    rho: float
    repeat_var: float  # 2σ_w²/r


@dataclass(frozen=True)
class Structure:
    ids: np.ndarray  # (n,) latent problem of each rendering
    clusters: Clusters
    noise: dict[str, Noise]


def measure(new_path: Path, base_path: Path, sigma_w: float, repeats: int, primitives: list[str]) -> Structure:
    new, base = (json.loads(p.read_text(encoding="utf-8")) for p in (new_path, base_path))
    paired = pair_reports(new, base)
    noise = {}
    for prim in primitives:
        d = ovl(paired.new[prim], paired.p_star) - ovl(paired.base[prim], paired.p_star)
        noise[prim] = Noise(
            sigma_delta=float(np.nanstd(d, ddof=1)),
            rho=intraclass_correlation(d, paired.latent_ids),
            repeat_var=2 * sigma_w**2 / repeats,
        )
    return Structure(ids=paired.latent_ids, clusters=Clusters.of(paired.latent_ids), noise=noise)


def draw(structure: Structure, delta: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    codes, j = structure.clusters.codes, structure.clusters.count
    out = {}
    for prim, noise in structure.noise.items():
        shared = rng.normal(0, math.sqrt(noise.rho) * noise.sigma_delta, j)[codes]
        own = rng.normal(0, math.sqrt(1 - noise.rho) * noise.sigma_delta, codes.size)
        repeat = rng.normal(0, math.sqrt(noise.repeat_var), codes.size)
        out[prim] = delta + shared + own + repeat
    return out


def judge(
    structure: Structure, d: dict[str, np.ndarray], design: Design, seed: int, counts: np.ndarray
) -> tuple[dict[str, str], int]:
    """Verdicts and renderings recorded under `design` (one round: the fixed design); `counts` are the
    bootstrap's resamples seeded `seed` (the same for every cell and design of a recording, so drawn once)."""
    clusters = structure.clusters
    order = problem_order(structure.ids, seed)
    position = {latent: k for k, latent in enumerate(order)}
    ids = sorted(position)  # cluster numbers are sorted-id numbers
    ranked = np.argsort([position[latent] for latent in ids], kind="stable")
    paired = Paired(d=d, clusters=clusters, order=ranked)
    margins = dict.fromkeys(d, Margin(DROP, FAIL_DROP))
    outcome = run_looks(
        paired, design, margins, recorded=design.problems, alpha=ALPHA, seed=seed, resamples=UPGRADE_RESAMPLES,
        counts=counts,
    )  # fmt: skip
    sizes = clusters.sizes[ranked]
    return outcome.standing, int(sizes[: design.ends[outcome.look - 1]].sum())


def with_sizes(structure: Structure, sizes: np.ndarray, repeat_scale: float = 1.0) -> Structure:
    """The same noise on latent problems of the given sizes (repeat noise times `repeat_scale`)."""
    ids = np.repeat([f"q{j:06d}" for j in range(sizes.size)], sizes)
    noise = {prim: Noise(n.sigma_delta, n.rho, n.repeat_var * repeat_scale) for prim, n in structure.noise.items()}
    return Structure(ids=ids, clusters=Clusters.of(ids), noise=noise)


def fixed_test(structure: Structure, d: np.ndarray, seed: int) -> tuple[str, dict[str, float]]:
    """One primitive's fixed-design verdict at level α, as analysis/upgrade.py reaches it (its bootstrap
    p-values), and what its advice reads: Δ̂, n, the bootstrap SE, SD of D and design effect."""
    clusters = structure.clusters
    draws, renderings = resamples(seed, tuple(clusters.sizes.tolist()))
    boot = clusters.sums(d)[draws].sum(axis=1) / renderings
    p_noninferior = (1 + np.sum(boot <= -DROP)) / (boot.size + 1)
    p_worse = (1 + np.sum(boot >= -FAIL_DROP)) / (boot.size + 1)
    verdict = Verdict.FAILED if p_worse <= ALPHA else Verdict.PASSED if p_noninferior <= ALPHA else Verdict.INCONCLUSIVE
    se, sd = float(boot.std(ddof=1)), float(d.std(ddof=1))
    measured = {
        "difference": float(d.mean()),
        "n": d.size,
        "se": se,
        "sd_d": sd,
        "design_effect": d.size * se**2 / sd**2,
    }
    return verdict, measured


@functools.lru_cache(maxsize=4)
def resamples(seed: int, sizes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The bootstrap's latent-problem draws seeded `seed` over problems of these sizes (renderings each), and the
    renderings each resample holds. They are the draws Clusters.resample_counts makes (its first and only use
    of the generator), summed by index instead of through the count matrix: the same resamples, half the time
    (the sums differ in rounding only). Kept for the few calls that ask again: the advice check follows its
    primitives and cells in step, so every one of them screens recording k on the same draws."""
    count = len(sizes)
    draws = np.random.default_rng(seed).integers(0, count, size=(UPGRADE_RESAMPLES, count))
    draws.flags.writeable = False
    return draws, np.asarray(sizes, dtype=float)[draws].sum(axis=1)


def heading_advice(measured: dict, margin: Margin, level: float) -> dict:
    """The size advice analysis/upgrade.py gave before issue 40 (the rule decisive_size replaced there): 80 %
    power at the observed Δ̂ towards the margin it is farther from, n = (z_{1−α} + z_{0.8})²·n·se²/gap², kept
    here so that the table in docs/statistics.md §7.5 that compares the two can be printed again."""
    diff, n, se = measured["difference"], measured["n"], measured["se"]
    gaps = {Verdict.PASSED: diff + margin.drop, Verdict.FAILED: -margin.fail_drop - diff}
    towards, gap = max(gaps.items(), key=lambda kv: kv[1])
    z = NORMAL.inv_cdf(1 - level) + NORMAL.inv_cdf(POWER)
    renderings = math.ceil(z**2 * n * se**2 / gap**2) if gap > 0 and se > 0 else n
    return {"towards": towards, "renderings": renderings}


def advice_check(
    structure: Structure, prim: str, delta: float, wanted: int, seed: int, sigma_w: float, repeats: int
) -> Iterator[None]:
    """Follow `wanted` inconclusive fixed-design verdicts of one primitive (gated alone, level α) at true Δ:
    the size analysis/upgrade.py's advice asks for (sized for Δ̂ and the margin it heads for) and the size
    sequential.decisive_size asks for (sized for the worst true Δ), each tried by a fresh recording of that
    many latent problems (or, for the repeats, of the same problems with that many repeats) at the same
    true Δ. Returns (as its StopIteration's value) per rule the share decided in either direction, and for the
    advice the share decided in the direction it heads for; yields after each recording screened, so that
    print_advice can run every check in step."""
    one = Structure(structure.ids, structure.clusters, {prim: structure.noise[prim]})
    sizes = structure.clusters.sizes
    within_sum = 2 * sigma_w**2
    margin = Margin(DROP, FAIL_DROP)
    found = tried = 0
    hits: dict[str, list[bool]] = {name: [] for name in ("advice", "advice_heading", "decisive", "decisive_repeats")}
    asked: dict[str, list[int]] = {"advice": [], "decisive": []}
    while found < wanted and tried < 500 * wanted:
        rng = np.random.default_rng([seed, 7, tried, int(round(-delta * 1e6))])
        tried += 1
        verdict, measured = fixed_test(one, draw(one, delta, rng)[prim], seed=tried)
        yield
        if verdict != Verdict.INCONCLUSIVE:
            continue
        found += 1
        measured["sigma_delta"] = math.sqrt(max(measured["sd_d"] ** 2 - within_sum / repeats, 0.0))
        advice = heading_advice(measured, margin, ALPHA)
        decisive = decisive_size(
            n=measured["n"], se=measured["se"], latent_problems=sizes.size, margin=margin, level=ALPHA,
            repeats=repeats, within_sum=within_sum,
        )  # fmt: skip
        for name, renderings in (("advice", advice["renderings"]), ("decisive", decisive["renderings"])):
            problems = max(2, math.ceil(renderings * sizes.size / sizes.sum()))
            asked[name].append(problems)
            bigger = with_sizes(one, rng.choice(sizes, problems))
            again, _ = fixed_test(bigger, draw(bigger, delta, rng)[prim], seed=tried)
            hits[name].append(again != Verdict.INCONCLUSIVE)
            if name == "advice":
                hits["advice_heading"].append(again == advice["towards"])
        if decisive["repeats"] is not None:
            more = with_sizes(one, sizes, repeats / decisive["repeats"])
            again, _ = fixed_test(more, draw(more, delta, rng)[prim], seed=tried)
            hits["decisive_repeats"].append(again != Verdict.INCONCLUSIVE)
    return found, tried, hits, asked


def print_advice(structure: Structure, options: argparse.Namespace) -> None:
    print(
        f"\nInconclusive verdicts followed up ({options.advice} per cell, one primitive gated alone at level α; "
        "share decided by a fresh recording of the size asked for, ± MC s.e.; latent problems asked, median):"
    )
    print("| primitive | true Δ | inconclusive | old advice: decided | its heading right | problems | "
          "worst-case size: decided | problems | by repeats instead |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    checks = {
        (prim, label): advice_check(
            structure, prim, CELLS[label], options.advice, options.seed, options.sigma_w, options.repeats
        )
        for prim in structure.noise
        for label in ("−δ₀", "−(δ₀+δ)/2", "−δ")
    }
    results = {}
    while len(results) < len(checks):  # every check one recording further, in turn
        for key, check in checks.items():
            if key not in results:
                try:
                    next(check)
                except StopIteration as done:
                    results[key] = done.value
    for prim, label in checks:
        found, tried, hits, asked = results[(prim, label)]
        rates = {name: share(np.asarray(v, dtype=float)) if v else (math.nan, math.nan) for name, v in hits.items()}
        cells = [f"{found} of {tried}"]
        cells += ["{:.3f} ± {:.3f}".format(*rates["advice"]), "{:.3f} ± {:.3f}".format(*rates["advice_heading"])]
        cells += [f"{int(np.median(asked['advice']))}", "{:.3f} ± {:.3f}".format(*rates["decisive"])]
        cells += [f"{int(np.median(asked['decisive']))}"]
        repeats = hits["decisive_repeats"]
        cells += [
            "{:.3f} ± {:.3f} ({} of {})".format(*rates["decisive_repeats"], len(repeats), found) if repeats else "—"
        ]
        print(f"| {prim} | {label} | " + " | ".join(cells) + " |", flush=True)


@dataclass
class Tally:
    """Per cell: per recording the verdicts and renderings recorded, for the fixed and the sequential design."""

    verdicts: dict[str, list[list[str]]]
    renderings: dict[str, list[int]]


def simulate(
    structure: Structure, cells: list[str], designs: dict[str, Design], recordings: int, seed: int
) -> dict[str, Tally]:
    """Per cell, `recordings` recordings, each judged by every design. Recording r of every cell is judged on
    the seed seed·1,000,003 + r, so its bootstrap resamples are drawn once for all the cells and designs."""
    tallies = {
        label: Tally(verdicts={name: [] for name in designs}, renderings={name: [] for name in designs})
        for label in cells
    }
    for r in range(recordings):
        judged_on = seed * 1_000_003 + r
        counts = structure.clusters.resample_counts(np.random.default_rng(judged_on), UPGRADE_RESAMPLES)
        for label in cells:
            delta = CELLS[label]
            d = draw(structure, delta, np.random.default_rng([seed, r, int(round(delta * 1e6)) % 2**32]))
            for name, design in designs.items():
                standing, used = judge(structure, d, design, judged_on, counts)
                tallies[label].verdicts[name].append(list(standing.values()))
                tallies[label].renderings[name].append(used)
    return tallies


def share(hits: np.ndarray) -> tuple[float, float]:
    p = float(hits.mean())
    return p, math.sqrt(p * (1 - p) / hits.size)


def row(label: str, delta: float, tally: Tally, name: str, total: int) -> str:
    verdicts = np.asarray(tally.verdicts[name])
    cells = []
    if delta >= -FAIL_DROP:
        cells.append("{:.4f} ± {:.4f}".format(*share((verdicts == Verdict.FAILED).any(axis=1))))
    else:
        cells.append("—")
    if delta <= -DROP:
        cells.append("{:.4f} ± {:.4f}".format(*share((verdicts == Verdict.PASSED).any(axis=1))))
    else:
        cells.append("—")
    for verdict in (Verdict.PASSED, Verdict.FAILED, Verdict.INCONCLUSIVE):
        cells.append("{:.3f} ± {:.3f}".format(*share((verdicts == verdict).ravel())))
    used = np.asarray(tally.renderings[name], dtype=float) / total * 100
    cells.append(f"{used.mean():.1f} ± {used.std(ddof=1) / math.sqrt(used.size):.1f}")
    return f"| {label} | {name} | " + " | ".join(cells) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--recordings", type=int, default=2000, help="simulated recordings per cell (default 2000; 0: only the advice)"
    )
    parser.add_argument("--rounds", type=int, default=10, help="rounds of the sequential design (default 10)")
    parser.add_argument("--spending", default="obrien-fleming", help="obrien-fleming (default) or pocock")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sigma-w", type=float, default=0.10, help="assumed repeat noise σ_w (default 0.10)")
    parser.add_argument("--repeats", type=int, default=10, help="assumed repeats per rendering (default 10)")
    parser.add_argument("--advice", type=int, default=400, help="inconclusive verdicts to follow up (default 400)")
    parser.add_argument("--new", type=Path, default=REPO / "tests" / "golden" / "gemma-report.json")
    parser.add_argument("--baseline", type=Path, default=REPO / "tests" / "golden" / "semif-report.json")
    parser.add_argument("--primitives", default=",".join(PRIMITIVES), help="the gated primitives (default all three)")
    parser.add_argument("--cells", default=",".join(CELLS), help="which cells, comma-separated (default all)")
    options = parser.parse_args()
    started = time.perf_counter()
    structure = measure(options.new, options.baseline, options.sigma_w, options.repeats, options.primitives.split(","))
    j, n = structure.clusters.count, structure.ids.size
    print(
        f"{options.recordings} simulated recordings per cell (seed {options.seed}): {j} latent problems, {n} renderings; "
        f"{options.rounds} rounds, {options.spending} spending; α = {ALPHA}, δ = {DROP}, δ₀ = {FAIL_DROP}"
    )
    for prim, noise in structure.noise.items():
        print(f"  {prim}: σ_Δ = {noise.sigma_delta:.4f}, ρ_Δ = {noise.rho:.3f}, 2σ_w²/r = {noise.repeat_var:.5f}")
    designs = {
        "fixed": Design.of(j, 1, ALPHA, options.spending),
        "sequential": Design.of(j, options.rounds, ALPHA, options.spending),
    }
    if options.recordings:
        print("| true Δ | design | false FAILED | false pass | P(passed) | P(FAILED) | P(inconclusive) | requests % |")
        print("|---|---|---|---|---|---|---|---|")
        cells = options.cells.split(",")
        tallies = simulate(structure, cells, designs, options.recordings, options.seed)
        for label in cells:
            for name in designs:
                print(row(label, CELLS[label], tallies[label], name, n), flush=True)
    if options.advice:
        print_advice(structure, options)
    print(f"{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
