"""How often the upgrade's diagnosis (analysis/diagnosis.py, docs/statistics.md §8.5) names the wrong cause.

    python scripts/diagnosis_simulation.py [--datasets N] [--seed S] [--out FILE]

Each dataset draws the bundled Jev set's latent problems with replacement (scripts/why_simulation_data.py); its Jev
answers are the baseline, and each scenario makes a candidate whose cause is known by construction:

- miscalibration (the ranking untouched, so both versions recalibrated are equal: the true recalibrated Δ is 0):
  a logit shrink and shift σ(0.6·logit p + 0.7), uniform mixed in at 0.3 (p → 0.7p + 0.15), overconfidence
  σ(1.8·logit p), a shift σ(logit p + 0.8);
  and a mild shift σ(logit p + 0.3);
- lost discrimination (the ranking gone, in part or whole): every latent problem's answers replaced by another
  problem's (shuffle 100 %), half of the problems' (50 %), noise in the logit σ(logit p + N(0, 2²)) per rendering,
  and two mild losses near the margin: 10 % of the problems shuffled, logit noise N(0, 0.75²);
- and the null: the same answers (no change).

The upgrade comparison is run as the gate runs it (2,000 resamples, the run's 20 held-out splits, margins 0.02 and
0.01, α 0.05), and for each primitive whose raw verdict is FAILED or inconclusive the cause it names is counted.
Printed: per scenario, per cause, the share of moved primitives it was named for; the wrong calls (lost
discrimination for a monotone distortion, miscalibration for lost ranking) are the rule's error rates. A mild loss
of ranking that a recalibration gives back within the margin is named miscalibration by design (the rule's claim,
"a recalibration gives the old quality back within the margin", is then true): the mean recalibrated Δ beside it says
how far it is from the margin.
The same arguments print the same numbers.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # a script: the package from the checkout

from pytest_sys1cal.analysis.diagnosis import LOST, MISCALIBRATION, UNDETERMINED  # noqa: E402
from pytest_sys1cal.analysis.upgrade import compare_reports  # noqa: E402
from scripts.why_simulation_data import Dataset, draw, jev_items, logit, main_of, shuffled_problems, through  # noqa: E402

SCENARIOS = {
    "logit shrink 0.6 + shift 0.7": (
        "miscalibration",
        lambda d, r: {p: through(a, 0.6, 0.7) for p, a in d.answers.items()},
    ),
    "uniform mixed in at 0.3": ("miscalibration", lambda d, r: {p: 0.7 * a + 0.15 for p, a in d.answers.items()}),
    "overconfident, logit × 1.8": (
        "miscalibration",
        lambda d, r: {p: through(a, 1.8, 0.0) for p, a in d.answers.items()},
    ),
    "logit shift +0.8": ("miscalibration", lambda d, r: {p: through(a, 1.0, 0.8) for p, a in d.answers.items()}),
    "logit shift +0.3 (mild)": ("miscalibration", lambda d, r: {p: through(a, 1.0, 0.3) for p, a in d.answers.items()}),
    "shuffled, 100 % of problems": ("lost discrimination", lambda d, r: shuffled_problems(d, 1.0, r)),
    "shuffled, 50 % of problems": ("lost discrimination", lambda d, r: shuffled_problems(d, 0.5, r)),
    "logit noise N(0, 2²)": ("lost discrimination", lambda d, r: noisy(d, 2.0, r)),
    "shuffled, 10 % of problems (mild)": ("lost discrimination", lambda d, r: shuffled_problems(d, 0.1, r)),
    "logit noise N(0, 0.75²) (mild)": ("lost discrimination", lambda d, r: noisy(d, 0.75, r)),
    "no change": ("none", lambda d, r: dict(d.answers)),
}
WRONG = {"miscalibration": LOST, "lost discrimination": MISCALIBRATION}


def noisy(data: Dataset, sigma: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    out = {}
    for prim, answer in data.answers.items():
        clipped = np.clip(answer, 1e-6, 1 - 1e-6)
        out[prim] = 1 / (1 + np.exp(-(logit(clipped) + rng.normal(0, sigma, answer.size))))
    return out


def experiment(datasets: int, seed: int) -> dict:
    items = jev_items()
    rng = np.random.default_rng(seed)
    tallies: dict[str, dict] = {}
    for name, (truth, make) in SCENARIOS.items():
        causes: Counter[str] = Counter()
        verdicts: Counter[str] = Counter()
        recalibrated: list[float] = []
        for _ in range(datasets):
            data = draw(items, rng)
            candidate = make(data, rng)
            comparison = compare_reports(
                data.report(candidate, "new"),
                data.report(data.answers, "base"),
                explain=True,
                seed=int(rng.integers(1 << 31)),
            )
            for metric in comparison["metrics"].values():
                verdicts[str(metric["verdict"])] += 1
                why = metric["why"]
                recalibrated.append(why["recalibrated"]["difference"])
                if why["cause"] is not None:
                    causes[why["cause"]] += 1
        moved = sum(causes.values())
        tallies[name] = {
            "truth": truth,
            "primitives": 3 * datasets,
            "moved": moved,
            "causes": dict(causes),
            "verdicts": dict(verdicts),
            "wrong": causes.get(WRONG.get(truth, ""), 0),
            "mean_recalibrated_delta": float(np.mean(recalibrated)),
        }
    return {"datasets": datasets, "seed": seed, "scenarios": tallies}


def table(result: dict) -> str:
    lines = [
        "| candidate (truth) | moved / compared | miscalibration | lost discrimination | not determined | wrong cause | mean recalibrated Δ |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in result["scenarios"].items():
        moved = row["moved"]

        def share(cause: str, moved: int = moved, row: dict = row) -> str:
            return "—" if not moved else f"{row['causes'].get(cause, 0) / moved:.3f}"

        wrong = "—" if row["truth"] == "none" or not moved else f"{row['wrong'] / moved:.3f}"
        lines.append(
            f"| {name} ({row['truth']}) | {moved} / {row['primitives']} | {share(MISCALIBRATION)} | {share(LOST)} | "
            f"{share(UNDETERMINED)} | {wrong} | {row['mean_recalibrated_delta']:+.4f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main_of(__doc__, experiment, table, 100, ""))
