"""The VCR store: one vcrpy JSON cassette per rendering, a manifest per model version, atomic writes.

vcrpy's ``use_cassette`` patches httpx globally and serves one cassette at a time, which would
serialise recording. Instead the plugin owns an httpx transport that routes each request to its own
rendering's `vcr.cassette.Cassette` (passed in the request's extensions), using vcrpy's matching and
file format, so requests for different renderings can run concurrently and the files stay readable by
``vcr.use_cassette(..., serializer="json")``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from vcr import matchers
from vcr.cassette import Cassette
from vcr.record_mode import RecordMode
from vcr.request import Request as VcrRequest
from vcr.serialize import serialize
from vcr.serializers import jsonserializer

from .dataset import Rendering
from .files import write_atomic
from .manifest import MANIFEST, read_manifest
from .vocabulary import MANIFEST_SCHEMA, RECORD_MODES

EXTENSION_KEY = "sys1cal_cassette"
INTERACTION_KEY = "sys1cal_interaction"
REDACTED = "<REDACTED>"
# Headers that carry or may carry credentials, matched case-insensitively on the name.
SECRET_HEADER = re.compile(r"authorization|cookie|api[-_]?key|token|secret|session|signature|credential|password", re.I)


class CassetteMiss(Exception):
    """A request that replay cannot answer; the message names the cassette file."""


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


class CassetteStore:
    """Cassette files of one model version: paths, loading, saving, the manifest."""

    def __init__(self, root: Path, model: str, version: str, record_mode: str, secrets: Iterable[str] = ()):
        if record_mode not in RECORD_MODES:
            raise ValueError(f"record mode {record_mode!r} is not one of {', '.join(RECORD_MODES)}")
        self.root = root
        self.model, self.version = model, version
        self.folder = root / model / version
        self.record_mode = record_mode
        self._secrets = [s for s in secrets if s]

    def path_for(self, rendering: Rendering) -> Path:
        return self.folder / rendering.family / f"{rendering.short_id}.json"

    def open(self, rendering: Rendering) -> Cassette:
        return Cassette.load(
            path=str(self.path_for(rendering)),
            serializer=jsonserializer,
            persister=AtomicPersister,
            record_mode=RecordMode(self.record_mode),
            match_on=MATCH_ON,
            # Scrubbing is for what gets written; a replay-only store writes nothing (and the files on disk
            # were scrubbed when they were recorded).
            before_record_request=self._scrub_request if self.record_mode != "none" else None,
            before_record_response=self._scrub_response if self.record_mode != "none" else None,
            allow_playback_repeats=False,  # repeats replay in recorded order, once each
        )

    @staticmethod
    def save(cassette: Cassette) -> None:
        """Persist new interactions. The one private vcrpy call the plugin makes lives here."""
        if cassette.dirty:
            cassette._save(force=True)

    def read_manifest(self) -> dict[str, Any] | None:
        """The folder's validated manifest (manifest.py), None when there is none."""
        return read_manifest(self.folder / MANIFEST, self.model, self.version)

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        text = json.dumps({"schema": MANIFEST_SCHEMA, **manifest}, indent=2, sort_keys=True) + "\n"
        write_atomic(self.folder / MANIFEST, self._redact(text))

    def remove_empty_folder(self) -> None:
        """Undo a recording that saved nothing: the manifest it wrote, and the folders it left empty."""
        if any(self.folder.glob("*/*.json")):
            return
        (self.folder / MANIFEST).unlink(missing_ok=True)
        for directory in [*sorted(self.folder.glob("*/"), reverse=True), self.folder, self.folder.parent, self.root]:
            if directory.is_dir() and not any(directory.iterdir()):
                directory.rmdir()

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def _scrub_request(self, request: VcrRequest) -> VcrRequest:
        for name in list(request.headers):
            if SECRET_HEADER.search(name):
                del request.headers[name]
        return request

    def _scrub_response(self, response: dict[str, Any]) -> dict[str, Any]:
        response["headers"] = {k: v for k, v in response["headers"].items() if not SECRET_HEADER.search(k)}
        body = response["body"]["string"]
        if self._secrets and isinstance(body, bytes):
            for secret in self._secrets:
                body = body.replace(secret.encode(), REDACTED.encode())
            response["body"]["string"] = body
        return response


class Recorded:
    """A cassette read for replay only, without vcrpy's objects (building them is most of a replayed item's
    cost): its interactions as stored, each played once, in order. It answers a request whose method, path
    and body bytes equal a recorded one's, the common case; anything else is left to vcrpy's matchers."""

    __slots__ = ("_played", "_requests", "_responses")

    def __init__(self, data: Any):
        interactions = data["interactions"]
        requests = [interaction["request"] for interaction in interactions]
        self._requests = [(r["method"], urlsplit(r["uri"]).path, r["body"]) for r in requests]
        self._responses = [interaction["response"] for interaction in interactions]
        self._played = [False] * len(interactions)

    @classmethod
    def read(cls, path: Path) -> Recorded:
        """Raises FileNotFoundError, or ValueError/KeyError/TypeError for a file that is not a cassette."""
        return cls(json.loads(path.read_bytes()))

    def take(self, method: str, path: str, body: str) -> dict[str, Any] | None:
        """The first unplayed response recorded for exactly this request, marked played; None if none is."""
        for index, (m, p, b) in enumerate(self._requests):
            if b == body and m == method and p == path and not self._played[index]:
                self._played[index] = True
                return self._responses[index]
        return None


