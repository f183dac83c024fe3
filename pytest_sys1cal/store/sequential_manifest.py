"""The manifest's ``sequential`` field: a version folder recorded in rounds (--sys1cal-sequential) says which
design it follows (spending function, rounds, level, the seed of its order of latent problems), how many whole
rounds it holds and their latent problems, in recording order. A replay judges such a folder in rounds on
exactly those problems; a recording of the whole dataset without --sys1cal-sequential completes it and drops the
field. docs/cassettes.md, "The manifest"."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..defaults import SPENDING

FIELD = "sequential"
WANTED = (
    'an object {"spending": obrien-fleming or pocock, "rounds": a whole number ≥ 1, "alpha": a level in (0, 1), '
    '"seed": a whole number ≥ 0, "recorded_rounds": the whole rounds recorded, "latent_problems": their ids in '
    "recording order}, written by a recording in rounds"
)


@dataclass(frozen=True)
class RoundsRecorded:
    """What a folder recorded in rounds holds: its design and its first `recorded_rounds` rounds' problems."""

    spending: str
    rounds: int
    alpha: float
    seed: int
    recorded_rounds: int
    latent_problems: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "spending": self.spending,
            "rounds": self.rounds,
            "alpha": self.alpha,
            "seed": self.seed,
            "recorded_rounds": self.recorded_rounds,
            "latent_problems": list(self.latent_problems),
        }


def read(manifest: Mapping[str, Any] | None) -> RoundsRecorded | None:
    """The folder's rounds (its manifest was validated: `valid`), or None for a folder not recorded in rounds."""
    value = (manifest or {}).get(FIELD)
    if value is None:
        return None
    return RoundsRecorded(
        spending=value["spending"],
        rounds=value["rounds"],
        alpha=float(value["alpha"]),
        seed=value["seed"],
        recorded_rounds=value["recorded_rounds"],
        latent_problems=tuple(value["latent_problems"]),
    )


def valid(value: Any) -> bool:
    """The field as WANTED says (the manifest's reader names it and the fix when it is not)."""
    if not isinstance(value, dict) or set(value) != {
        "spending",
        "rounds",
        "alpha",
        "seed",
        "recorded_rounds",
        "latent_problems",
    }:
        return False
    problems = value["latent_problems"]
    return (
        value["spending"] in SPENDING
        and _whole(value["rounds"], 1)
        and isinstance(value["alpha"], int | float)
        and not isinstance(value["alpha"], bool)
        and 0 < value["alpha"] < 1
        and _whole(value["seed"], 0)
        and _whole(value["recorded_rounds"], 0)
        and value["recorded_rounds"] <= value["rounds"]
        and _names(problems)
    )


def _whole(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value) and len(set(value)) == len(value)


def written(manifest: dict[str, Any], rounds: RoundsRecorded | None) -> dict[str, Any]:
    """The manifest with its ``sequential`` field set to `rounds` (dropped when None)."""
    out = {key: value for key, value in manifest.items() if key != FIELD}
    if rounds is not None:
        out[FIELD] = rounds.to_json()
    return out
