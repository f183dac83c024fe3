"""A real `/v1/systemone` server on 127.0.0.1 whose answers follow a controllable distortion of p*.

Used by the tests (gates that must fire on a crafted model, faults, recording) and by the benchmarks.
It knows p* for each state from the dataset it is given, and answers:

- Noul    P(True) = σ(logit p* + bias + ε)
- Choice  P(True) = T/(T+F) of a latent model that drops an "I don't know" mass U = unknown·4μ(1−μ)
          (μ = σ(logit p* + bias + ε)), plus `position` nats toward the option listed first
- Score   a 10-level distribution centred on μ

ε ~ N(0, noise²) per answer, drawn from a generator seeded by (seed, state, question, call number), so
a run is reproducible whatever the concurrency. `delay` seconds of latency with at most `max_in_flight`
requests served at once imitate a remote server; `script` serves canned responses first (faults).
"""

from __future__ import annotations

import hashlib
import json
import math
import socket
import socketserver
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Self

import numpy as np

if TYPE_CHECKING:
    from jevcompat.mock import MockConfig, Running


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass
class Behaviour:
    bias: float = 0.0
    noise: float = 0.0
    position: float = 0.0
    unknown: float = 0.0
    seed: int = 0
    delay: float = 0.0
    max_in_flight: int = 0
    model: str = "loopback-1"
    # Canned (status, headers, body) answers served, in order, before any real answer.
    script: list[tuple[int, dict[str, str], bytes]] = field(default_factory=list)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


# shutdown() returns once serve_forever's loop next wakes: at its default poll of 0.5 s each of the suite's
# hundreds of servers took up to half a second to stop (about two minutes of test time, idle); at 0.02 s, none.
POLL_SECONDS = 0.02


def server_thread(server: socketserver.BaseServer) -> threading.Thread:
    """The thread that serves `server` until its shutdown(), which then returns within POLL_SECONDS."""
    return threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_SECONDS}, daemon=True)


def jevcompat_mock(config: MockConfig | None = None) -> Running:
    """``with jevcompat_mock(MockConfig(...)) as mock: mock.url`` — jevcompat's `Running`, served by
    server_thread so that it stops at once."""
    from jevcompat.mock import Running

    running = Running(config)
    running.thread = server_thread(running.server)
    return running


class Serving:
    """A test server on a thread of its own, as a context manager: ``with X(...) as server: server.url``.
    A subclass calls serve(handler) in its __init__; the thread starts on entering, the server stops on exit."""

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> Server:
        self.server = Server(("127.0.0.1", 0), handler)
        self.thread = server_thread(self.server)
        return self.server

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


class LoopbackServer(Serving):
    """Context manager: ``with LoopbackServer(p_star_by_state, Behaviour(...)) as server: server.url``."""

    def __init__(self, p_star_by_state: dict[str, float], behaviour: Behaviour | None = None):
        self.p_star = p_star_by_state
        self.behaviour = behaviour or Behaviour()
        self.requests = 0
        self.in_flight = 0
        self.max_seen_in_flight = 0
        self._lock = threading.Lock()
        self._calls: dict[tuple[str, str], int] = {}
        self._gate = threading.Semaphore(self.behaviour.max_in_flight) if self.behaviour.max_in_flight else None
        self.serve(type("Handler", (_Handler,), {"owner": self}))

    @classmethod
    def for_renderings(cls, renderings: Iterable[Any], behaviour: Behaviour | None = None) -> LoopbackServer:
        return cls({_canon(r.state): r.p_star for r in renderings}, behaviour)

    # ------------------------------------------------------------------ answers

    def _epsilon(self, state_key: str, qid: str) -> float:
        b = self.behaviour
        if not b.noise:
            return 0.0
        with self._lock:
            call = self._calls.get((state_key, qid), 0)
            self._calls[(state_key, qid)] = call + 1
        digest = hashlib.sha256(f"{b.seed}|{state_key}|{qid}|{call}".encode()).digest()
        return float(np.random.default_rng(int.from_bytes(digest[:8], "big")).normal(0.0, b.noise))

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        b = self.behaviour
        state_key = _canon(body["state"])
        p_star = self.p_star.get(state_key, 0.5)
        answers: dict[str, Any] = {}
        for qid, question in body["questions"].items():
            mu = _sigmoid(_logit(p_star) + b.bias + self._epsilon(state_key, qid))
            kind = question["type"]
            if kind == "noul":
                answers[qid] = {"type": "noul", "noul": mu}
            elif kind == "choice":
                unknown = min(b.unknown * 4 * mu * (1 - mu), 1 - mu)
                p_true = mu / (1 - unknown) if unknown < 1 else 1.0
                options = list(question["criteria"])
                shift = b.position if options[0] == "True" else -b.position
                p_true = _sigmoid(_logit(p_true) + shift)
                probs = {"True": p_true, "False": 1 - p_true}
                answers[qid] = {
                    "type": "choice",
                    "choice": max(options, key=lambda o: probs[o]),
                    "probabilities": {o: probs[o] for o in options},
                    "confidence": abs(2 * p_true - 1),
                }
            else:
                levels = question["criteria"]
                z = np.arange(len(levels)) / (len(levels) - 1)
                weights = np.exp(-((z - mu) ** 2) / (2 * 0.08**2))
                q = weights / weights.sum()
                answers[qid] = {
                    "type": "score",
                    "score": float(np.arange(len(levels)) @ q),
                    "legend": {str(i): level for i, level in enumerate(levels)},
                    "probabilities": {str(i): float(v) for i, v in enumerate(q)},
                    "confidence": float(q.max()),
                }
        return {
            "model": b.model,
            "answers": answers,
            "usage": {"input_tokens": len(state_key) // 4, "output_tokens": 0},
        }


class Server(ThreadingHTTPServer):
    """A threaded server on 127.0.0.1 for the tests' handlers."""

    daemon_threads = True
    # The default listen backlog of 5 resets connections when a client opens 16 at once.
    request_queue_size = 128


class Handler(BaseHTTPRequestHandler):
    """Keep-alive like a real API, no Nagle delay, no log lines."""

    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Without TCP_NODELAY, Nagle plus delayed ACKs add ~40 ms to every kept-alive response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, fmt: str, *args: Any) -> None:
        pass


class _Handler(Handler):
    owner: LoopbackServer

    def do_POST(self) -> None:  # noqa: N802
        owner = self.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if owner._gate:
            owner._gate.acquire()
        try:
            with owner._lock:
                owner.requests += 1
                owner.in_flight += 1
                owner.max_seen_in_flight = max(owner.max_seen_in_flight, owner.in_flight)
                scripted = owner.behaviour.script.pop(0) if owner.behaviour.script else None
            if owner.behaviour.delay:
                time.sleep(owner.behaviour.delay)
            if scripted:
                status, headers, payload = scripted
            elif self.path != "/v1/systemone":
                status, headers, payload = 404, {}, b'{"detail": "not found"}'
            else:
                status, headers = 200, {}
                payload = json.dumps(owner.answer(json.loads(raw))).encode()
        finally:
            with owner._lock:
                owner.in_flight -= 1
            if owner._gate:
                owner._gate.release()
        self.send_response(status)
        headers = {"Content-Type": "application/json", **headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