def recorded_headers(recorded: dict[str, Any]) -> list[tuple[str, str]]:
    return [(name, value) for name, values in recorded["headers"].items() for value in values]


def play_or_miss(cassette: Cassette, vcr_request: VcrRequest, can_record: bool) -> httpx.Response | None:
    """`replay` for the transports: the recorded response as an httpx response."""
    recorded = replay(cassette, vcr_request, can_record)
    if recorded is None:
        return None
    return httpx.Response(
        recorded["status"]["code"], headers=recorded_headers(recorded), content=recorded["body"]["string"]
    )


def to_vcr_request(request: httpx.Request) -> VcrRequest:
    return VcrRequest(request.method, str(request.url), request.content, dict(request.headers))


def replay(cassette: Cassette, vcr_request: VcrRequest, can_record: bool) -> dict[str, Any] | None:
    """The recorded response (vcrpy's dict), None when the request should go to the network, or CassetteMiss."""
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


# Response headers that change from one request to the next without saying anything about the answer.
# Dropped, so a resumed recording writes the same bytes as an uninterrupted one against a deterministic
# server; the manifest keeps the recording time. (Request ids such as x-typesafe-request-id are kept:
# they are what the vendor asks for when a recorded answer is questioned.)
VOLATILE_HEADERS = frozenset({"date"})
# The body is stored decoded, so the headers describing the encoding on the wire must go (or be
# corrected): a replayed `content-encoding: gzip` would make httpx decompress plain bytes.
_WIRE_ENCODING_HEADERS = frozenset({"content-encoding", "transfer-encoding"})


def _recorded_headers(response: httpx.Response) -> dict[str, list[str]]:
    encoded = any(name.lower() in _WIRE_ENCODING_HEADERS for name in response.headers)
    headers: dict[str, list[str]] = {}
    for name, value in response.headers.multi_items():
        lower = name.lower()
        if lower in VOLATILE_HEADERS or lower in _WIRE_ENCODING_HEADERS:
            continue
        if lower == "content-length" and encoded:
            value = str(len(response.content))
        headers.setdefault(name, []).append(value)
    return headers


def interaction(vcr_request: VcrRequest, response: httpx.Response) -> tuple[VcrRequest, dict[str, Any]] | None:
    """The (request, response) pair to keep; None for an error response, which never reaches a cassette."""
    if not 200 <= response.status_code < 300:
        return None
    recorded = {
        "status": {"code": response.status_code, "message": response.reason_phrase},
        "headers": _recorded_headers(response),
        "body": {"string": response.content},
    }
    return vcr_request, recorded


def record(cassette: Cassette, vcr_request: VcrRequest, response: httpx.Response) -> None:
    """Keep a successful interaction in the cassette."""
    kept = interaction(vcr_request, response)
    if kept is not None:
        cassette.append(*kept)


class CassetteTransport(httpx.BaseTransport):
    """Replays from the request's cassette; sends to `inner` and records only when the mode allows.

    With record mode ``none`` there is no inner transport at all, so replay cannot open a socket.
    """

    def __init__(self, inner: httpx.BaseTransport | None):
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        cassette: Cassette = request.extensions[EXTENSION_KEY]
        request.read()
        vcr_request = to_vcr_request(request)
        played = play_or_miss(cassette, vcr_request, self.inner is not None)
        if played is not None:
            return played
        assert self.inner is not None
        response = self.inner.handle_request(request)
        response.read()
        record(cassette, vcr_request, response)
        return response

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()


class AsyncCassetteTransport(httpx.AsyncBaseTransport):
    """The asyncio twin of `CassetteTransport`, for concurrent recording (recorder.py): same replay,
    same record-only-2xx rule. It does not append to the cassette itself: answers arrive in completion
    order, so the interaction to keep rides on the response (``extensions[INTERACTION_KEY]``) and the
    recorder appends them in repeat order once the rendering is complete. Cassettes are plain objects
    touched only from the event loop's thread."""

    def __init__(self, inner: httpx.AsyncBaseTransport | None):
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        cassette: Cassette = request.extensions[EXTENSION_KEY]
        await request.aread()
        vcr_request = to_vcr_request(request)
        played = play_or_miss(cassette, vcr_request, self.inner is not None)
        if played is not None:
            return played
        assert self.inner is not None
        response = await self.inner.handle_async_request(request)
        try:
            await response.aread()
        finally:
            await response.aclose()
        response.extensions[INTERACTION_KEY] = interaction(vcr_request, response)
        return response

    async def aclose(self) -> None:
        if self.inner is not None:
            await self.inner.aclose()
