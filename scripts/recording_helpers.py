"""What the recording scripts (record_semif.py, record_typed_gguf.py) share: a local server in a child
process (started on 127.0.0.1, waited for, always stopped), the pytest command that records through the
plugin itself, the manifest ``note``, and the check that the new cassettes replay offline to the same
probabilities the live run saw.

Not a module of the package: the scripts put this folder on ``sys.path`` and import it.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
START_TIMEOUT = 120.0
ITEM_KEYS = ("p_noul", "p_choice", "p_choice_swapped", "score_probabilities", "samples")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def installed(name: str) -> str:
    """The installed version of a distribution in this interpreter, or "?"."""
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        return importlib.metadata.version(name)
    return "?"


def free_port() -> int:
    """A port free on 127.0.0.1 right now (for servers that cannot pick their own and report it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ---------------------------------------------------------------------------------------- servers


class ChildServer:
    """``with Server(...) as server: server.url`` — a server in a child process, logging to
    `server.log_path`, healthy (``GET {url}{health_path}`` answers 200) before the block runs, stopped
    (SIGTERM, then SIGKILL, then `after_stop`) on exit. Subclasses say how to start it and find its URL."""

    health_path = "/health"
    name = "server"

    def __init__(self, log_dir: Path | None = None, prefix: str = "sys1cal-server-"):
        self.workdir = Path(tempfile.mkdtemp(prefix=prefix, dir=log_dir))
        self.log_path = self.workdir / "server.log"
        self.url = ""
        self.started_in = 0.0
        self.process: subprocess.Popen[bytes] | None = None

    # What subclasses provide.
    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> Mapping[str, str] | None:
        return None  # inherit

    def discover_url(self) -> str | None:
        """The server's URL once it is known (None: not yet)."""
        raise NotImplementedError

    def after_stop(self) -> None:
        """Clean-up after the server process is gone (e.g. helper processes it left behind)."""

    # The lifecycle.
    def __enter__(self) -> ChildServer:
        started = time.monotonic()
        try:
            with self.log_path.open("wb") as log:
                self.process = subprocess.Popen(
                    self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=self.environment(),
                )  # fmt: skip
            while not (url := self.discover_url()):
                self._check_alive(started)
                time.sleep(0.05)
            self.url = url
            self._wait_healthy(started)
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - started
        return self

    def _check_alive(self, started: float) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"the {self.name} exited with {self.process.returncode}:\n{self.log_tail()}")
        if time.monotonic() - started > START_TIMEOUT:
            raise RuntimeError(f"the {self.name} did not start within {START_TIMEOUT:g} s:\n{self.log_tail()}")

    def _wait_healthy(self, started: float) -> None:
        while True:
            with (
                contextlib.suppress(OSError, urllib.error.URLError),
                urllib.request.urlopen(f"{self.url}{self.health_path}", timeout=5) as response,
            ):
                if response.status == 200:
                    return
            self._check_alive(started)
            time.sleep(0.1)

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        return "(no log)"

    def stop(self) -> None:
        process, self.process = self.process, None
        try:
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=15)
        finally:
            if process is not None:
                self.after_stop()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ---------------------------------------------------------------------------------------- recording


def record_command(
    model: str, url: str, cassettes: Path, version: str, repeats: int, extra: Sequence[str], concurrency: int = 2
) -> list[str]:
    """pytest recording through the plugin. Options are written ``--opt=value``: pytest would read a bare
    path after a plugin option as a test path when it picks the rootdir."""
    return [
        sys.executable, "-m", "pytest", "--sys1cal", f"--sys1cal-model={model}",
        f"--sys1cal-model-version={version}", f"--sys1cal-base-url={url}",
        "--sys1cal-record-mode=once", f"--sys1cal-repeats={repeats}", f"--sys1cal-cassettes={cassettes}",
        # One decision at a time on these servers: two requests in flight keep it busy without queueing
        # into the timeout.
        f"--sys1cal-concurrency={concurrency}", "--sys1cal-timeout=300", "-p", "no:cacheprovider", "-q", *extra,
    ]  # fmt: skip


def replay_command(model: str, version: str, cassettes: Path, report: Path, extra: Sequence[str]) -> list[str]:
    return [
        sys.executable, "-m", "pytest", "--sys1cal", f"--sys1cal-model={model}", f"--sys1cal-model-version={version}",
        f"--sys1cal-cassettes={cassettes}", f"--sys1cal-report={report}", "-p", "no:cacheprovider", "-q", *extra,
    ]  # fmt: skip


def add_note(cassettes: Path, model: str, version: str, text: str) -> Path:
    from pytest_sys1cal.redact import Redactor
    from pytest_sys1cal.store.folder import CassetteFolder

    folder = CassetteFolder(cassettes, model, version, "none", Redactor())
    if folder.manifest is None:
        raise RuntimeError(f"no manifest in {folder.path}: the recording did not start")
    folder.write_manifest({**folder.manifest, "note": text})
    return folder.path / "manifest.json"


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


def record_and_check(
    *,
    model: str,
    version: str,
    cassettes: Path,
    repeats: int | Callable[[ChildServer], int],
    server: ChildServer,
    note: Callable[[ChildServer, int, float], str],
    pytest_args: Sequence[str],
    concurrency: int = 2,
) -> int:
    """Start `server`, record every missing rendering through the plugin, stop it, write `note(server,
    repeats, recording seconds)` into the manifest, then replay the cassettes offline and compare the
    probabilities with the live run's. `repeats` may be decided once the server is up (a determinism
    check). Returns pytest's exit status, or 1 when the replay differs."""
    cassettes = cassettes.resolve()
    work = Path(tempfile.mkdtemp(prefix=f"sys1cal-{model}-record-"))
    recorded, replayed = work / "recorded.json", work / "replayed.json"
    started = time.monotonic()
    with server:
        print(f"server up at {server.url} in {server.started_in:.1f} s (log: {server.log_path})", flush=True)
        count = repeats(server) if callable(repeats) else repeats
        command = record_command(
            model, server.url, cassettes, version, count, [f"--sys1cal-report={recorded}", *pytest_args], concurrency
        )
        print("running:", " ".join(command), flush=True)
        recorded_at = time.monotonic()
        returncode = subprocess.call(command, cwd=REPO)
        recording = time.monotonic() - recorded_at
    total = time.monotonic() - started
    manifest = add_note(cassettes, model, version, note(server, count, recording))
    print(f"pytest exited with {returncode}; recording took {recording:.0f} s, {total:.0f} s with the server start")
    print(f"note added to {manifest}")
    # Exit status 1 with every item passed means a session gate failed: a finding, not a failed recording.
    # The check: the same cassettes replayed offline (server stopped) give the probabilities the live run saw.
    subprocess.call(
        replay_command(model, version, cassettes, replayed, pytest_args), cwd=REPO, stdout=subprocess.DEVNULL
    )
    if not (recorded.is_file() and replayed.is_file()):
        print(f"no report to compare (see {work}); was the analysis able to finish?", file=sys.stderr)
        return returncode or 1
    problems = compare_reports(recorded, replayed)
    items = len(json.loads(replayed.read_text(encoding="utf-8"))["items"])
    if problems:
        print(
            f"replayed probabilities differ from the recorded ones in {len(problems)} places:", *problems[:20], sep="\n"
        )
        return 1
    print(f"replayed offline: identical probabilities for all {items} renderings (reports in {work})")
    return returncode


def run_environment(updates: Mapping[str, str]) -> None:
    """Set variables for this process and the pytest runs it starts (the adapters read them there)."""
    os.environ.update(updates)
