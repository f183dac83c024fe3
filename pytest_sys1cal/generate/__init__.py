"""Fresh, leak-free Sys1Cal datasets from a seed (`python -m pytest_sys1cal generate`).

The public Sys1Cal-v1 file may be in a model's training data, is small (92 latent problems) and leaks answers
(prose states p*, sequential Bayes lists the posterior trajectory). This module writes new datasets in the
same parallel-primitives schema, with ``benchmark_version`` "sys1cal-gen-1".

**Split.** ``problems`` latent problems are split over the six families in the order below: each gets
``problems // 6``, and the first ``problems % 6`` families one more.

**Representations** (the ``representation`` field; a latent is rendered once in each it allows):

    family                direct counts scaled_counts ratio table prose nested distractor
    explicit_probability    x                         x     x     x     x      x
    frequency               x     x        x          x     x     x     x      x
    compound                x                               x     x     x      x
    conditional             x     x        x                x     x     x      x
    bayes                   x     x        x          x     x     x     x      x
    sequential_bayes        x                         x     x     x     x      x

- counts / scaled_counts are whole-number counts times a per-latent factor (2-9 / 100-999): frequency and
  conditional multiply their counts; bayes shows natural frequencies (the smallest population in which
  every branch of the prior x likelihood tree is whole, times the factor). Not for explicit_probability
  (counts would turn it into the frequency family), compound (its inputs are probabilities of different
  events, and scaling an urn changes a hypergeometric answer) or sequential_bayes (a frequency tree over
  3-6 steps needs populations near 10^14).
- ratio is an exact ratio of coprime integers: P(A):P(not_A) for explicit_probability, the count ratio for
  frequency, prior odds and likelihood ratio(s) for bayes and sequential_bayes. Not for conditional (the
  only odds that determine p* are n(A,B):n(not_A,B), which skips the conditioning step that defines the
  family) or compound (no single odds; the subtasks combine probabilities).
- table, prose (sentences that describe the sufficient statistics), nested (the statistics regrouped, e.g.
  a contingency grouped by B first) and distractor (direct plus an ``irrelevant`` block) exist for all.

**p*.** Every family draws p* by blocked stratification over the Sys1Cal-v1 probability bands: each
consecutive block of latents of a family (9 latents; 11 for explicit_probability) visits every band once
in a seeded random order. The bands are (0,0.01) [0.01,0.10] (0.10,0.30] (0.30,0.45] (0.45,0.55]
(0.55,0.70] (0.70,0.90] (0.90,0.99] (0.99,1), plus the exact values 0 and 1 for explicit_probability.
Inside a band: explicit_probability and compound complement are uniform on the grid k/10^4, frequency
and conditional on k/total for a random total of 10-999; intersection, union, bayes and sequential_bayes
aim at a uniform target and round their last input to the grid; repeated trials and hypergeometric are
drawn at random and kept when p* falls in the band. Every draw is checked to lie in its band (the
record's ``probability_band``).

**Exactness.** Probabilities are decimals with at most 4 places (2 for priors, likelihoods and trial
probabilities), counts are integers, ratios are coprime integers; p* is computed with ``Fraction`` from
exactly those numbers, so every rendering of a latent has the same p*, stored as ``float(p*)``.
``generator_metadata.parameters.p_star`` keeps it as an exact fraction.

**No leaks.** Only ``state`` (and the fixed proposition and questions) reach the model. No state shows p*:
prose describes the inputs, sequential Bayes has no posterior trajectory (it stays in the metadata), counts
use random factors instead of round totals. A latent is also redrawn when any number in any of its states
happens to spell p* (repr, 2/3/4 decimals, 6 or 12 significant digits, or a percentage), e.g. a Bayes prior
of 0.43 when p* = 0.4312: copying that number must not be a shortcut to the answer. This redraws about 8 %
of bayes, 10 % of sequential_bayes and 1 % of compound draws (most in the end bands, where a likelihood
of 0.01 spells p* = 0.007 at two decimals), so it slightly thins such problems. explicit_probability is the
one exception: stating p* is that family's point.

**Determinism.** Each latent draws from ``random.Random("sys1cal-gen-1:{seed}:{family}:{index}")`` (string
seeds are hashed with SHA-512, not ``hash()``), so a seed gives the same bytes in every process, and a
latent does not depend on how many problems are generated. The record's ``seed`` is the latent's index
within its family, so ids keep the Sys1Cal-v1 scheme
``{family}__seed_{index:06d}__repr_{representation}__parallel_primitives``; the dataset seed and the
generator version are in ``generator_metadata.generator``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..argtypes import positive_int
from .exact import Band
from .families import FAMILIES, Family
from .records import GENERATOR_VERSION, build_records, draw_presentation, render_states, shows_answer

__all__ = ["GENERATOR_VERSION", "add_arguments", "generate", "iter_records", "run", "write_dataset"]

# A latent whose states keep spelling p* is redrawn; this many failures means a generator bug, not bad luck.
MAX_DRAWS = 1000


def family_sizes(problems: int) -> list[int]:
    """Latent problems per family: as even as possible, the first families taking the remainder."""
    base, extra = divmod(problems, len(FAMILIES))
    return [base + (position < extra) for position in range(len(FAMILIES))]


def band_schedule(seed: int, family: Family, count: int) -> list[Band]:
    """The target band of each latent: every block of len(bands) latents visits each band once."""
    blocks = math.ceil(count / len(family.bands))
    schedule: list[Band] = []
    for block in range(blocks):
        bands = list(family.bands)
        random.Random(f"{GENERATOR_VERSION}:{seed}:{family.name}:bands:{block}").shuffle(bands)
        schedule.extend(bands)
    return schedule[:count]


def _latent_records(seed: int, family: Family, index: int, band: Band) -> list[dict[str, Any]]:
    rng = random.Random(f"{GENERATOR_VERSION}:{seed}:{family.name}:{index}")
    for _ in range(MAX_DRAWS):
        problem = family.draw(rng, band, index)
        states = render_states(family, problem, draw_presentation(rng))
        if family.states_answer or not shows_answer(states, problem.p_star):
            return build_records(family, problem, states, seed=seed, index=index)
    raise RuntimeError(f"{family.name} latent {index}: every draw in band {band.label} showed p*")


def iter_records(seed: int, problems: int) -> Iterator[dict[str, Any]]:
    """The records of a fresh dataset, latent by latent (so a large set never sits in memory).

    The records of one latent share their common parts (metadata parameters, queries): treat them as
    read-only.
    """
    if problems < 1:
        raise ValueError(f"problems must be at least 1, got {problems}")
    return (
        record
        for family, count in zip(FAMILIES, family_sizes(problems), strict=True)
        for index, band in enumerate(band_schedule(seed, family, count))
        for record in _latent_records(seed, family, index, band)
    )


def generate(seed: int, problems: int) -> list[dict[str, Any]]:
    """The records of a fresh dataset: `problems` latent problems, each in its family's representations."""
    return list(iter_records(seed, problems))


