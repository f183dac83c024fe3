"""The store's vcrpy side: loading and saving `vcr.cassette.Cassette` objects, the request matcher that
keeps Choice option order, and replay through vcrpy's matchers that says why a request missed. A replay comes
through one door, `matched`; the recording engine loads, plays and saves cassettes through the others."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vcr import matchers
from vcr.cassette import Cassette
from vcr.record_mode import RecordMode
from vcr.request import Request as VcrRequest
from vcr.serialize import serialize
from vcr.serializers import jsonserializer

from ..files import write_atomic
from .cassette import CassetteMiss, Damaged, recorded_response

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ..dataset import Rendering
    from ..models.base import WireRequest, WireResponse
    from .folder import CassetteFolder


class AtomicPersister:
    """vcrpy's filesystem persister, but an interrupted save never leaves a truncated cassette."""

    @staticmethod
    def load_cassette(cassette_path: str | Path, serializer: Any) -> Any:
        from vcr.persisters.filesystem import FilesystemPersister

        return FilesystemPersister.load_cassette(cassette_path, serializer)

    @staticmethod
    def save_cassette(cassette_path: str | Path, cassette_dict: Mapping[str, Any], serializer: Any) -> None:
        write_atomic(Path(cassette_path), serialize(cassette_dict, serializer))


def _canonical(value: Any, keep_order: bool = False) -> Any:
    """JSON for matching: object key order is irrelevant except inside `criteria`, where the order of
    Choice options is part of the question (a swapped Choice must never replay the unswapped answer)."""
    if isinstance(value, dict):
        pairs = [(key, _canonical(item, keep_order=key == "criteria")) for key, item in value.items()]
        return pairs if keep_order else sorted(pairs, key=lambda pair: pair[0])
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    return value


@functools.lru_cache(maxsize=4096)
def _canonical_body(body: bytes | str | None) -> Any:
    # Cached: every repeat of a rendering sends the same bytes, and vcrpy matches each request twice.
    try:
        return _canonical(json.loads(body or b"null"))
    except ValueError:
        return body


def json_body(r1: VcrRequest, r2: VcrRequest) -> None:
    if r1.body == r2.body:  # the common case on replay: the same bytes as recorded
        return
    if _canonical_body(r1.body) != _canonical_body(r2.body):
        raise AssertionError("request bodies differ (JSON, Choice option order significant)")


# Host and port are left out on purpose: a cassette recorded against one server origin (or a
# random-port local mock) must replay anywhere.
MATCH_ON = (matchers.method, matchers.path, json_body)


def load_cassette(folder: CassetteFolder, rendering: Rendering) -> Cassette:
    return Cassette.load(
        path=str(folder.path_for(rendering)),
        serializer=jsonserializer,
        persister=AtomicPersister,
        record_mode=RecordMode(folder.record_mode),
        match_on=MATCH_ON,
        # Scrubbing is for what gets written; a replay writes nothing (and the files on disk were scrubbed
        # when they were recorded).
        before_record_request=folder.scrub.request if folder.recording else None,
        before_record_response=folder.scrub.response if folder.recording else None,
        allow_playback_repeats=False,  # repeats replay in recorded order, once each
    )


def matched(folder: CassetteFolder, rendering: Rendering) -> Callable[[WireRequest], WireResponse]:
    """Replay's one door to vcrpy: the rendering's cassette loaded (Damaged when it cannot be read as one), and
    what answers each request through vcrpy's matchers, in recorded order (CassetteMiss, saying why, for a
    request that no recording answers: a replay never records)."""
    try:
        cassette = load_cassette(folder, rendering)
    except Exception as exc:  # noqa: BLE001 - vcrpy raises whatever its parser met; all mean "damaged"
        raise Damaged() from exc

    def answer(request: WireRequest) -> WireResponse:
        found = replay(cassette, VcrRequest(request.method, request.url, request.content(), dict(request.headers)))
        assert found is not None  # a replay may not record: a request no recording answers raises CassetteMiss
        return recorded_response(found)

    return answer


def playable(cassette: Cassette, request: WireRequest) -> bool:
    """Whether the cassette holds an unplayed recording of `request`; if so it is played (so the next
    repeat of the same request looks for the next recording)."""
    vcr_request = VcrRequest(request.method, request.url, request.content(), dict(request.headers))
    if not cassette.can_play_response_for(vcr_request):
        return False
    cassette.play_response(vcr_request)
    return True


def save_cassette(cassette: Cassette) -> None:
    """Persist new interactions. The one private vcrpy call the plugin makes lives here."""
    if cassette.dirty:
        cassette._save(force=True)


def replay(cassette: Cassette, vcr_request: VcrRequest, can_record: bool = False) -> dict[str, Any] | None:
    """The recorded response (vcrpy's dict); None when the request may go to the network (`can_record` and
    the cassette is not write-protected); else CassetteMiss, saying why."""
    if cassette.can_play_response_for(vcr_request):
        return cassette.play_response(vcr_request)
    if can_record and not cassette.write_protected:
        return None
    path = cassette.path
    if not Path(path).is_file():
        raise CassetteMiss(f"no cassette {path}")
    played, total = cassette.play_count, len(cassette)
    raise CassetteMiss(
        f"{path} holds no unplayed recording of this request ({total} recorded, {played} already played)"
        f"{_closest(cassette, vcr_request)}"
    )


def _closest(cassette: Cassette, vcr_request: VcrRequest) -> str:
    """Why the most similar recorded request did not match: vcrpy's own matcher messages."""
    best = cassette.find_requests_with_most_matches(vcr_request)
    if not best:
        return ""
    _request, _succeeded, failed = best[0]
    if not failed:
        return "; the matching recordings were all played already (fewer repeats recorded than asked?)"
    reasons = "; ".join(
        f"{name}: {str(message).splitlines()[0] if str(message) else 'differs'}" for name, message in failed
    )
    return f"; the closest recorded request differs in {reasons}"
