"""Issue 37's numbers, from real recordings: the OVL of a single call against the OVL of the 10-call mean that
the paper's protocol (and, before `reading: call`, every gate) reads, and the upgrade verdict under each reading.

    python bench/per_call_readings.py [--problems N]

Three versions are recorded over HTTP from the jevcompat mock, which serves the one model id `prod` (its
answers a hash of the question plus logit noise σ, drawn afresh for every call): v1 with σ = 3 (the version a
team trusts), v2 with σ = 0 (deterministic), v3 with σ = 6; each a real `python -m pytest --sys1cal
--sys1cal-model-id=prod --sys1cal-record-mode=once` process, 10 calls per rendering, one request in flight (so
the mock's noise stream meets the requests in one order and the numbers repeat exactly). Then v2 and v3 are
compared with v1 offline, once with `reading: mean` and once with `reading: call` in thresholds.yaml.

Printed: per version and primitive, mean OVL as a 10-call mean and per call (side by side, the issue's pairs),
then each comparison's verdict line under both readings. The issue measured (mean / call) Noul 0.698 / 0.600,
Choice 0.680 / 0.566 for σ = 3 and 0.640, 0.615 for σ = 0: a deterministic v2 better on every call and FAILED
as a 10-call mean; a σ = 6 v3 worse per call and passed as a mean. --problems N records a fresh dataset of N
latent problems instead of the bundled 92 (quicker, the same shape).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import jevcompat.mock as jevcompat

VERSIONS = {"v1": 3.0, "v2": 0.0, "v3": 6.0}  # version → the mock's logit noise σ while recording it
PRIMITIVES = ("noul", "choice", "score")


def pytest_run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--sys1cal", "--model=systemone", *args]
    return subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=0, help="a fresh dataset of N latent problems (0: bundled)")
    args = parser.parse_args()
    jevcompat.ACCEPTED_MODELS = {"prod"}  # a server whose one model id is prod, whatever version it runs
    jevcompat.MODELS = [{"name": "prod", "description": "a team's server", "release_date": "2026-10-01"}]
    config = jevcompat.MockConfig()
    with tempfile.TemporaryDirectory() as folder, jevcompat.Running(config) as mock:
        root = Path(folder)
        common = ["--sys1cal-model-id=prod", "--sys1cal-rate=0", "--sys1cal-concurrency=1", "--sys1cal-repeats=10"]
        if args.problems:
            made = subprocess.run(
                [sys.executable, "-m", "pytest_sys1cal", "generate", "--seed", "7", "--problems", str(args.problems)]
                + ["--out", "fresh.jsonl"],
                cwd=root,
                check=True,
                capture_output=True,
            )
            assert made.returncode == 0
            common.append("--sys1cal-dataset=fresh.jsonl")
        os.environ["SYS1CAL_BASE_URL"] = mock.url
        print(f"{'version':8} {'σ':>4}  " + "  ".join(f"{p:>6} mean / call" for p in PRIMITIVES))
        for version, noise in VERSIONS.items():
            config.noise = noise
            config.rng.seed(0)  # each recording's noise stream from the same start
            done = pytest_run(root, *common, f"--sys1cal-model-version={version}", "--sys1cal-record-mode=once",
                              f"--sys1cal-report={version}.json")  # fmt: skip
            assert done.returncode == 0, done.stdout[-3000:]
            report = json.loads((root / f"{version}.json").read_text())
            cells = []
            for prim in PRIMITIVES:
                row = report["primitives"][prim]
                cells.append(f"{row['mean_ovl']:.3f} / {row['per_call']['mean_ovl']:.3f}")
            print(f"{version:8} {noise:>4g}  " + "  ".join(f"{cell:>18}" for cell in cells))
        print()
        for reading in ("mean", "call"):
            (root / "thresholds.yaml").write_text(f"systemone:\n  reading: {reading}\n", encoding="utf-8")
            for version in ("v2", "v3"):
                done = pytest_run(root, *common, f"--sys1cal-model-version={version}", "--sys1cal-baseline=v1")
                line = next(line for line in done.stdout.splitlines() if line.startswith("upgrade "))
                print(f"reading: {reading:4}  exit {done.returncode}  {line.split(' [baseline', 1)[0]}")


if __name__ == "__main__":
    main()
