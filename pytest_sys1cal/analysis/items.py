"""Per-rendering aggregation: repeat means of each primitive, as the paper computes them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..document import Counts, Item, Measured, Sample
from ..vocabulary import SCORE_LEVELS

# z_j = j/9: the value of Score level j on the probability scale.
LEVEL_VALUES = np.arange(SCORE_LEVELS) / (SCORE_LEVELS - 1)


def score_expectation(q: np.ndarray) -> np.ndarray:
    """Σ_j q_j z_j of each row of an (n, 10) Score distribution: the ten products added exactly, then rounded
    once (math.fsum), so μ_S is the same float on every machine and numpy release.

    Not ``q @ LEVEL_VALUES``: a matrix product goes to BLAS, whose kernels (one per numpy release and CPU) add
    the terms in different orders: the last bit of μ_S moved on 129 of the 365 Jev renderings between numpy
    1.26 and 2.4 on one machine. That bit can matter: six published Jev answers put μ_S exactly on an ECE bin
    edge (7/15 in decimal), where one ulp below moves the rendering to the next bin (Score ECE 0.0509, not
    0.0508)."""
    return np.array([math.fsum(row) for row in (q * LEVEL_VALUES).tolist()], dtype=float).reshape(q.shape[0])


@dataclass(frozen=True)
class ItemTable:
    """Columns over the measured renderings, sorted by instance id (so xdist order never matters)."""

    instance_id: list[str]
    latent_instance_id: list[str]
    family: list[str]
    representation: list[str]
    p_star: np.ndarray
    p_noul: np.ndarray  # NaN where Noul was not asked
    p_choice: np.ndarray
    p_choice_swapped: np.ndarray
    score_q: np.ndarray  # (n, 10) repeat-mean Score distribution, renormalised
    mu_score: np.ndarray  # Σ q_j z_j
    repeats: np.ndarray
    samples: list[list[Sample]]
    failed: list[tuple[str, str]]  # (instance_id, error) of renderings with no usable answer

    @property
    def n(self) -> int:
        return len(self.instance_id)

    @property
    def latent_ids(self) -> np.ndarray:
        return np.asarray(self.latent_instance_id, dtype=str)

    @property
    def p_choice_both_orders(self) -> np.ndarray:
        """Choice P(True) averaged over the two option orders where both were asked, else the one asked:
        the order-bias-free reading of Choice."""
        plain, swapped = self.p_choice, self.p_choice_swapped
        return np.where(np.isnan(plain), swapped, np.where(np.isnan(swapped), plain, (plain + swapped) / 2))

    def counts(self) -> Counts:
        return {
            "renderings": self.n + len(self.failed),
            "measured": self.n,
            "failed": len(self.failed),
            "latent_problems": len(set(self.latent_instance_id)),
        }

    def rows(self) -> list[Item]:
        """One JSON row per measured rendering (the report's ``items``).

        Columns are converted to Python numbers once each (tolist: the same floats as float() per element),
        not per item and field: at 18k renderings the per-element conversions were most of the time."""
        p_noul, p_choice, swapped, mu = (
            _json_floats(c) for c in (self.p_noul, self.p_choice, self.p_choice_swapped, self.mu_score)
        )
        score_missing = np.isnan(self.score_q).any(axis=1).tolist() if self.n else []
        columns = zip(
            self.instance_id,
            self.latent_instance_id,
            self.family,
            self.representation,
            self.p_star.tolist(),
            p_noul,
            p_choice,
            swapped,
            mu,
            self.score_q.tolist(),
            score_missing,
            self.repeats.tolist(),
            self.samples,
            strict=True,
        )
        return [
            {
                "instance_id": instance_id,
                "latent_instance_id": latent,
                "family": family,
                "representation": representation,
                "p_star": p_star,
                "p_noul": noul,
                "p_choice": choice,
                "p_choice_swapped": choice_swapped,
                "mu_score": mu_score,
                "score_probabilities": None if missing else score,
                "repeats": repeats,
                "samples": samples,
            }
            for (
                instance_id, latent, family, representation, p_star, noul, choice, choice_swapped, mu_score, score,
                missing, repeats, samples,
            ) in columns
        ]  # fmt: skip


def _json_floats(values: np.ndarray) -> list[float | None]:
    """The column as Python floats, NaN (not measured) as None."""
    return [None if value != value else value for value in values.tolist()]  # NaN is the one float ≠ itself


def _mean_of(samples: Sequence[Sample], key: str) -> float:
    values = [s[key] for s in samples if s.get(key) is not None]
    # fsum rather than np.mean: exact, and np.mean's overhead dominates on a handful of repeats.
    return math.fsum(values) / len(values) if values else float("nan")


def remeasured(items: Sequence[Item]) -> list[Measured]:
    """A saved report's items as the analysis takes them, to analyse them again (an item without samples is
    a failed rendering, as in a run)."""
    return [
        {
            "instance_id": item["instance_id"],
            "latent_instance_id": item["latent_instance_id"],
            "family": item["family"],
            "representation": item["representation"],
            "p_star": item["p_star"],
            "samples": item.get("samples") or [],
        }
        for item in items
    ]


def aggregate_items(items: Sequence[Measured]) -> ItemTable:
    ok = sorted(
        (item for item in items if not item.get("error") and item.get("samples")),
        key=lambda item: item["instance_id"],
    )
    failed = sorted(
        (item["instance_id"], item.get("error") or "no samples")
        for item in items
        if item.get("error") or not item.get("samples")
    )
    score_q = _mean_score_distributions(ok)
    return ItemTable(
        instance_id=[item["instance_id"] for item in ok],
        latent_instance_id=[item["latent_instance_id"] for item in ok],
        family=[item["family"] for item in ok],
        representation=[item["representation"] for item in ok],
        p_star=np.array([item["p_star"] for item in ok], dtype=float),
        p_noul=np.array([_mean_of(item["samples"], "noul") for item in ok]),
        p_choice=np.array([_mean_of(item["samples"], "choice") for item in ok]),
        p_choice_swapped=np.array([_mean_of(item["samples"], "choice_swapped") for item in ok]),
        score_q=score_q,
        mu_score=score_expectation(score_q),
        repeats=np.array([len(item["samples"]) for item in ok], dtype=int),
        samples=[list(item["samples"]) for item in ok],
        failed=failed,
    )


def _mean_score_distributions(items: Sequence[Measured]) -> np.ndarray:
    """(n, 10) repeat-mean Score distribution per item, renormalised; NaN rows where Score was not asked.

    All answers go into one array and are summed per item in order, so this equals a per-item np.mean
    to the bit without a numpy call per item."""
    answers = [[s["score"] for s in item["samples"] if s.get("score") is not None] for item in items]
    counts = np.array([len(item_answers) for item_answers in answers], dtype=int)
    rows = [q for item_answers in answers for q in item_answers]
    flat = np.array(rows, dtype=float) if rows else np.empty((0, SCORE_LEVELS))  # a wrong length raises below
    sums = np.zeros((len(answers), SCORE_LEVELS))
    np.add.at(sums, np.repeat(np.arange(len(answers)), counts), flat)
    asked = counts > 0
    score_q = np.full((len(answers), SCORE_LEVELS), np.nan)
    mean_q = sums[asked] / counts[asked, None]
    score_q[asked] = mean_q / mean_q.sum(axis=1, keepdims=True)
    return score_q
