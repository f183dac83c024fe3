"""The one redaction boundary: every string the plugin lets out of the process (terminal lines, failure
messages, JUnit XML, the JSON and HTML reports, the job summary, cassettes and manifests) passes through the
run's `Redactor`, which knows its secrets: the API key's value in any form a server may echo it (as set,
stripped, percent-encoded, JSON-escaped) and the credentials of a URL (``http://user:pw@host``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from urllib.parse import quote, unquote, urlsplit, urlunsplit

REDACTED = "<REDACTED>"
# user:password@ (or user@) after a scheme's //: the credentials part of any URL in a text.
_USERINFO = re.compile(r"(?<=//)[^/?#@\s\"'<>]+@")


class Redactor:
    """Replaces the run's secrets, in every form, by ``<REDACTED>``; strips credentials from URLs."""

    def __init__(self, secrets: Iterable[str | None] = (), urls: Iterable[str | None] = ()):
        values: set[str] = set()
        for secret in secrets:
            values |= _forms(secret)
        for url in urls:
            for part in _userinfo(url):
                values |= _forms(part)
        # Longest first, so a secret that contains another is replaced whole.
        self.secrets = tuple(sorted(values, key=lambda s: (-len(s), s)))
        self._bytes = tuple(s.encode("utf-8") for s in self.secrets)

    def text(self, text: str) -> str:
        text = _USERINFO.sub("", text)
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def bytes(self, data: bytes) -> bytes:
        data = _USERINFO.sub("", data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
        for secret in self._bytes:
            data = data.replace(secret, REDACTED.encode())
        return data

    def url(self, url: str) -> str:
        """The URL without its credentials (and with any secret in it redacted)."""
        return self.text(strip_userinfo(url))


def strip_userinfo(url: str) -> str:
    """``http://user:pw@host:8080/x`` → ``http://host:8080/x``; anything else unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return _USERINFO.sub("", url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _userinfo(url: str | None) -> list[str]:
    """The user name and password in a URL, as the secrets they are."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    return [p for p in (parts.username, parts.password) if p]


def _forms(secret: str | None) -> set[str]:
    """The forms a secret may be echoed in: as set, stripped, percent-encoded and decoded, JSON-escaped."""
    if not secret:
        return set()
    out = set()
    for value in {secret, secret.strip(), unquote(secret)}:
        if not value:
            continue
        out |= {value, quote(value, safe=""), json.dumps(value, ensure_ascii=True)[1:-1]}
        out.add(json.dumps(value, ensure_ascii=False)[1:-1])
    return {form for form in out if form}
