"""Issue 3's speed target: analyze() on the bundled 365-rendering input and on a 10× larger one, side by side.

    python bench/bench_analysis.py [--rounds N] [--items N] [--bootstrap B] [--tree DIR ...]

The bundled input is the paper's published per-item Jev outputs, one sample per rendering, exactly as the
reconstructed cassettes replay them (``published_items``, also the input of tests/analysis). The 10× input
repeats every latent problem ten times with seeded jitter (N(0, 0.02²) on every probability), so it has ten
times the renderings and the latent problems. Every measurement is a fresh Python process that times
``import pytest_sys1cal.analysis`` (numpy included, as a real run pays it) and then analyze() on the input;
rounds are interleaved so that machine noise hits both inputs alike, and medians are printed.
Target: under 2 s for 365 renderings including the 1,000-resample latent bootstrap; linear growth.

--items N adds an input of N renderings built the same way (ceil(N / 365) jittered copies, cut to N; issue
27's target: 18,334 renderings analysed in under 1.5 s, measured in a real run by bench_scale.py's "analysis
s" column, where a pytest process full of objects also pays for garbage collection). --tree runs the same
inputs with another checkout of the plugin (e.g. /work/main, via PYTHONPATH), interleaved with this one.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
PUBLISHED = REPO / "fixtures" / "published-jev" / "noul_choice_score_instance_metrics.csv"
CHILD = """
import json, sys, time
start = time.perf_counter()
from pytest_sys1cal.analysis import analyze
imported = time.perf_counter()
with open(sys.argv[1]) as handle:
    items = json.load(handle)
loaded = time.perf_counter()
analyze(items, seed=0, bootstrap=int(sys.argv[2]))
print(json.dumps({"import": imported - start, "analyze": time.perf_counter() - loaded}))
"""


def published_items(path: Path = PUBLISHED) -> list[dict]:
    """The published per-item Jev outputs as replayed items: one sample per rendering, no swapped Choice."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [
        {
            "instance_id": row["instance_id"],
            "latent_instance_id": row["latent_instance_id"],
            "family": row["family"],
            "representation": row["representation"],
            "p_star": float(row["p_star"]),
            "samples": [
                {
                    "noul": float(row["p_noul"]),
                    "choice": float(row["p_choice"]),
                    "score": [float(row[f"q_{j}"]) for j in range(10)],
                }
            ],
            "error": None,
        }
        for row in rows
    ]


def scaled_items(items: list[dict], copies: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)

    def jitter(p: float) -> float:
        return float(np.clip(p + rng.normal(0, 0.02), 0, 1))

    out = []
    for copy in range(copies):
        for item in items:
            sample = item["samples"][0]
            score = np.clip(np.asarray(sample["score"]) + rng.normal(0, 0.02, 10), 0, None) + 1e-9
            out.append(
                {
                    **item,
                    "instance_id": f"{item['instance_id']}__copy{copy}",
                    "latent_instance_id": f"{item['latent_instance_id']}__copy{copy}",
                    "samples": [
                        {
                            "noul": jitter(sample["noul"]),
                            "choice": jitter(sample["choice"]),
                            "score": (score / score.sum()).tolist(),
                        }
                    ],
                }
            )
    return out


def timed(path: Path, bootstrap: int, tree: Path | None) -> dict[str, float]:
    env = os.environ.copy()
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(bootstrap)],
        cwd=tree or REPO,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if result.returncode != 0:
        raise SystemExit(f"analysis of {path.name} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--items", type=int, action="append", default=[], help="also an input of N renderings")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--tree", action="append", default=[], help="another checkout to measure (PYTHONPATH)")
    options = parser.parse_args()
    bundled = published_items()
    inputs = {"bundled, 365 renderings": bundled, f"10x, {10 * len(bundled)} renderings": scaled_items(bundled, 10)}
    for size in options.items:
        inputs[f"{size} renderings"] = scaled_items(bundled, -(-size // len(bundled)))[:size]
    trees: dict[str, Path | None] = {"this": None, **{Path(t).name: Path(t).resolve() for t in options.tree}}
    runs: dict[tuple[str, str], list[dict[str, float]]] = {(n, t): [] for n in inputs for t in trees}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for i, (name, items) in enumerate(inputs.items()):
            paths[name] = Path(tmp) / f"input{i}.json"
            paths[name].write_text(json.dumps(items))
        for _ in range(options.rounds):
            for name, path in paths.items():
                for tree_name, tree in trees.items():
                    runs[name, tree_name].append(timed(path, options.bootstrap, tree))
    print(f"median of {options.rounds} fresh processes each; bootstrap {options.bootstrap}")
    print(f"{'input':<26} {'tree':>8}  {'import':>8}  {'analyze':>8}  {'total':>8}  analyze per run")
    medians = {}
    for (name, tree_name), measured in runs.items():
        import_s = statistics.median(run["import"] for run in measured)
        analyze_s = statistics.median(run["analyze"] for run in measured)
        medians[name, tree_name] = analyze_s
        each = ", ".join(f"{run['analyze']:.3f}" for run in measured)
        print(
            f"{name:<26} {tree_name:>8}  {import_s:>6.3f} s  {analyze_s:>6.3f} s  {import_s + analyze_s:>6.3f} s  {each}"
        )
    names = list(inputs)
    for tree_name in trees:
        small, large = medians[names[0], tree_name], medians[names[1], tree_name]
        print(f"{'ratio 10x / bundled':<26} {tree_name:>8}: analyze {large / small:.2f} (linear growth: about 10)")
    for tree_name in list(trees)[1:]:
        for name in names:
            ratio = medians[name, "this"] / medians[name, tree_name]
            print(f"{'this / ' + tree_name:<26} {name}: analyze {ratio:.2f}")
    print(f"{'target':<26}: bundled import + analyze under 2 s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
