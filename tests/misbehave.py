"""A server on 127.0.0.1 that misbehaves on purpose, on either wire the plugin speaks: ``/v1/systemone`` (Jev
and the systemone adapter; answers from tests/loopback.py's undistorted model) and the OpenAI-compatible
``/v1/chat/completions`` of the SemIf readout (made-up logprobs on the option letters). ``GET /v1/models``
lists `models` in the shape of `wire` (``systemone``: Jev's ``{"models": [{"name"}]}``; ``semif``: OpenAI's
``{"data": [{"id"}]}``), or answers 404 when `models` is None.

Each POST gets the next action of `script`, then `default` (a plain answer unless set):

("ok",)                              the real answer
("hang",)                            read the request, never answer (until the server stops)
("trickle", seconds)                 the real answer's headers, then one byte of its body every `seconds`
("status", code, headers, body)      that answer instead
("big", size[, declared])            a 200 whose body is `size` bytes, streamed in 64 KB pieces (declared=False:
                                     no Content-Length, the body ends when the server closes the connection)
("gzip-bomb",)                       a 200 whose gzip body (1.1 MB) inflates to 1.15 GB of zeros
("top", count)                       (OpenAI wire) a real answer with `count` answer-slot alternatives

It counts POSTs (`requests`), the bytes of bodies it wrote (`written`) and the connections clients cut while it
was still writing (`cut`)."""

from __future__ import annotations

import hashlib
import json
import math
import struct
import threading
import time
import zlib
from collections.abc import Iterable
from functools import cache
from typing import Any

from tests.loopback import Behaviour, Handler, LoopbackServer, Serving

Action = tuple[Any, ...]
LETTERS = "ABCDEFGHIJKLMNOP"
CHUNK = 64 * 1024


@cache
def gzip_bomb(mebibytes: int = 1100) -> bytes:
    """A valid gzip stream of `mebibytes` MiB of zeros, built from one compressed MiB repeated (each ends with a
    full flush, so the pieces are identical and byte-aligned): about 1 KB per MiB, in a second, not the ten a
    compressor would take."""
    zeros = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    piece = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(mebibytes):
        crc = zlib.crc32(zeros, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    trailer = struct.pack("<II", crc, (mebibytes << 20) & 0xFFFFFFFF)
    return header + piece * mebibytes + compressor.flush() + trailer


def openai_answer(body: dict[str, Any], count: int | None = None) -> dict[str, Any]:
    """A chat completion whose answer slot puts deterministic weights on the option letters (" A" and "A")."""
    prompt = body["messages"][1]["content"]
    options = prompt.count('"letter": ')
    digest = hashlib.sha256(prompt.encode()).digest()
    weights = [1 + digest[i] for i in range(options)]
    top = [(f" {LETTERS[i]}", math.log(0.9 * w / sum(weights))) for i, w in enumerate(weights)]
    top.append((" The", math.log(0.05)))
    if count is not None:  # padded with made-up tokens of tiny probability, as a server ignoring top_logprobs
        top += [(f" tok{i}", -30.0 - i * 1e-6) for i in range(count - len(top))]
    entries = [{"id": i, "token": t, "bytes": list(t.encode()), "logprob": lp} for i, (t, lp) in enumerate(top)]
    first = entries[0]
    return {
        "model": body["model"],
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": first["token"]},
                     "logprobs": {"content": [{**first, "top_logprobs": entries}]}}],
    }  # fmt: skip


