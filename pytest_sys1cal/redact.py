"""The one redaction boundary: every string the plugin lets out of the process (terminal lines, failure
messages and tracebacks, JUnit XML, the JSON and HTML reports, the job summary, log records, cassettes and
manifests) passes through the run's `Redactor`, which knows its secrets: the API key's value and a URL's
password (or the user name of a URL that has no password, ``http://TOKEN@host``) and the Basic token made of
them, in every form a server or a traceback may show them, and the credentials part of any URL
(``http://user:pw@host`` → ``http://host``). Matching ignores case (httpx lower-cases header names, so a
key echoed in a header's name is stored lower-cased). Secrets shorter than `MIN_SECRET` characters are
not searched for in text, where they would match ordinary words and mangle cassettes; they still never
reach a cassette's headers (scrubbed by name) or a URL (userinfo stripped). See docs/cassettes.md."""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import logging
import re
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import quote, quote_plus, unquote, urlsplit, urlunsplit

REDACTED = "<REDACTED>"
MIN_SECRET = 8
# user:password@ (or user@) after a scheme's //, up to the authority's last @ (a password may hold one).
_USERINFO = re.compile(r"//[^/?#\s\"'<>]*@")


class Redactor:
    """Replaces the run's secrets, in every form and any case, by ``<REDACTED>``; strips credentials from URLs.
    `secrets`: values such as the API key. `urls`: URLs whose password (and ``user:password`` as a Basic
    Authorization token) are secrets too, as is a user name given without a password (``http://TOKEN@host``)."""

    def __init__(self, secrets: Iterable[str | None] = (), urls: Iterable[str | None] = ()):
        self.secrets: tuple[str, ...] = ()
        self.learn(secrets, urls)

    def learn(self, secrets: Iterable[str | None] = (), urls: Iterable[str | None] = ()) -> None:
        """Know these secrets too, from now on: a run's redactor is made before the adapter has read the key
        (so the options' and the dataset's errors go through it) and learns the key once it has."""
        values: set[str] = set(self.secrets)
        for secret in secrets:
            values |= _forms(secret)
        for url in urls:
            values |= _url_forms(url)
        # Longest first, so a secret that contains another is replaced whole.
        self.secrets = tuple(sorted(values, key=lambda s: (-len(s), s)))
        self._lowered = tuple({s.lower() for s in self.secrets})
        pattern = "|".join(re.escape(s) for s in self.secrets)
        self._pattern = re.compile(pattern, re.IGNORECASE) if pattern else None

    def text(self, text: str, marker: str = REDACTED) -> str:
        if "@" in text:
            text = _USERINFO.sub("//", text)
        if self._pattern is not None:
            lowered = text.lower()
            if any(secret in lowered for secret in self._lowered):  # the common case: none, and no regex run
                text = self._pattern.sub(marker, text)
        return text

    def markup(self, text: str) -> str:
        """`text` of an HTML page or of Markdown, the marker escaped (``&lt;REDACTED&gt;``): a bare
        ``<REDACTED>`` would be read as an unknown tag and show nothing."""
        return self.text(text, html.escape(REDACTED))

    def bytes(self, data: bytes) -> bytes:
        """`text` on bytes read as UTF-8 (bytes that are not UTF-8 kept as they are)."""
        return self.text(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")

    def url(self, url: str) -> str:
        """The URL without its credentials (and with any secret in it redacted)."""
        return self.text(strip_userinfo(url))

    def fields(self, value: Any) -> Any:
        """`value` with every string inside it redacted: a string, or a structure of dataclasses (pytest's
        failure and internal-error reprs), lists, tuples and dicts, redacted in place where it is mutable."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            value[:] = [self.fields(item) for item in value]
        elif isinstance(value, tuple):
            return tuple(self.fields(item) for item in value)
        elif isinstance(value, dict):
            for key in list(value):
                value[key] = self.fields(value[key])
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for field in dataclasses.fields(value):
                object.__setattr__(value, field.name, self.fields(getattr(value, field.name)))
        return value


def strip_userinfo(url: str) -> str:
    """``http://user:pw@host:8080/x`` → ``http://host:8080/x``; anything else unchanged."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return _USERINFO.sub("//", url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def redact_log_records(redactor: Redactor) -> Callable[[], None]:
    """Make every log record created from now on carry a redacted message (httpx logs each request's URL,
    vcrpy each recorded response with its headers and body), so pytest's log capture, live logging, log
    file and JUnit's captured logs never see a secret. A record without a secret is left as it was (its
    `args` intact, for caplog users). Returns the function that undoes it."""
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed call is logging's to report, at emit time
            return record
        redacted = redactor.text(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        if record.exc_info and not record.exc_text:
            trace = logging.Formatter().formatException(record.exc_info)
            redacted = redactor.text(trace)
            if redacted != trace:  # else left for the handler's formatter, as usual
                record.exc_text = redacted
        if record.stack_info:
            record.stack_info = redactor.text(record.stack_info)
        return record

    logging.setLogRecordFactory(factory)

    def undo() -> None:
        if logging.getLogRecordFactory() is factory:
            logging.setLogRecordFactory(previous)

    return undo


def _url_forms(url: str | None) -> set[str]:
    """A URL's credentials in their forms, and the Basic Authorization token httpx sends for them: the password
    of ``user:password@`` (with ``user:password`` base64-encoded), or, for a user name alone (``TOKEN@``, a common
    way to pass a token), that name (with ``TOKEN:`` base64-encoded)."""
    try:
        parts = urlsplit(url or "")
        username, password = parts.username, parts.password
    except ValueError:
        return set()
    if password is None:
        secret, raw = unquote(username or ""), username or ""
        token = base64.b64encode(f"{secret}:".encode()).decode()
    else:
        secret, raw = unquote(password), password
        token = base64.b64encode(f"{unquote(username or '')}:{secret}".encode()).decode()
    return _forms(raw) | _forms(token) if len(secret) >= MIN_SECRET else set()


def _forms(secret: str | None) -> set[str]:
    """The forms a secret may be shown in: as set, stripped, percent-decoded and -encoded, JSON-escaped,
    HTML-escaped, and as Python shows it inside a str's or a bytes' repr (tracebacks, --showlocals)."""
    if not secret:
        return set()
    out = set()
    for value in {secret, secret.strip(), unquote(secret)}:
        if len(value) < MIN_SECRET:
            continue
        out |= {value, quote(value, safe=""), quote_plus(value), html.escape(value)}
        out |= {json.dumps(value, ensure_ascii=True)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
        out |= {repr(value)[1:-1], repr(value.encode("utf-8"))[2:-1]}
    return out
