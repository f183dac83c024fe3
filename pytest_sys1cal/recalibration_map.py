"""The fix, as a file: a monotone recalibration map per primitive, fitted on every latent problem of a report
(`python -m pytest_sys1cal recalibrate REPORT --out map.json`), and a run replayed *through* such a map
(`--sys1cal-recalibration=map.json`), so that a team that ships the map gates what it ships (docs/recalibration.md).

The file (schema MAP_SCHEMA) holds, per primitive, the knots of the isotonic fit of p* on the answers: a
probability p becomes numpy.interp(p, x, y), linear between the knots and constant beyond the ends; the model and
version it was fitted on, the dataset, and the map's held-out estimate (the same fit made on half of the latent
problems and scored on the other half, mean over the splits: what to expect on new problems; the map scored on
the problems it was fitted on is better than that, and says so). Read back, every part is checked and a mistake
is one line naming the file and the key.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__
from .errors import InputError
from .vocabulary import LABELS, MAP_SCHEMA, PRIMITIVES, SCORE_LEVELS

# What each primitive's map applies to, as the file says it.
APPLIES_TO = {
    "noul": "Noul's P(True)",
    "choice": "Choice's P(True), in either option order",
    "score": "Score's expectation μ_S = Σ q_j·j/9; the answer becomes the two adjacent levels with that expectation",
}
HOW = "p → numpy.interp(p, x, y): linear between the knots, constant beyond the first and the last"


class MapError(InputError):
    """A recalibration map that cannot be used; the message names the file, the key and the fix."""


@dataclass(frozen=True)
class Knots:
    x: tuple[float, ...]
    y: tuple[float, ...]

    def __call__(self, p: float) -> float:
        """numpy.interp of one value, in pure Python (the run's samples are Python floats)."""
        x, y = self.x, self.y
        if p <= x[0]:
            return y[0]
        if p >= x[-1]:
            return y[-1]
        low, high = 0, len(x) - 1
        while high - low > 1:
            middle = (low + high) // 2
            if x[middle] <= p:
                low = middle
            else:
                high = middle
        share = (p - x[low]) / (x[high] - x[low])
        return y[low] + share * (y[high] - y[low])


@dataclass(frozen=True)
class RecalibrationMap:
    """A map file as read: its path, sha256, what it was fitted on, and the knots of each primitive it maps."""

    path: Path
    sha256: str
    model: str
    version: str
    knots: Mapping[str, Knots]
    held_out: Mapping[str, float | None]  # the held-out mean OVL of each map, from the file

    def apply(self, samples: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """One rendering's samples with every mapped answer put through its map (the others as they were)."""
        return [self._sample(sample) for sample in samples]

    def _sample(self, sample: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(sample)
        for key, prim in (("noul", "noul"), ("choice", "choice"), ("choice_swapped", "choice")):
            if prim in self.knots and isinstance(out.get(key), float | int):
                out[key] = self.knots[prim](float(out[key]))
        if "score" in self.knots and isinstance(out.get("score"), list) and len(out["score"]) == SCORE_LEVELS:
            q = [float(v) for v in out["score"]]
            total = math.fsum(q)
            if total > 0:
                mu = math.fsum(v * j / (SCORE_LEVELS - 1) for j, v in enumerate(q)) / total
                out["score"] = two_levels(self.knots["score"](mu))
        return out

    def describe(self) -> dict[str, Any]:
        """The report's ``recalibration`` block: which file, fitted on what, mapping which primitives."""
        return {
            "file": self.path.name,
            "sha256": self.sha256,
            "model": self.model,
            "version": self.version,
            "primitives": [p for p in PRIMITIVES if p in self.knots],
            "held_out": {p: self.held_out.get(p) for p in PRIMITIVES if p in self.knots},
        }


def two_levels(mu: float) -> list[float]:
    """The Score distribution on two adjacent levels whose expectation Σ q_j·j/9 is `mu`."""
    position = min(max(mu, 0.0), 1.0) * (SCORE_LEVELS - 1)
    low = min(int(position), SCORE_LEVELS - 2)
    q = [0.0] * SCORE_LEVELS
    q[low], q[low + 1] = 1.0 - (position - low), position - low
    return q


# ---------------------------------------------------------------------------------------------- writing


def map_document(
    report: Mapping[str, Any], maps: Mapping[str, tuple[Any, Mapping[str, Any]]], source: str
) -> dict[str, Any]:
    """The file's content: `maps` primitive → (the fitted map, with .x and .y; its held-out block)."""
    model, dataset = report.get("model") or {}, report.get("dataset") or {}
    return {
        "schema": MAP_SCHEMA,
        "generator": f"pytest-sys1cal {__version__}",
        "model": model.get("name"),
        "version": model.get("version"),
        "dataset": {"name": dataset.get("name"), "sha256": dataset.get("sha256")},
        "fitted_on": {"report": source, "seed": report.get("seed")},
        "how": HOW,
        "maps": {
            prim: {
                "applies_to": APPLIES_TO[prim],
                "x": [float(v) for v in fitted.x],
                "y": [float(v) for v in fitted.y],
                "renderings": block["n"],
                "raw_mean_ovl": block["raw"],
                "in_sample_mean_ovl": block["in_sample"],
                "held_out": block["held_out"],
                "splits": block["splits"],
            }
            for prim, (fitted, block) in maps.items()
        },
    }


def dumps_map(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------- reading


def load_map(path: Path, flag: str = "--sys1cal-recalibration") -> RecalibrationMap:
    """Read and check a map file. Raises MapError (one line: the file, the key, the fix)."""
    fix = "write one with python -m pytest_sys1cal recalibrate REPORT.json --out map.json"
    try:
        raw = path.read_bytes()
        data = json.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise MapError(f"{flag} {path}: cannot read it ({exc.strerror or exc}); {fix}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MapError(f"{flag} {path}: not a JSON file ({exc}); {fix}") from None
    found = data.get("schema") if isinstance(data, dict) else type(data).__name__
    if found != MAP_SCHEMA:
        raise MapError(f"{flag} {path}: not a recalibration map (schema {found!r}, expected {MAP_SCHEMA!r}); {fix}")
    maps = data.get("maps")
    if not isinstance(maps, dict) or not maps:
        raise MapError(f"{flag} {path}: maps: no primitive is mapped; {fix}")
    knots, held = {}, {}
    for prim, block in maps.items():
        if prim not in PRIMITIVES:
            raise MapError(f"{flag} {path}: maps.{prim}: not a primitive (one of {', '.join(PRIMITIVES)})")
        knots[prim] = _knots(block, f"{flag} {path}: maps.{prim}")
        held_out = block.get("held_out") if isinstance(block, dict) else None
        held[prim] = held_out.get("mean") if isinstance(held_out, dict) else None
    for key in ("model", "version"):
        if not isinstance(data.get(key), str):
            raise MapError(f"{flag} {path}: {key}: missing; the file says which model and version it was fitted on")
    digest = hashlib.sha256(raw).hexdigest()
    return RecalibrationMap(path, digest, data["model"], data["version"], knots, held)


def _knots(block: Any, where: str) -> Knots:
    if not isinstance(block, dict):
        raise MapError(f"{where}: not an object with knots x and y")
    x, y = block.get("x"), block.get("y")
    if not (isinstance(x, list) and isinstance(y, list) and x and len(x) == len(y)):
        raise MapError(f"{where}: x and y must be two lists of the same, non-zero length (the knots)")
    if not all(_probability(v) for v in [*x, *y]):
        raise MapError(f"{where}: every knot must be a number in [0, 1]")
    if any(b <= a for a, b in zip(x, x[1:], strict=False)):
        raise MapError(f"{where}.x: the knots' answers must increase strictly")
    if any(b < a for a, b in zip(y, y[1:], strict=False)):
        raise MapError(f"{where}.y: the map must be monotone (non-decreasing): a recalibration never reorders answers")
    return Knots(tuple(float(v) for v in x), tuple(float(v) for v in y))


def _probability(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1


def map_notice(mapping: RecalibrationMap, model: str, version: str) -> str:
    """What a run through the map must say: which map, and, when it was fitted on these very answers, that its
    gains here are in-sample."""
    mapped = ", ".join(LABELS[p] for p in PRIMITIVES if p in mapping.knots)
    said = f"answers replayed through the recalibration map {mapping.path.name} ({mapped}; fitted on {mapping.version})"
    if mapping.version == version:
        held = ", ".join(
            f"{LABELS[p]} {value:.3f}" for p in PRIMITIVES if isinstance(value := mapping.held_out.get(p), float)
        )
        said += (
            f": it was fitted on these very answers, so these numbers are in-sample and flatter it; on new problems "
            f"expect its held-out mean OVL ({held})"
        )
    return said
