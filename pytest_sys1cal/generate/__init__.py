"""Fresh, leak-free Sys1Cal datasets from a seed: the families (FAMILIES) in order, the split of the problems over
them, each family's band schedule, and the records streamed to a JSONL file. See docs/generate.md."""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..bands import Band
from .bayes import BAYES, SEQUENTIAL_BAYES
from .compound import COMPOUND
from .conditional import CONDITIONAL
from .explicit import EXPLICIT_PROBABILITY
from .frequency import FREQUENCY
from .problem import Family
from .records import GENERATOR_VERSION, build_records, draw_presentation, render_states, shows_answer

__all__ = ["FAMILIES", "GENERATOR_VERSION", "Written", "generate", "iter_records", "write_dataset"]

# The families in the order of the split (and of `difficulty`), the vocabulary's FAMILY_NAMES: the first
# `problems % len(FAMILIES)` get one more.
FAMILIES: tuple[Family, ...] = (EXPLICIT_PROBABILITY, FREQUENCY, COMPOUND, CONDITIONAL, BAYES, SEQUENTIAL_BAYES)

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
