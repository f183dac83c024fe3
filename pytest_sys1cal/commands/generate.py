"""`python -m pytest_sys1cal generate --seed S --problems N --out FILE.jsonl`: the options, writing the dataset,
and the summary line (exit status 1 when the file cannot be written)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..argtypes import positive_int
from ..generate import write_dataset


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, required=True, help="dataset seed; the same seed gives the same bytes")
    parser.add_argument("--problems", type=positive_int, required=True, help="latent problems, split over 6 families")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE.jsonl", help="where to write the dataset")


def main(args: argparse.Namespace) -> int:
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
