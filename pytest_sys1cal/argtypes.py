"""Number parsers for command-line values (pytest options and `python -m pytest_sys1cal` commands alike):
each raises argparse.ArgumentTypeError with a message argparse shows as a clean usage error."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive whole number")
    return value


# The most samples per rendering a run asks: 10× the paper's 10 (the bundled set's 365 renderings × 100 repeats is
# 36,500 requests). Past that the repeat noise of a rendering's mean is already far below its spread between
# renderings, so more repeats buy nothing the gates can see (docs/recording.md); 1,000,000 is a typo.
MAX_REPEATS = 100


def repeat_count(text: str) -> int:
    """--sys1cal-repeats: a whole number from 1 to MAX_REPEATS, refused before anything is priced or sent."""
    value = positive_int(text)
    if value > MAX_REPEATS:
        raise argparse.ArgumentTypeError(
            f"{value:,} repeats is more than the {MAX_REPEATS} a run may ask: each repeat asks every rendering again "
            f"({value:,} × 365 = {value * 365:,} requests for the bundled dataset), and past {MAX_REPEATS} the "
            "repeat noise is far below what the gates can see; ask at most that"
        )
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0 or value == float("inf"):  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number ≥ 0")
    return value


def positive_float(text: str) -> float:
    value = non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def open_probability(text: str) -> float:
    """A number strictly between 0 and 1 (a level, a power, a drop)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, got {value}")
    return value


def shard_spec(text: str) -> str:
    """--sys1cal-shard: ``I/N`` (1 ≤ I ≤ N), kept as its text (shards.Shard.parse reads it again)."""
    from .shards import Shard, ShardError

    try:
        return Shard.parse(text).spec
    except ShardError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
