"""Issue 2's speed target: the full offline run against 365 trivial parametrized tests, side by side.

    python bench/bench_replay.py [--rounds N]

Both are real `python -m pytest` processes started the same way on the same machine (start-up
included), interleaved round by round so machine noise hits both alike; the ratio of medians is
printed. Target: at most 2.0.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TRIVIAL = """
import pytest

@pytest.mark.parametrize("i", range(365))
def test_trivial(i):
    assert i >= 0
"""


def timed(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=cwd, capture_output=True
    )
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"pytest {' '.join(args)} failed:\n{result.stdout.decode()[-2000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as tmp:
        trivial_dir = Path(tmp)
        (trivial_dir / "test_trivial.py").write_text(TRIVIAL)
        # One untimed run of each first: imports then come from warm bytecode caches, as in daily use.
        timed(["--sys1cal", "--model", "jev"], REPO)
        timed(["test_trivial.py"], trivial_dir)
        sys1cal, trivial = [], []
        for _ in range(rounds):
            sys1cal.append(timed(["--sys1cal", "--model", "jev"], REPO))
            trivial.append(timed(["test_trivial.py"], trivial_dir))
    a, b = statistics.median(sys1cal), statistics.median(trivial)
    print(
        f"full offline run, 365 renderings : median {a:.3f} s over {rounds} runs ({', '.join(f'{t:.2f}' for t in sys1cal)})"
    )
    print(
        f"365 trivial parametrized tests   : median {b:.3f} s over {rounds} runs ({', '.join(f'{t:.2f}' for t in trivial)})"
    )
    print(f"ratio                            : {a / b:.2f} (target <= 2.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
