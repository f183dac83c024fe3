"""`python -m pytest_sys1cal merge SHARD_DIR... --into cassettes/<model>/<version>`: the folders that the shards
of one recording wrote (each a run with --sys1cal-shard=I/N, on a machine of its own) joined into one version
folder with one manifest, as one machine recording them all would have left it. Every check comes first (the
shards as one partition of one recording, none missing or overlapping, each share whole, every cassette's
answers as its shard recorded them): a refusal is one line naming the shard and the field, exit 4, and nothing
written. docs/recording.md, "Recording on many machines"."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from ..errors import EXIT_INPUT, InputError


def _usage_error(message: str) -> NoReturn:
    print(f"error: merge: {message}", file=sys.stderr)
    raise SystemExit(EXIT_INPUT)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.error = _usage_error  # type: ignore[method-assign]  # one line and exit 4, like every usage error
    parser.add_argument(
        "shards",
        nargs="+",
        type=Path,
        metavar="SHARD_DIR",
        help="each shard's folder: the version folder its run recorded into (holding shard.json), or a folder "
        "with one such folder below it (a downloaded artifact)",
    )
    parser.add_argument(
        "--into",
        type=Path,
        required=True,
        metavar="DIR",
        help="the version folder to write, <cassette root>/<model>/<version>; one that exists is completed where "
        "its manifest lacks a cassette",
    )


def main(args: argparse.Namespace) -> int:
    from ..store.merge import merge

    try:
        merged = merge(args.shards, args.into)
    except InputError as exc:
        print(f"error: merge: {exc}", file=sys.stderr)
        return EXIT_INPUT
    kept = f", {merged.kept} kept as the folder had them" if merged.kept else ""
    print(
        f"merged {merged.shards} shards into {merged.folder}: {merged.written} cassettes written{kept}; its manifest "
        f"lists {merged.listed}, every answer's digest checked against its shard's"
    )
    if merged.rounds is None:
        print(f"replay and gate it: {merged.replay}")
        return 0
    held, total, problems = merged.rounds
    print(
        f"it holds {held} of {total} rounds whole ({problems} latent problems); look at them with the replay, adding "
        f"--sys1cal-baseline=VERSION (the version you upgrade from): {merged.replay}"
    )
    if merged.next_round is not None:
        print(
            f"if that look decides nothing, record round {held + 1} on every shard with its own command again "
            f"({merged.next_round}), then merge again"
        )
    return 0
