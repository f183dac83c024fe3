"""Reading a response body within the size limit: streamed as it arrives, decompressed as it arrives with a
bound on each step (zlib's `max_length`), and cut the moment it passes the limit, so memory stays bounded
whatever the server sends: a 200 MB body is dropped after the first megabyte, a gzip bomb (1 MB inflating to
1 GB) after the first megabyte it inflates to, never after. Only the encodings the recording asks for
(``Accept-Encoding: gzip, deflate``) are decoded; any other is refused, since it cannot be bounded here."""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterable

from ..errors import MeasurementError

ACCEPT_ENCODING = "gzip, deflate"
_GZIP_WBITS = 16 + zlib.MAX_WBITS


class BodyRefused(MeasurementError):
    """A body the recording will not keep (too large, or in an encoding it did not ask for); never stored."""


def size_text(count: int) -> str:
    """Bytes as a person reads them: ``1,000,000 bytes (1 MB)``."""
    if count >= 1_000_000:
        return f"{count:,} bytes ({count / 1e6:g} MB)"
    return f"{count:,} bytes"


class _Inflater:
    """One content coding undone, never producing more than `room` bytes per call."""

    def __init__(self, coding: str):
        self.coding = coding
        self._raw_deflate_tried = False
        self._zlib = zlib.decompressobj(_GZIP_WBITS if coding in ("gzip", "x-gzip") else zlib.MAX_WBITS)
        self._first = True

    def inflate(self, data: bytes, room: int) -> tuple[bytes, bytes]:
        """(output of at most room + 1 bytes, input still to inflate)."""
        try:
            out = self._zlib.decompress(data, room + 1)
        except zlib.error:
            if self.coding != "deflate" or not self._first:
                raise
            # Servers send "deflate" both zlib-wrapped (RFC 9110) and raw; httpx accepts both, and so does this.
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._zlib.decompress(data, room + 1)
        self._first = False
        return out, self._zlib.unconsumed_tail

    def flush(self) -> bytes:
        return self._zlib.flush()


class LimitedBody:
    """Collects one body: `feed` the raw bytes as they arrive, `content` at the end. Raises BodyRefused as soon as
    the raw or the decoded bytes pass `limit` (or the declared Content-Length already does)."""

    def __init__(self, limit: int, content_encoding: str | None, content_length: str | None, url: str):
        self.limit, self.url = limit, url
        codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        unknown = [c for c in codings if c not in ("gzip", "x-gzip", "deflate")]
        if unknown:
            raise BodyRefused(
                f"the answer from {url} is encoded as {', '.join(unknown)}, which the recording did not ask for "
                f"(it sends Accept-Encoding: {ACCEPT_ENCODING}) and cannot read within its size limit; refused"
            )
        self._stages = [_Inflater(coding) for coding in reversed(codings)]  # the last coding applied comes off first
        self._raw = 0
        self._parts: list[bytes] = []
        self._size = 0
        text = (content_length or "").strip()
        declared = int(text) if text.isdigit() else None
        if declared is not None and declared > limit:
            self._refuse(f"its Content-Length says {size_text(declared)}")

    def feed(self, chunk: bytes) -> None:
        self._raw += len(chunk)
        if self._raw > self.limit:
            self._refuse(f"more than {size_text(self.limit)} arrived" + (" compressed" if self._stages else ""))
        self._push(0, chunk)

    def _push(self, stage: int, data: bytes) -> None:
        if stage == len(self._stages):
            self._keep(data)
            return
        inflater = self._stages[stage]
        while data:
            try:
                out, data = inflater.inflate(data, self.limit - self._size)
            except zlib.error as exc:
                raise BodyRefused(f"the answer from {self.url} is not valid {inflater.coding} data ({exc})") from None
            if not out and data:  # cannot happen with room ≥ 0; guards the loop
                break
            self._push(stage + 1, out)

    def _keep(self, data: bytes) -> None:
        self._size += len(data)
        if self._size > self.limit:
            what = "it decompressed to more than" if self._stages else "more than"
            self._refuse(f"{what} {size_text(self.limit)}")
        if data:
            self._parts.append(data)

    def content(self) -> bytes:
        for stage, inflater in enumerate(self._stages):
            try:
                self._push(stage + 1, inflater.flush())
            except zlib.error as exc:
                raise BodyRefused(f"the answer from {self.url} is not valid {inflater.coding} data ({exc})") from None
        return b"".join(self._parts)

    def _refuse(self, what: str) -> None:
        self._parts.clear()
        raise BodyRefused(
            f"the answer from {self.url} is larger than the {size_text(self.limit)} a response may have "
            f"({what}); refused before anything was stored (--sys1cal-max-response-mb raises the limit)"
        )


async def read_limited(
    stream: AsyncIterable[bytes], limit: int, content_encoding: str | None, content_length: str | None, url: str
) -> bytes:
    """The whole body of a response stream, decoded, within `limit` bytes (BodyRefused otherwise)."""
    body = LimitedBody(limit, content_encoding, content_length, url)
    async for chunk in stream:
        body.feed(chunk)
    return body.content()