@cache
def _padded(options: int, model: str, count: int) -> bytes:
    """openai_answer's shape with `count` alternatives, written out as text (building 200,000 objects and
    encoding them would take seconds per answer)."""
    letters = ", ".join(f'{{"letter": "{LETTERS[i]}"}}' for i in range(options))
    answer = openai_answer({"model": model, "messages": [{}, {"content": letters}]})
    entries = answer["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    real = [json.dumps(entry) for entry in entries]
    made_up = (f'{{"id": {i}, "token": " tok{i}", "logprob": -30.0}}' for i in range(len(real), count))
    answer["choices"][0]["logprobs"]["content"][0]["top_logprobs"] = "@@TOP@@"
    return json.dumps(answer).replace('"@@TOP@@"', "[" + ", ".join([*real, *made_up]) + "]").encode()


class Misbehaving(Serving):
    """Context manager: ``with Misbehaving(renderings, default=("hang",)) as server: server.url``."""

    def __init__(
        self,
        renderings: Iterable[Any],
        *,
        script: list[Action] | None = None,
        default: Action = ("ok",),
        models: list[str] | None = None,
        wire: str = "systemone",
    ):
        self.model = LoopbackServer.for_renderings(renderings, Behaviour())
        self.model.server.server_close()  # only its answer() is used
        self.script, self.default, self.models, self.wire = list(script or []), default, models, wire
        self.requests = self.written = self.cut = 0
        self.paths: list[str] = []
        self.lock = threading.Lock()
        self.released = threading.Event()  # set on exit: hanging handlers end
        server = self.serve(type("MisbehavingHandler", (_Handler,), {"owner": self}))
        server.handle_error = lambda request, address: None  # clients that left mid-answer

    def __exit__(self, *exc: Any) -> None:
        self.released.set()
        super().__exit__(*exc)

    def wait_for_cut(self, timeout: float = 5.0) -> int:
        """`cut` once the server noticed a connection the client dropped (at its next write, or the one after)."""
        deadline = time.monotonic() + timeout
        while not self.cut and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.cut

    def next_action(self, path: str) -> Action:
        with self.lock:
            self.requests += 1
            self.paths.append(path)
            return self.script.pop(0) if self.script else self.default

    def answer(self, path: str, body: dict[str, Any], count: int | None = None) -> bytes:
        if path == "/v1/systemone":
            return json.dumps(self.model.answer(body)).encode()
        if count is not None:  # the same huge answer for every prompt with as many options: built once
            return _padded(body["messages"][1]["content"].count('"letter": '), body["model"], count)
        return json.dumps(openai_answer(body)).encode()

    def listing(self) -> bytes:
        if self.wire == "semif":
            return json.dumps(
                {"object": "list", "data": [{"id": m, "object": "model"} for m in self.models or []]}
            ).encode()
        return json.dumps(
            {"models": [{"name": m, "description": "", "release_date": "2026-01-01"} for m in self.models or []]}
        ).encode()


class _Handler(Handler):
    owner: Misbehaving

    def do_GET(self) -> None:  # noqa: N802
        owner = self.owner
        if self.path.split("?")[0] == "/v1/models" and owner.models is not None:
            self._send(200, {}, owner.listing())
        else:
            self._send(404, {}, b'{"detail": "not found"}')

    def do_POST(self) -> None:  # noqa: N802
        owner = self.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        action = owner.next_action(self.path)
        kind = action[0]
        if kind == "hang":
            owner.released.wait(timeout=600)
            return
        if kind == "status":
            _, code, headers, payload = action
            self._send(code, headers, payload)
        elif kind == "big":  # ("big", size[, declared]): without its Content-Length the body ends at the close
            declared = action[2] if len(action) > 2 else True
            headers = {"Content-Length": str(action[1])} if declared else {"Connection": "close"}
            self.close_connection = self.close_connection or not declared
            self._stream(200, headers, (b"x" * CHUNK for _ in range(action[1] // CHUNK)))
        elif kind == "gzip-bomb":
            bomb = gzip_bomb()
            pieces = (bomb[i : i + CHUNK] for i in range(0, len(bomb), CHUNK))
            self._stream(200, {"Content-Encoding": "gzip", "Content-Length": str(len(bomb))}, pieces)
        else:
            payload = owner.answer(self.path, json.loads(raw), action[1] if kind == "top" else None)
            if kind == "trickle":
                self._stream(200, {"Content-Length": str(len(payload))}, _trickled(payload, action[1], owner))
            else:
                self._send(200, {}, payload)

    def _send(self, status: int, headers: dict[str, str], payload: bytes) -> None:
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, status: int, headers: dict[str, str], pieces: Iterable[bytes]) -> None:
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        try:
            for piece in pieces:
                self.wfile.write(piece)
                self.wfile.flush()
                with self.owner.lock:
                    self.owner.written += len(piece)
        except OSError:  # the client cut the connection: what the tests want to see
            with self.owner.lock:
                self.owner.cut += 1
            self.close_connection = True


def _trickled(payload: bytes, seconds: float, owner: Misbehaving) -> Iterable[bytes]:
    for index in range(len(payload)):
        if owner.released.wait(timeout=seconds):
            return
        yield payload[index : index + 1]


# ---------------------------------------------------------------------------------------- running a recording

WIRES = ("systemone", "semif")  # the two built-in wires: /v1/systemone and the OpenAI-compatible SemIf readout
FAST = (
    "--sys1cal-repeats=1", "--sys1cal-bootstrap=0", "--sys1cal-recalibration-splits=1",
    "-p", "no:cacheprovider", "-p", "no:randomly",
)  # fmt: skip
ENVIRONMENT = ("SYS1CAL_SEMIF_MODE", "SYS1CAL_SEMIF_TOP_K", "SYS1CAL_SEMIF_PREFILL", "SYS1CAL_SEMIF_BASE_URL",
               "SYS1CAL_SEMIF_API_KEY", "SYS1CAL_API_KEY", "SYS1CAL_BASE_URL", "TYPESAFE_BASE_URL")  # fmt: skip


def subset(folder: Any, count: int) -> tuple[Any, list[Any]]:
    """The first `count` renderings of the bundled dataset as a dataset file of their own in `folder`."""
    from pytest_sys1cal.dataset import load_dataset

    dataset = load_dataset("sys1cal-v1")
    chosen = list(dataset.renderings[:count])
    lines = dataset.path.read_text(encoding="utf-8").splitlines()
    path = folder / f"first-{count}.jsonl"
    path.write_text("".join(lines[r.line - 1] + "\n" for r in chosen), encoding="utf-8")
    return path, chosen


def recording(wire: str, url: str, dataset: Any, root: Any, *args: str) -> list[str]:
    """The options of a recording (record mode once, one repeat) on `wire` from the server at `url`."""
    return [
        "--sys1cal", f"--sys1cal-model={wire}", f"--sys1cal-base-url={url}", f"--sys1cal-dataset={dataset}",
        f"--sys1cal-cassettes={root}", "--sys1cal-record-mode=once", *FAST, *args,
    ]  # fmt: skip
