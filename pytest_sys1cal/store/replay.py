"""Replaying a rendering from its cassette's bytes, without vcrpy's objects: the common case of a replay, where
every request is byte-equal to a recorded one. The replay cache (replay_cache.py) answers where it may;
anything else parses the cassette, checks its answers against the manifest's digests and fills the cache. A
request that is not byte-equal to a recording is left to vcrpy's matchers (vcrpy_side.py), which say why it
has no recording."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..errors import MeasurementError
from . import answers
from .cassette import AnswersChanged, Damaged, Recorded, cassette_name, read_bytes, recorded_response
from .replay_cache import NO_DIGESTS, ReplayCache, entry_key

if TYPE_CHECKING:
    from ..codec import Codec, Requests, Row
    from ..dataset import Rendering
    from ..models.base import WireRequest, WireResponse
    from .folder import CassetteFolder

# One cached row in AUDIT is also derived from its cassette, chosen unpredictably, and compared: an entry that
# disagrees was not derived from those bytes by this plugin, and stops the run (docs/cassettes.md).
AUDIT = 16


class CacheDisagrees(MeasurementError):
    """A replay cache entry that is not what its cassette gives (fatal: the rows already read may be forged)."""


class CassetteReplay:
    """One folder's cassettes replayed from their bytes for the codec's questions and repeats, through the
    replay cache once `use_cache` has given it one."""

    def __init__(self, folder: CassetteFolder, codec: Codec):
        self.folder = folder
        self.codec = codec
        self.cache: ReplayCache | None = None

    def use_cache(self, root: Path | None) -> None:
        """Take rows from, and leave them in, the replay cache under `root` (None: no cache; nor is there one for
        an adapter without a stamp, codec.py)."""
        self.close()
        codec = self.codec
        stamp, stamp_key = codec.stamp, codec.stamp_key
        if root is None or stamp is None or stamp_key is None:
            self.cache = None
        else:
            self.cache = ReplayCache(root, stamp, stamp_key, codec.repeats, codec.question_ids)

    def row(self, rendering: Rendering) -> Row:
        """The rendering's row; None when its cassette is missing or some request is not byte-equal to a
        recording (vcrpy's matchers decide). Raises Damaged, AnswersChanged, CacheDisagrees and the answers'
        own errors (measure.py words them)."""
        path = self.folder.file_for(rendering)
        try:
            data = read_bytes(path)
        except FileNotFoundError:
            return None
        requests = self.codec.requests(rendering)
        key = self._key(rendering, data, requests) if self.cache is not None else None
        cached = self.cache.row(rendering, key) if self.cache is not None and key is not None else None
        if cached is not None and secrets.randbelow(AUDIT):
            return cached
        row = self.derive(rendering, path, data, requests)
        if cached is not None and row != cached:
            assert self.cache is not None
            raise CacheDisagrees(
                f"{path}: the replay cache holds a row for it that is not what it replays as, so the cache was "
                f"written by something other than this plugin; delete {self.cache.folder} (or run pytest with "
                "--cache-clear) and replay again",
                fatal=True,
            )
        if self.cache is not None and key is not None and cached is None and row is not None:
            self.cache.add(key, row)
        return row

    def derive(self, rendering: Rendering, path: str, data: bytes, requests: Requests) -> Row:
        """The row the cassette's bytes (`data`) give, read in full; its answers checked against the manifest's
        digest before the row counts (or vcrpy's matchers replay the same file)."""
        try:
            recorded = Recorded(json.loads(data))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise Damaged() from exc

        def answer(request: WireRequest) -> WireResponse | None:
            found = recorded.take(request.method, urlsplit(request.url).path, request.content().decode("utf-8"))
            return None if found is None else recorded_response(found)

        row = self.codec.answered(rendering, answer, requests)  # a cassette without the shape of one: Damaged
        changed = answers.changed(self.folder.manifest, cassette_name(rendering), recorded)
        if changed is not None:
            raise AnswersChanged(changed)
        return row

    def _key(self, rendering: Rendering, data: bytes, requests: Requests) -> str | None:
        """The cache key of the cassette's entry; None when the manifest keeps digests but none of this cassette
        (its replay is refused: no entry may stand in for it)."""
        digests = (self.folder.manifest or {}).get(answers.ANSWERS)
        digest = NO_DIGESTS if digests is None else digests.get(cassette_name(rendering))
        return None if digest is None else entry_key(data, requests, digest)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.flush()
