"""The HTTP transport of recording: each request goes to its own rendering's cassette (passed in the
request's extensions), which replays it or, where the record mode allows, sends it and keeps a successful
answer, so renderings record concurrently (engine.py) while the files stay vcrpy's; and the client the recording
sends with (its pool, proxy, encodings and redirect rule), which reads every answer within the size limit."""

from __future__ import annotations

from typing import Any

import httpx
from vcr.cassette import Cassette
from vcr.request import Request as VcrRequest

from ..models.base import is_success
from ..store.cassette import EXTENSION_KEY, INTERACTION_KEY, recorded_headers
from ..store.vcrpy_side import replay
from .body import ACCEPT_ENCODING, read_limited
from .policy import MAX_BODY_BYTES, Limits
from .proxies import Route


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


def _recorded_headers(headers: httpx.Headers, content: bytes) -> dict[str, list[str]]:
    encoded = any(name.lower() in _WIRE_ENCODING_HEADERS for name in headers)
    kept: dict[str, list[str]] = {}
    for name, value in headers.multi_items():
        lower = name.lower()
        if lower in VOLATILE_HEADERS or lower in _WIRE_ENCODING_HEADERS:
            continue
        if lower == "content-length" and encoded:
            value = str(len(content))
        kept.setdefault(name, []).append(value)
    return kept


def interaction(vcr_request: VcrRequest, response: httpx.Response) -> tuple[VcrRequest, dict[str, Any]] | None:
    """The (request, response) pair to keep; None for an error response, which never reaches a cassette.
    `response` is the one `fetch` returned: its body decoded, its wire headers in ``extensions``."""
    if not is_success(response.status_code):
        return None
    wire_headers = response.extensions.get(WIRE_HEADERS_KEY, response.headers)
    recorded = {
        "status": {"code": response.status_code, "message": response.reason_phrase},
        "headers": _recorded_headers(wire_headers, response.content),
        "body": {"string": response.content},
    }
    return vcr_request, recorded


WIRE_HEADERS_KEY = "sys1cal_wire_headers"


async def fetch(inner: httpx.AsyncBaseTransport, request: httpx.Request, max_body: int) -> httpx.Response:
    """Send `request` through `inner` and read the answer within `max_body` bytes (body.py: streamed, decoded
    as it arrives, cut at the limit). The response holds the decoded body, without the headers that described
    the encoding on the wire (kept, for the cassette, in ``extensions[WIRE_HEADERS_KEY]``)."""
    raw = await inner.handle_async_request(request)
    try:
        content = await read_limited(
            raw.stream,  # type: ignore[arg-type]
            max_body,
            raw.headers.get("content-encoding"),
            raw.headers.get("content-length"),
            str(request.url.copy_with(query=None)),
        )
    finally:
        await raw.aclose()
    headers = [
        (name, value)
        for name, value in raw.headers.multi_items()
        if name.lower() not in _WIRE_ENCODING_HEADERS and name.lower() != "content-length"
    ]
    extensions = {**raw.extensions, WIRE_HEADERS_KEY: raw.headers}
    return httpx.Response(raw.status_code, headers=headers, content=content, request=request, extensions=extensions)


class AsyncCassetteTransport(httpx.AsyncBaseTransport):
    """Replays from the request's cassette; sends to `inner` only where the record mode allows (with record
    mode none there is no inner transport: no socket can open). It does not append to the cassette itself:
    answers arrive in completion order, so the interaction to keep (2xx only) rides on the response
    (``extensions[INTERACTION_KEY]``) and the engine appends them in repeat order once the rendering is
    complete. Cassettes are plain objects touched only from the event loop's thread. A request without a
    cassette (the server's model list) goes straight to `inner`. Every answer that arrives is read within
    `max_body` bytes."""

    def __init__(self, inner: httpx.AsyncBaseTransport | None, max_body: int = MAX_BODY_BYTES):
        self.inner = inner
        self.max_body = max_body

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        cassette: Cassette | None = request.extensions.get(EXTENSION_KEY)
        await request.aread()
        if cassette is None:
            assert self.inner is not None
            return await fetch(self.inner, request, self.max_body)
        vcr_request = to_vcr_request(request)
        played = play_or_miss(cassette, vcr_request, self.inner is not None)
        if played is not None:
            return played
        assert self.inner is not None
        response = await fetch(self.inner, request, self.max_body)
        response.extensions[INTERACTION_KEY] = interaction(vcr_request, response)
        return response

    async def aclose(self) -> None:
        if self.inner is not None:
            await self.inner.aclose()


def make_client(limits: Limits, route: Route) -> httpx.AsyncClient:
    """The recording's HTTP client: a pool of `concurrency` connections (through the route's proxy, if any), the
    cassette transport on top, redirects never followed (a redirect could carry the key to another host: the
    answer is shown with its Location instead), and only the encodings body.py can bound."""
    n = limits.concurrency
    pool = httpx.AsyncHTTPTransport(
        limits=httpx.Limits(max_connections=n, max_keepalive_connections=n), proxy=route.proxy
    )
    return httpx.AsyncClient(
        transport=AsyncCassetteTransport(pool, limits.max_body),
        timeout=limits.timeout,
        follow_redirects=False,
        headers={"Accept-Encoding": ACCEPT_ENCODING},
    )
