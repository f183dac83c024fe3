"""Two test-made copies of a /v1/systemone cassette folder (the bundled `jev-1.13.0`) for the tests of why a version
moved (issue 38), each filed under another version so that it replays beside the original:

- `distorted`: every answer through one strictly monotone map, a logit-scale shrink and shift,
  g(p) = σ(a·logit p + b) (0 and 1 stay put): the ranking of every rendering is untouched, only the calibration
  moves. Noul's P(True) and Choice's P(True) (both orders) go through g; Score's expectation μ_S does, its answer
  becoming the two adjacent levels with expectation g(μ_S).
- `shuffled`: the same answers dealt to other renderings, each to a rendering of another latent problem (a seeded
  permutation with no answer left in its own problem): the answers' distribution is untouched, their ranking of
  the problems is gone.

Both write valid folders (tests/degraded.py's copy: request bodies name the new version, the manifest its
answers' digests)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from pytest_sys1cal.dataset import load_dataset
from pytest_sys1cal.recalibration_map import two_levels
from tests.degraded import _copy


def logit_map(p: float, shrink: float, shift: float) -> float:
    """σ(shrink·logit p + shift), exact at 0 and 1: strictly increasing for shrink > 0."""
    if p <= 0.0 or p >= 1.0:
        return p
    return 1.0 / (1.0 + math.exp(-(shrink * math.log(p / (1.0 - p)) + shift)))


def distorted(source: Path, root: Path, version: str, shrink: float = 0.6, shift: float = 0.7) -> Path:
    """The copy of `source` with every answer through logit_map(·, shrink, shift); returns its folder."""

    def change(_name: str, qid: str, answer: dict[str, Any]) -> None:
        if qid == "noul":
            answer["noul"] = logit_map(answer["noul"], shrink, shift)
        elif qid == "score":
            q = [answer["probabilities"][str(j)] for j in range(len(answer["probabilities"]))]
            mu = math.fsum(v * j / 9 for j, v in enumerate(q)) / math.fsum(q)
            answer["probabilities"] = {str(j): v for j, v in enumerate(two_levels(logit_map(mu, shrink, shift)))}
            answer["score"] = math.fsum(j * v for j, v in enumerate(answer["probabilities"].values()))
        else:  # choice, choice_swapped
            true = logit_map(answer["probabilities"]["True"], shrink, shift)
            answer["probabilities"] = {key: true if key == "True" else 1 - true for key in answer["probabilities"]}
            answer["choice"] = max(answer["probabilities"], key=answer["probabilities"].get)

    what = f"every answer through σ({shrink:g}·logit p + {shift:g}), a monotone distortion"
    return _copy(source, root, version, change, what)


def shuffled(source: Path, root: Path, version: str, seed: int = 0) -> Path:
    """The copy of `source` whose every rendering answers what a rendering of another latent problem answered."""
    latent = {r.short_id: r.latent_instance_id for r in load_dataset("sys1cal-v1").renderings}
    answers = {path.stem: _answers(path) for path in sorted(source.glob("*/*.json"))}
    names = sorted(answers)
    rng = np.random.default_rng(seed)
    while True:  # a permutation that moves every answer to another latent problem
        order = rng.permutation(len(names))
        if all(latent[names[i]] != latent[names[j]] for i, j in enumerate(order)):
            break
    donor = {names[i]: names[j] for i, j in enumerate(order)}

    def change(name: str, qid: str, answer: dict[str, Any]) -> None:
        answer.clear()
        answer.update(json.loads(json.dumps(answers[donor[name]][qid])))

    return _copy(source, root, version, change, f"every rendering given another latent problem's answers (seed {seed})")


def _answers(path: Path) -> dict[str, Any]:
    """The answers of a cassette of one interaction (the bundled set asks each rendering once)."""
    interactions = json.loads(path.read_text(encoding="utf-8"))["interactions"]
    assert len(interactions) == 1, f"{path}: one interaction per cassette expected"
    return json.loads(interactions[0]["response"]["body"]["string"])["answers"]
