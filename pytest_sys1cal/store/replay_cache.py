"""The replay cache: what replaying each cassette gave, kept outside every version folder (under pytest's cache
dir), so that a replay of a large folder hashes each cassette's bytes instead of parsing and checking them
(docs/cassettes.md, "The replay cache").

A cache, never evidence. An entry is a memo of one cassette's replay, keyed by everything its row depends on:
the sha256 of the cassette's bytes, of the run's requests and the manifest's digest of its answers, under a
folder named by the digest of the stamp (the plugin version, the digest of its source and of the adapter's,
the adapter and its settings, the questions and repeats: codec.py). A row read from it is checked like a
parsed answer (`checked_samples`, `checked_packed`); an entry that is torn, out of range, or disagrees with
another entry for the same key is not used, and the replay reads the cassette as without a cache
(store/replay.py, which also audits one cached row in AUDIT against its cassette).

Concurrency: each process appends nothing to a shared file. It writes the entries it derived as one segment of
its own (atomically: a temporary file and a rename), and reads every segment there is; two xdist workers
filling the cache write two segments. Past MAX_SEGMENTS, a process that read them writes their union as one
and removes those it read (a segment it did not read is left alone)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import secrets
import shutil
import time
from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..files import write_atomic
from ..questions import SCORE
from ..results import Layout, ResultRow
from ..vocabulary import SCORE_LEVELS

if TYPE_CHECKING:
    from ..dataset import Rendering
    from ..models.base import WireRequest

CACHE_NAME = "sys1cal-replay"  # the folder under pytest's cache dir (config.cache.mkdir)
HEADER = "# sys1cal replay cache "  # a segment's first line, then its stamp as JSON
MAX_SEGMENTS = 8
STALE_DAYS = 14  # a stamp's folder that no replay has read or written for this long is removed
FLUSH_EVERY = 8192  # new entries held in memory before they are written as a segment
NO_DIGESTS = "-"  # the answers field of an entry for a folder whose manifest keeps no digests
SUM_TOLERANCE = 1e-9  # a cached distribution was renormalised by its parse: it sums to 1 but for rounding
_DOUBLE = array("d").itemsize


def requests_key(requests: Sequence[WireRequest]) -> str:
    """sha256 of one repeat's requests as replay compares them: method, path and body bytes, length-prefixed."""
    digest = hashlib.sha256()
    for request in requests:
        body = request.content()
        digest.update(f"{request.method} {urlsplit(request.url).path} {len(body)}\n".encode())
        digest.update(body)
    return digest.hexdigest()


def entry_key(data: bytes, requests: Sequence[WireRequest], answers: str) -> str:
    """The key of the entry for a cassette's bytes `data` answering `requests`, whose answers the manifest keeps
    the digest `answers` of (NO_DIGESTS: a manifest without digests)."""
    return f"{hashlib.sha256(data).hexdigest()}\t{requests_key(requests)}\t{answers}"


class ReplayCache:
    """The entries of one stamp (loaded on the first lookup, each kept as its line's text until its cassette is
    replayed), and the entries this process derived, written as one segment when it ends."""

    def __init__(self, root: Path, stamp: Mapping[str, Any], stamp_key: str, repeats: int, questions: Sequence[str]):
        self.root = root
        self.folder = root / stamp_key[:32]
        self._header = HEADER + json.dumps(dict(stamp), sort_keys=True, separators=(",", ":"))
        self._repeats = repeats
        self._questions = tuple(questions)
        self._entries: dict[str, str] | None = None
        self._new: list[str] = []

    def row(self, rendering: Rendering, key: str) -> ResultRow | None:
        """The cached row of the cassette with entry `key`, if there is one and it passes the checks of a parsed
        answer; else None (the entry is dropped either way: a rendering is replayed once)."""
        if self._entries is None:
            self._entries = self._load()
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        try:
            return self._row(rendering, entry)
        except (ValueError, TypeError, KeyError):
            return None

    def add(self, key: str, row: ResultRow) -> None:
        """Remember the row a cassette's replay gave (written by `flush`)."""
        if row.values is not None:
            layout, samples = ",".join(f"{name}:{count}" for name, count in row.layout), row.values.hex()
        else:
            layout, samples = "-", row.samples_json or "[]"
        self._new.append(f"{key}\t{json.dumps(row.server_model)}\t{layout}\t{samples}")
        if len(self._new) >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        """Write the entries derived since the last flush as a segment of this process's own; a cache that cannot
        be written is left as it is (the next replay reads the cassettes again)."""
        if not self._new:
            return
        text = "\n".join([self._header, *self._new]) + "\n"
        self._new = []
        with contextlib.suppress(OSError):
            write_atomic(self.folder / f"{os.getpid()}-{secrets.token_hex(4)}.tsv", text)
        self._prune()

    def _prune(self) -> None:
        """Remove the other stamps' folders that no replay has used for STALE_DAYS: every edit of the plugin's
        source, upgrade or new adapter setting starts a stamp, and nothing else would ever remove the old ones."""
        stale = time.time() - STALE_DAYS * 86400
        with contextlib.suppress(OSError):
            for other in self.root.iterdir():
                named = len(other.name) == 32 and all(c in "0123456789abcdef" for c in other.name)  # a stamp's
                if named and other != self.folder and other.is_dir() and other.stat().st_mtime < stale:
                    shutil.rmtree(other, ignore_errors=True)

    def _load(self) -> dict[str, str]:
        """Every entry of every segment written for this stamp; a key two segments disagree on is left out."""
        entries: dict[str, str] = {}
        disputed: set[str] = set()
        read: list[Path] = []
        try:
            segments = sorted(path for path in self.folder.glob("*.tsv") if not path.name.startswith("."))
            if segments:
                os.utime(self.folder)  # used: its mtime is what tells a stale stamp (`_prune`)
        except OSError:
            return entries
        for path in segments:
            try:
                lines = path.read_bytes().decode("utf-8").split("\n")
            except (OSError, UnicodeDecodeError):
                continue
            if lines[0] != self._header:
                continue  # another stamp's, or not a segment at all
            read.append(path)
            for line in lines[1:]:
                file_sha, _, rest = line.partition("\t")
                requests_sha, _, rest = rest.partition("\t")
                answers, _, value = rest.partition("\t")
                if not value:
                    continue  # a torn or empty line
                key = f"{file_sha}\t{requests_sha}\t{answers}"
                if entries.setdefault(key, value) != value:
                    disputed.add(key)
        for key in disputed:
            del entries[key]
        if len(read) > MAX_SEGMENTS:
            self._compact(read, entries)
        return entries

    def _compact(self, read: list[Path], entries: Mapping[str, str]) -> None:
        lines = [f"{key}\t{value}" for key, value in sorted(entries.items())]
        with contextlib.suppress(OSError):
            write_atomic(self.folder / f"{os.getpid()}-{secrets.token_hex(4)}.tsv", "\n".join([self._header, *lines]))
            for path in read:
                path.unlink(missing_ok=True)

    def _row(self, rendering: Rendering, entry: str) -> ResultRow | None:
        server_json, layout_text, samples_text = entry.split("\t")
        server_model = json.loads(server_json)
        if server_model is not None and not isinstance(server_model, str):
            return None
        if layout_text == "-":
            if not checked_samples(json.loads(samples_text), self._repeats, self._questions):
                return None
            return ResultRow(rendering.instance_id, samples_text, server_model)
        layout = _layout(layout_text)
        values = bytes.fromhex(samples_text)
        if not checked_packed(layout, values, self._repeats, self._questions):
            return None
        return ResultRow.packed(rendering, layout, values, server_model)


