"""The false discovery rate and the power of the "regressed" marks on the upgrade's Δ cells (analysis/cells.py,
docs/statistics.md §6.5): Benjamini–Hochberg at q = 0.10 over every family and representation cell of the three
primitives, from the per-cell t-tests of "worse than the fail margin δ₀".

    python scripts/cell_fdr_simulation.py [--datasets N] [--seed S] [--out FILE]

Each dataset draws the bundled Jev set's latent problems with replacement (scripts/why_simulation_data.py); its Jev
answers give each rendering's distance to p* (kept between 0.1 and 0.15 short of the farthest p* allows). Each
version adds its own noise to that distance, u_j ~ N(0, 0.02²) per latent problem and e_i ~ N(0, 0.02²) per
rendering, and the candidate also θ_i, so each paired difference is D_i = −(θ_i + noise), the two versions
exchangeable where θ = 0 (never clipped: θ and the noise stay within 3.5 SDs of the margins kept). A cell is truly
regressed when its expected Δ is below −δ₀ (0.01, the shipped fail margin). Scenarios:

- no change (θ = 0), and a uniform degradation at the margin (θ = δ₀ on every rendering, every cell's null at its
  boundary: the hardest case for the false discovery rate): every mark is false;
- a degradation confined to one family (θ = 0.05 or 0.10 on the renderings of a family drawn at random per
  dataset, 0 elsewhere), at the bundled set's family sizes (5 to 20 latent problems): that family's cells are truly
  regressed, and so is a representation cell holding enough of its renderings (θ × their share > δ₀).

Printed per scenario: the false discovery rate E[V / max(R, 1)] and the share of datasets with any false mark, the
mean number of marks, and the power (the share of the truly regressed family's cells marked), with its Monte Carlo
standard error. The same arguments print the same numbers.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # a script: the package from the checkout

from pytest_sys1cal.analysis.upgrade import compare_reports  # noqa: E402
from scripts.why_simulation_data import Dataset, draw, jev_items, main_of  # noqa: E402

NOISE = 0.02  # SD of the problem-level and of the rendering-level noise of each version's distance to p*
# Distances kept this far from 0 and from the cap (0.1: 3.5 SDs of the noise; at the cap, the uniform θ too), so
# that nothing but a confined degradation's own renderings is ever clipped: a clipped D would make the "uniform"
# degradation uneven (a first run with 0.1 at the cap read a false discovery rate of 0.126 there).
LOW, HIGH = 0.1, 0.15
FAIL_MARGIN = 0.01  # δ₀, the shipped fail_drop_mean_ovl: a cell is truly regressed when its expected Δ < −δ₀
SCENARIOS = {
    "no change": (None, 0.0),
    "uniform 0.01, at the margin": (None, FAIL_MARGIN),
    "one family 0.05": ("one", 0.05),
    "one family 0.10": ("one", 0.10),
}


def pair(data: Dataset, shift: np.ndarray, rng: np.random.Generator) -> tuple[dict, dict]:
    """(baseline answers, candidate answers): each rendering's distance to p* is Jev's, kept within
    [LOW, cap − HIGH] (cap = max(p*, 1 − p*), the farthest p* allows) so that no draw below is clipped; each version
    adds its own noise to it (a problem part and a rendering part, independent between the versions: exchangeable
    when nothing changed), and the candidate also `shift`. Both sit on Jev's side of p* where that fits."""
    p_star = data.p_star
    problems, codes = np.unique(np.array(data.latent), return_inverse=True)
    cap = np.maximum(p_star, 1 - p_star)
    base, new = {}, {}
    for prim, answer in data.answers.items():
        distance = np.clip(np.abs(answer - p_star), LOW, cap - HIGH)
        side = np.where(answer >= p_star, 1.0, -1.0)
        for out, extra in ((base, 0.0), (new, shift)):
            grown = distance + extra + rng.normal(0, NOISE, problems.size)[codes] + rng.normal(0, NOISE, answer.size)
            grown = np.clip(grown, 0.0, cap)  # only a confined degradation's own renderings can reach the cap
            fits = (p_star + side * grown >= 0) & (p_star + side * grown <= 1)
            out[prim] = p_star + np.where(fits, side, -side) * grown
    return base, new


def truly_regressed(data: Dataset, family: str | None, theta: float) -> set[tuple[str, str]]:
    """(grouping, cell) whose expected Δ is below −δ₀: under a degradation confined to `family`, its cells, and
    the representations that hold enough of its renderings (θ times their share of them beyond δ₀); under a
    uniform one, none when θ ≤ δ₀ (every cell at or inside the margin)."""
    if family is None:
        return set()
    hit = np.array([f["family"] == family for f in data.fields])
    out = {("by_family", family)} if theta > FAIL_MARGIN else set()
    representation = np.array([f["representation"] for f in data.fields])
    for name in np.unique(representation):
        if theta * hit[representation == name].mean() > FAIL_MARGIN:
            out.add(("by_representation", str(name)))
    return out


def one_run(data: Dataset, family: str | None, theta: float, rng: np.random.Generator) -> tuple[int, int, int, int]:
    """(marks, false marks, the degraded family's cells marked, its cells tested) of one comparison."""
    shift = np.array([theta if family is None or f["family"] == family else 0.0 for f in data.fields])
    base, new = pair(data, shift, rng)
    comparison = compare_reports(data.report(new, "new"), data.report(base, "base"), seed=int(rng.integers(1 << 31)))
    truth = truly_regressed(data, family, theta)
    marks = false = found = 0
    for metric in comparison["metrics"].values():
        for grouping in ("by_family", "by_representation"):
            for name, cell in (metric.get(grouping) or {}).items():
                if cell.get("regressed"):
                    marks += 1
                    false += (grouping, name) not in truth
        found += bool(family) and bool((metric["by_family"].get(family) or {}).get("regressed"))
    return marks, false, found, 3 if family else 0


def experiment(datasets: int, seed: int) -> dict:
    items = jev_items()
    rng = np.random.default_rng(seed)
    families = sorted({item["family"] for item in items})
    out: dict[str, dict] = {}
    for name, (where, theta) in SCENARIOS.items():
        proportions, any_false, marks, power = [], [], [], []
        for _ in range(datasets):
            data = draw(items, rng)
            family = str(rng.choice(families)) if where == "one" else None
            made, false, found, tested = one_run(data, family, theta, rng)
            proportions.append(false / max(made, 1))
            any_false.append(false > 0)
            marks.append(made)
            if tested:
                power.append(found / tested)
        out[name] = {
            "fdr": float(np.mean(proportions)),
            "fdr_se": float(np.std(proportions, ddof=1) / np.sqrt(datasets)),
            "any_false": float(np.mean(any_false)),
            "marks": float(np.mean(marks)),
            "power": float(np.mean(power)) if power else None,
            "power_se": float(np.std(power, ddof=1) / np.sqrt(len(power))) if power else None,
        }
    return {"datasets": datasets, "seed": seed, "q": 0.10, "scenarios": out}


def table(result: dict) -> str:
    lines = [
        "| candidate | false discovery rate (MC s.e.) | datasets with a false mark | marks per comparison | power (MC s.e.) |",
        "|---|---|---|---|---|",
    ]
    for name, row in result["scenarios"].items():
        power = "—" if row["power"] is None else f"{row['power']:.3f} ({row['power_se']:.3f})"
        lines.append(
            f"| {name} | {row['fdr']:.3f} ({row['fdr_se']:.3f}) | {row['any_false']:.3f} | {row['marks']:.2f} | {power} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main_of(__doc__, experiment, table, 300, "q = 0.10, "))
