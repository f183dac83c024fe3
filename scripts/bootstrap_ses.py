"""Standard errors of the gated statistics, by bootstrapping latent problems, for writing thresholds.yaml.

    python scripts/bootstrap_ses.py REPORT.json [--resamples N] [--seed S]

Reads the items of a JSON report (``--sys1cal-report``), resamples its latent problems with replacement
(every rendering of a drawn problem comes along; a problem drawn twice counts twice), recomputes the
analysis on each resample, and prints, for every statistic a gate in thresholds.yaml can read, the value
on the full data, the bootstrap SE, and the limit the shipped file's rule gives: value ∓ 2·SE rounded
outwards to 0.005 (floors for OVL, ceilings for TV, ECE, Brier, swap shift and first-position bias).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pytest_sys1cal.analysis import analyze

PRIMITIVES = ("noul", "choice", "score")
# (gate key, bound, how to read it from the analysis)
STATISTICS: list[tuple[str, str, Any]] = [
    *[(f"{p}.min_mean_ovl", "min", lambda a, p=p: a["primitives"][p]["mean_ovl"]) for p in PRIMITIVES],
    *[(f"{p}.min_median_ovl", "min", lambda a, p=p: a["primitives"][p]["median_ovl"]) for p in PRIMITIVES],
    *[
        (f"{p}.max_mean_pairwise_tv", "max", lambda a, p=p: a["representation_sensitivity"][p]["mean_pairwise_tv"])
        for p in PRIMITIVES
    ],
    *[
        (f"{p}.max_mean_max_tv", "max", lambda a, p=p: a["representation_sensitivity"][p]["mean_max_tv"])
        for p in PRIMITIVES
    ],
    *[(f"{p}.max_ece", "max", lambda a, p=p: a["calibration"][p]["ece"]) for p in PRIMITIVES],
    *[(f"{p}.max_brier", "max", lambda a, p=p: a["calibration"][p]["brier"]) for p in PRIMITIVES],
    ("choice.max_swap_shift", "max", lambda a: abs(a["option_swap"]["mean_shift"]) if a["option_swap"] else None),
    (
        "choice.max_first_position_bias",
        "max",
        lambda a: abs(a["option_swap"]["first_position_rate"] - 0.5) if a["option_swap"] else None,
    ),
]


def limit(value: float, se: float, bound: str) -> float:
    """value ∓ 2·SE, rounded outwards (away from the value) to the next 0.005."""
    if bound == "min":
        return math.floor(round((value - 2 * se) / 0.005, 9)) * 0.005
    return math.ceil(round((value + 2 * se) / 0.005, 9)) * 0.005


def resample(by_latent: dict[str, list[dict[str, Any]]], rng: np.random.Generator) -> list[dict[str, Any]]:
    keys = sorted(by_latent)
    drawn = rng.integers(0, len(keys), size=len(keys))
    items = []
    for copy, index in enumerate(drawn):
        for item in by_latent[keys[index]]:
            # A problem drawn twice must count as two problems: give each copy its own ids.
            items.append(
                {
                    **item,
                    "instance_id": f"{item['instance_id']}#{copy}",
                    "latent_instance_id": f"{item['latent_instance_id']}#{copy}",
                }
            )
    return items


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--resamples", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        report = json.loads(args.report.read_text(encoding="utf-8"))
        items = report["items"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"{args.report}: not a readable sys1cal JSON report ({exc})", file=sys.stderr)
        return 2
    if args.resamples < 20:
        parser.error("--resamples must be at least 20")
    by_latent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in items:
        by_latent[item["latent_instance_id"]].append(item)
    full = analyze(items, bootstrap=0)
    rng = np.random.default_rng(args.seed)
    draws: dict[str, list[float]] = defaultdict(list)
    for _ in range(args.resamples):
        analysis = analyze(resample(by_latent, rng), bootstrap=0)
        for key, _bound, read in STATISTICS:
            value = read(analysis)
            if value is not None:
                draws[key].append(value)
    print(
        f"{report.get('model', {}).get('name', '?')} {report.get('model', {}).get('version', '?')}: "
        f"{len(items)} renderings, {len(by_latent)} latent problems, {args.resamples} resamples, seed {args.seed}"
    )
    print(f"{'gate':34} {'value':>8} {'SE':>8}  limit")
    for key, bound, read in STATISTICS:
        value = read(full)
        if value is None or len(draws[key]) < args.resamples // 2:
            print(f"{key:34} {'—':>8}")
            continue
        se = float(np.std(draws[key], ddof=1))
        sign = "−" if bound == "min" else "+"
        print(f"{key:34} {value:8.4f} {se:8.4f}  {limit(value, se, bound):.3f}   # {value:.4f} {sign} 2·{se:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
