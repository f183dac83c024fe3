"""A `/v1/systemone` server on 127.0.0.1 that echoes the credentials it is sent everywhere a server can put
them, for the redaction tests (tests/test_secrets.py).

The credential is what arrived in the ``Authorization`` header: a bearer key as sent, or the user name and
password of a ``Basic`` header (which httpx sends instead of the key when the base URL carries
``user:password@``). With ``status`` 200 the answer is a real one (tests/loopback.py's undistorted model)
carrying the credential in:

- the reason phrase (``200 OK <key>``);
- an ordinary response header (``x-echo: <key>``), a header that quotes the Authorization header
  (``x-seen: Bearer <key>``), a header whose *name* carries the key (``x-echo-<key>: 1``), a ``Location``
  with the key percent-encoded in its query and a ``Content-Location`` with the credentials as URL userinfo;
- the body: an extra field (``x_echo``) and the reported ``model`` id, which reaches the manifest and the
  run's notices.

With any other ``status`` every request gets that status and a body quoting the key and the Authorization
header (``{"detail": "Invalid request for API key <key> …"}``), plus the same ``x-echo`` header.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from tests.loopback import Behaviour, Handler, LoopbackServer, Serving


def credential(authorization: str) -> str:
    """The secret inside an Authorization header: the bearer key, or ``user:password`` of a Basic header."""
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "basic":
        return base64.b64decode(value).decode("utf-8", "replace")
    return value


class EchoServer(Serving):
    """Context manager: ``with EchoServer(renderings, status=400) as server: server.url``. `requests`
    counts what arrived; `seen` keeps each request's Authorization header."""

    def __init__(self, renderings: Iterable[Any], *, status: int = 200):
        self.model = LoopbackServer.for_renderings(renderings, Behaviour())
        self.model.server.server_close()  # only its answer() is used
        self.status = status
        self.requests = 0
        self.seen: list[str] = []
        self.lock = threading.Lock()
        self.serve(type("EchoHandler", (_EchoHandler,), {"owner": self}))

    def answer(self, raw: bytes, authorization: str) -> tuple[int, str, dict[str, str], bytes]:
        """(status, reason phrase, headers, body) for one request."""
        secret = credential(authorization)
        echo = {"x-echo": secret, "x-seen": authorization}
        if self.status != 200:
            detail = f"Invalid request for API key {secret} (Authorization: {authorization})"
            return self.status, "Refused", echo, json.dumps({"detail": detail}).encode()
        body = self.model.answer(json.loads(raw))
        body["model"] = f"echo-{secret}"
        body["x_echo"] = {"key": secret, "authorization": authorization}
        headers = {
            **echo,
            "Location": f"{self.url}/v1/systemone?api_key={quote(secret, safe='')}",
            "Content-Location": f"http://{secret}@127.0.0.1/echo",
        }
        if secret and all(c.isalnum() or c in "-_." for c in secret):
            headers[f"x-echo-{secret}"] = "1"
        return 200, f"OK {secret}", headers, json.dumps(body).encode()


class _EchoHandler(Handler):
    owner: EchoServer

    def do_POST(self) -> None:  # noqa: N802
        owner = self.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        authorization = self.headers.get("Authorization", "")
        with owner.lock:
            owner.requests += 1
            owner.seen.append(authorization)
        status, reason, headers, payload = owner.answer(raw, authorization)
        self.send_response(status, reason)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