@dataclass(frozen=True)
class Written:
    """What `write_dataset` wrote; the command prints it as its summary line."""

    path: Path
    renderings: int
    latent_problems: int
    sha256: str


def write_dataset(path: str | os.PathLike[str], seed: int, problems: int) -> Written:
    """Generate and write a dataset as Sys1Cal-v1 does (sorted keys, ASCII, LF), atomically."""
    target = Path(path)
    # Streamed into a file next to the target (so the rename is atomic), with open()'s usual permissions.
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    renderings = 0
    latents: set[str] = set()
    try:
        with partial.open("wb") as handle:
            for record in iter_records(seed, problems):
                line = (json.dumps(record, sort_keys=True) + "\n").encode("ascii")
                digest.update(line)
                handle.write(line)
                renderings += 1
                latents.add(record["latent_instance_id"])
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return Written(path=target, renderings=renderings, latent_problems=len(latents), sha256=digest.hexdigest())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, required=True, help="dataset seed; the same seed gives the same bytes")
    parser.add_argument("--problems", type=positive_int, required=True, help="latent problems, split over 6 families")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE.jsonl", help="where to write the dataset")


def run(args: argparse.Namespace) -> int:
    try:
        written = write_dataset(args.out, args.seed, args.problems)
    except OSError as exc:
        print(f"error: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(
        f"{written.path}: {written.renderings} renderings of {written.latent_problems} latent problems, "
        f"sha256 {written.sha256}"
    )
    return 0
