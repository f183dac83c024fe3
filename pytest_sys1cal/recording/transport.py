"""The HTTP transport of recording: each request goes to its own rendering's cassette (passed in the
request's extensions), which replays it or, where the record mode allows, sends it and keeps a successful
answer, so renderings record concurrently (engine.py) while the files stay vcrpy's."""

from __future__ import annotations

from typing import Any

import httpx
from vcr.cassette import Cassette
from vcr.request import Request as VcrRequest

from ..models.base import is_success
from ..store.cassette import EXTENSION_KEY, INTERACTION_KEY, recorded_headers
from ..store.vcrpy_side import replay


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
    if not is_success(response.status_code):
        return None
    recorded = {
        "status": {"code": response.status_code, "message": response.reason_phrase},
        "headers": _recorded_headers(response),
        "body": {"string": response.content},
    }
    return vcr_request, recorded


class AsyncCassetteTransport(httpx.AsyncBaseTransport):
    """Replays from the request's cassette; sends to `inner` only where the record mode allows (with record
    mode none there is no inner transport: no socket can open). It does not append to the cassette itself:
    answers arrive in completion order, so the interaction to keep (2xx only) rides on the response
    (``extensions[INTERACTION_KEY]``) and the engine appends them in repeat order once the rendering is
    complete. Cassettes are plain objects touched only from the event loop's thread."""

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
