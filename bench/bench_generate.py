"""Issue 7's speed target: generating 1,000 and 10,000 latent problems takes seconds.

    python bench/bench_generate.py [--seed S]

For each size it prints the time to build the records in memory and the time to write the JSONL file
(generation plus serialisation and hashing, which is what `python -m pytest_sys1cal generate` does).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Run from a checkout without installing the package.
sys.path.insert(0, str(REPO))

from pytest_sys1cal.generate import generate, write_dataset  # noqa: E402

SIZES = (1_000, 10_000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        for problems in SIZES:
            start = time.perf_counter()
            records = generate(args.seed, problems)
            in_memory = time.perf_counter() - start
            del records  # so the file run starts from the same memory state

            path = Path(folder) / f"generated-{problems}.jsonl"
            start = time.perf_counter()
            written = write_dataset(path, args.seed, problems)
            to_file = time.perf_counter() - start
            megabytes = path.stat().st_size / 1e6
            print(
                f"{problems:>6} problems, {written.renderings:>6} renderings: records {in_memory:5.2f} s, "
                f"file {to_file:5.2f} s ({megabytes:.0f} MB)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
