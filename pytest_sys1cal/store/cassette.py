"""The cassette file format: one vcrpy JSON cassette per rendering (the folder that holds them and its
manifest: store/folder.py). Replay reads a cassette as plain JSON (`Recorded`); vcrpy's objects and
matchers (store/vcrpy_side.py) and the HTTP transports that record (recording/transport.py) are imported only when
a run needs them, so a replay pays for neither. ``vcr.use_cassette(path, serializer="json")`` reads every file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import MeasurementError
from ..models.base import WireResponse

if TYPE_CHECKING:
    from vcr.request import Request as VcrRequest

    from ..dataset import Rendering
    from ..redact import Redactor

EXTENSION_KEY = "sys1cal_cassette"
INTERACTION_KEY = "sys1cal_interaction"
# Headers that carry or may carry credentials, matched case-insensitively on the name.
SECRET_HEADER = re.compile(r"authorization|cookie|api[-_]?key|token|secret|session|signature|credential|password", re.I)


class Scrubber:
    """What a recording writes, made safe (vcrpy calls it before a request or a response is kept): no header
    whose name looks secret or holds a secret, and the run's secrets (redact.py) in no header value, URI,
    reason phrase or body, URL credentials in none (docs/cassettes.md)."""

    def __init__(self, redactor: Redactor):
        self.redactor = redactor

    def request(self, request: VcrRequest) -> VcrRequest:
        headers = self.headers({name: [value] for name, value in request.headers.items()})
        request.headers = {name: values[0] for name, values in headers.items()}
        request.uri = self.redactor.url(request.uri)
        if isinstance(request.body, bytes):
            request.body = self.redactor.bytes(request.body)
        return request

    def response(self, response: dict[str, Any]) -> dict[str, Any]:
        response["headers"] = self.headers(response["headers"])
        status = response.get("status") or {}
        if isinstance(status.get("message"), str):
            status["message"] = self.redactor.text(status["message"])
        body = response["body"]["string"]
        response["body"]["string"] = self.redactor.bytes(body) if isinstance(body, bytes) else self.redactor.text(body)
        return response

    def headers(self, headers: Mapping[str, Sequence[Any]]) -> dict[str, list[str]]:
        """Without those whose name looks secret or holds a secret (a server may echo the key as a header's
        name, which httpx lower-cases), every value redacted."""
        redact = self.redactor.text
        return {
            name: [redact(str(value)) for value in values]
            for name, values in headers.items()
            if not SECRET_HEADER.search(name) and redact(name) == name
        }


class CassetteMiss(MeasurementError):
    """A request that replay cannot answer; the message names the cassette file."""


class Damaged(MeasurementError):
    """A cassette without the shape of one: not JSON, or an interaction that is not (raised from the error that
    found it, which the item's one line names)."""

    def __init__(self) -> None:
        super().__init__("not a readable cassette")


class AnswersChanged(MeasurementError):
    """A cassette whose answers are not the ones the manifest records (the message says how they differ)."""


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

    @property
    def responses(self) -> Sequence[dict[str, Any]]:
        """The recorded responses, in order (what `answers_digest` reads)."""
        return self._responses

    @classmethod
    def read(cls, path: str) -> Recorded:
        """Raises FileNotFoundError, or ValueError/KeyError/TypeError for a file that is not a cassette."""
        return cls(json.loads(read_bytes(path)))

    def take(self, method: str, path: str, body: str) -> dict[str, Any] | None:
        """The first unplayed response recorded for exactly this request, marked played; None if none is."""
        for index, (m, p, b) in enumerate(self._requests):
            if b == body and m == method and p == path and not self._played[index]:
                self._played[index] = True
                return self._responses[index]
        return None


def cassette_name(rendering: Rendering) -> str:
    """Where a rendering's cassette is filed under its version folder, ``<family>/<instance id>.json`` (the
    manifest's `answers` are keyed by it)."""
    return f"{rendering.family}/{rendering.short_id}.json"


def recorded_headers(recorded: dict[str, Any]) -> list[tuple[str, str]]:
    return [(name, value) for name, values in recorded["headers"].items() for value in values]


def recorded_response(recorded: dict[str, Any]) -> WireResponse:
    """A recorded response (vcrpy's dict) as the adapters read it; Damaged when it has not the shape of one."""
    try:
        body = recorded["body"]["string"]
        content = body.encode("utf-8") if isinstance(body, str) else body
        return WireResponse(recorded["status"]["code"], dict(recorded_headers(recorded)), content)
    except (KeyError, TypeError, AttributeError) as exc:
        raise Damaged() from exc


def read_bytes(path: str) -> bytes:
    """A small file's bytes through the os calls alone: a replay reads one per rendering, and a buffered file
    object's set-up costs about as much as the read."""
    handle = os.open(path, _READ_FLAGS)
    try:
        chunks = []
        while chunk := os.read(handle, _CHUNK):  # until end of file: a read may return less than asked
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(handle)


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0)  # O_BINARY: no newline translation on Windows
_CHUNK = 1 << 14  # a cassette is 5–10 KB: one read and the one that finds the end
