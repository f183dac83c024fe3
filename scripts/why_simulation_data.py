"""Simulated upgrade comparisons for the scripts that measure issue 38's rules (diagnosis_simulation.py,
cell_fdr_simulation.py): datasets drawn from the bundled Jev reference, a candidate made from each by a known change,
and the two as the minimal reports the upgrade comparison reads.

A dataset draws the 92 latent problems of tests/golden/jev-report.json with replacement (seeded), every rendering of
a drawn problem along under the copy's own ids, so that problems and their renderings keep the structure of the
bundled set (its families, representations, p* and Jev's answers) while the dataset changes from draw to draw. The
baseline answers are Jev's; a candidate's are made by the scenario."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
COLUMNS = {"noul": "p_noul", "choice": "p_choice", "score": "mu_score"}
KEYS = ("family", "representation", "p_star")


@dataclass(frozen=True)
class Dataset:
    """One drawn dataset: per rendering its latent problem (as drawn, a copy its own), fields, and answers."""

    latent: list[str]
    fields: list[dict[str, Any]]  # family, representation, p_star
    answers: dict[str, np.ndarray]  # primitive → baseline answer per rendering

    @property
    def p_star(self) -> np.ndarray:
        return np.array([f["p_star"] for f in self.fields])

    def report(self, answers: dict[str, np.ndarray], version: str) -> dict[str, Any]:
        """The minimal report the upgrade comparison reads: items with their answers, one repeat each."""
        items = [
            {
                "instance_id": f"{self.latent[i]}#{i}",
                "latent_instance_id": self.latent[i],
                **self.fields[i],
                **{column: float(answers[prim][i]) for prim, column in COLUMNS.items()},
                "repeats": 1,
                "samples": [],
            }
            for i in range(len(self.latent))
        ]
        return {"model": {"name": "jev", "version": version}, "repeats": 1, "items": items}


def jev_items() -> list[dict[str, Any]]:
    report = json.loads((REPO / "tests" / "golden" / "jev-report.json").read_text(encoding="utf-8"))
    return report["items"]


def draw(items: list[dict[str, Any]], rng: np.random.Generator) -> Dataset:
    """The latent problems of `items` drawn with replacement, each copy with its renderings."""
    by_problem: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_problem.setdefault(item["latent_instance_id"], []).append(item)
    names = sorted(by_problem)
    latent, fields, answers = [], [], {prim: [] for prim in COLUMNS}
    for copy, index in enumerate(rng.integers(0, len(names), len(names))):
        for item in by_problem[names[index]]:
            latent.append(f"{names[index]}@{copy}")
            fields.append({key: item[key] for key in KEYS})
            for prim, column in COLUMNS.items():
                answers[prim].append(item[column])
    return Dataset(latent, fields, {prim: np.array(values) for prim, values in answers.items()})


Scenario = Callable[[Dataset, np.random.Generator], dict[str, np.ndarray]]


def logit(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(p) - np.log1p(-p)


def through(p: np.ndarray, shrink: float, shift: float) -> np.ndarray:
    """σ(shrink·logit p + shift), 0 and 1 kept: strictly increasing."""
    with np.errstate(over="ignore"):
        out = 1 / (1 + np.exp(-(shrink * logit(p) + shift)))
    return np.where((p == 0) | (p == 1), p, out)


def shuffled_problems(data: Dataset, share: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The answers of a random `share` of the latent problems replaced by those of random renderings of other
    problems (their ranking gone), the rest kept."""
    problems = sorted(set(data.latent))
    hit = set(rng.choice(len(problems), int(round(share * len(problems))), replace=False).tolist())
    lost = np.array([problems.index(name) in hit for name in data.latent])
    latent = np.array(data.latent)
    out = {}
    for prim, answer in data.answers.items():
        new = answer.copy()
        for i in np.flatnonzero(lost):
            donors = np.flatnonzero(latent != latent[i])
            new[i] = answer[rng.choice(donors)]
        out[prim] = new
    return out


def main_of(
    doc: str,
    experiment: Callable[[int, int], dict[str, Any]],
    table: Callable[[dict[str, Any]], str],
    datasets: int,
    what: str,
) -> int:
    """A simulation script's command line: --datasets, --seed, --out; prints the table and what it ran."""
    import argparse
    import time

    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--datasets", type=int, default=datasets, help=f"datasets per scenario (default {datasets})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="also write the numbers as JSON here")
    args = parser.parse_args()
    started = time.perf_counter()
    result = experiment(args.datasets, args.seed)
    print(table(result))
    print(f"\n{args.datasets} datasets per scenario, {what}seed {args.seed}; {time.perf_counter() - started:.0f} s")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0