@functools.lru_cache(maxsize=64)
def _layout(text: str) -> Layout:
    """A packed row's layout from its text, ``key:count,…`` (a cache holds a few distinct ones)."""
    return tuple((key, int(count)) for key, _, count in (part.rpartition(":") for part in text.split(",")))


def checked_samples(samples: Any, repeats: int, questions: Sequence[str]) -> bool:
    """Whether `samples` could be what parsing `repeats` repeats of answers to `questions` gave: one sample per
    repeat, each answering every question with a probability (a finite float in [0, 1]), the Score with a
    distribution over its SCORE_LEVELS levels; any other value a probability or a list or object of them (a
    SemIf sample's coverage per question)."""
    if not isinstance(samples, list) or len(samples) != repeats:
        return False
    for sample in samples:
        if not isinstance(sample, dict) or not all(question in sample for question in questions):
            return False
        for key, value in sample.items():
            if key == SCORE:
                if not _distribution(value):
                    return False
            elif not (_probability(value) if key in questions else _probabilities(value)):
                return False
    return True


def checked_packed(layout: Layout, values: bytes, repeats: int, questions: Sequence[str]) -> bool:
    """checked_samples for samples packed as doubles (results.py), read off the numbers without unpacking them."""
    shape = _shape(layout, tuple(questions))
    if shape is None or len(values) != shape[0] * repeats * _DOUBLE:
        return False
    numbers = array("d", values)
    # One sum finds a NaN or an infinity (NaN is no number's bound), then the bounds; each Score a distribution.
    if not math.isfinite(sum(numbers)) or min(numbers) < 0.0 or max(numbers) > 1.0:
        return False
    width, score = shape
    if score is not None:
        for start in range(score, len(numbers), width):
            if abs(math.fsum(numbers[start : start + SCORE_LEVELS]) - 1.0) > SUM_TOLERANCE:
                return False
    return True


@functools.lru_cache(maxsize=64)
def _shape(layout: Layout, questions: tuple[str, ...]) -> tuple[int, int | None] | None:
    """(doubles per sample, where the Score's begin in one) when `layout` could be a parse's of `questions`: every
    question once, each one number but the Score, its SCORE_LEVELS; None when it could not."""
    keys = [key for key, _ in layout]
    if not layout or len(set(keys)) != len(keys) or not all(question in keys for question in questions):
        return None
    for key, count in layout:
        if (key == SCORE or key in questions) and count != (SCORE_LEVELS if key == SCORE else 0):
            return None
    widths = [count or 1 for _, count in layout]
    return sum(widths), (sum(widths[: keys.index(SCORE)]) if SCORE in keys else None)


def _probability(value: Any) -> bool:
    return type(value) is float and 0.0 <= value <= 1.0  # NaN fails it


def _probabilities(value: Any) -> bool:
    """A probability, or a list or object of them."""
    if isinstance(value, list):
        return bool(value) and all(_probabilities(item) for item in value)
    if isinstance(value, dict):
        return bool(value) and all(_probabilities(item) for item in value.values())
    return _probability(value)


def _distribution(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == SCORE_LEVELS
        and all(_probability(item) for item in value)
        and abs(math.fsum(value) - 1.0) <= SUM_TOLERANCE
    )
