"""SemIf's prompt mode chooses the route (issue 36). A server without the route asked (llama.cpp answers
"File Not Found", HTTP 404) failed every rendering alike with no hint; now the first answer stops the recording,
naming SYS1CAL_SEMIF_MODE and the value that asks the other route. And an environment setting that differs
from the one a folder was recorded with (which would mix chat and completion interactions in one cassette
folder, or replay what was never recorded) stops the run before anything is asked, naming the setting and the
folder's value. Loopback servers answer as llama.cpp's does."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.field import subset, tree_hashes
from tests.loopback import Serving
from tests.models.test_semif import FakeOpenAI
from tests.runs import sys1cal

NOT_FOUND = b'{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}'
ROUTES = {"chat": "/v1/chat/completions", "completion": "/v1/completions"}


class OneRoute(Serving):
    """An OpenAI-compatible server that serves only `route` (FakeOpenAI's answers) and 404s the other."""

    def __init__(self, route: str):
        answers = FakeOpenAI()
        answers.server.server_close()  # never started: only its answer() is used
        self.asked: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.asked.append(self.path)
                found = self.path == route
                payload = json.dumps(answers.answer(self.path, body)).encode() if found else NOT_FOUND
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.serve(Handler)


def record(pytester: pytest.Pytester, url: str, dataset: Path, *args: str) -> pytest.RunResult:
    return sys1cal(pytester, "--sys1cal-model=semif", f"--sys1cal-base-url={url}", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={pytester.path / 'c'}", "--sys1cal-repeats=1", "--sys1cal-record-mode=once", "--sys1cal-concurrency=1", "--sys1cal-retry-budget=0", *args)  # fmt: skip


@pytest.mark.parametrize(("mode", "other"), [("completion", "chat"), ("chat", "completion")])
def test_a_route_the_server_lacks_stops_at_once_naming_the_mode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str, other: str
) -> None:
    dataset = pytester.path / "six.jsonl"
    subset(dataset, 6)
    monkeypatch.setenv("SYS1CAL_SEMIF_MODE", mode)
    with OneRoute(ROUTES[other]) as server:
        result = record(pytester, server.url, dataset)
    output = result.stdout.str()
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), output[-3000:]
    assert len(server.asked) == 1  # the first answer stops it: not one failure per rendering
    assert (
        f"HTTP 404: File Not Found ({server.url}{ROUTES[mode]}, asked because SYS1CAL_SEMIF_MODE is {mode}): if this "
        f"server serves {ROUTES[other]}, set SYS1CAL_SEMIF_MODE={other}; else check --sys1cal-base-url"
    ) in output
    monkeypatch.setenv("SYS1CAL_SEMIF_MODE", other)  # the fix it names works
    with OneRoute(ROUTES[other]) as server:
        assert record(pytester, server.url, dataset).ret == pytest.ExitCode.OK


@pytest.mark.parametrize(
    ("variable", "value", "recorded"),
    [("SYS1CAL_SEMIF_MODE", "completion", "'chat'"), ("SYS1CAL_SEMIF_TOP_K", "7", "20"),
     ("SYS1CAL_SEMIF_PREFILL", "The answer:", "'Answer:'")],
)  # fmt: skip
def test_a_setting_unlike_the_folders_stops_before_anything_is_asked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, recorded: str
) -> None:
    dataset = pytester.path / "twelve.jsonl"
    subset(dataset, 12)
    with FakeOpenAI() as server:
        assert record(pytester, server.url, dataset, "-k", "seed_000042").ret == pytest.ExitCode.OK  # chat, the default
        asked = len(server.paths)
        before = tree_hashes(pytester.path / "c")
        monkeypatch.setenv(variable, value)
        folder = pytester.path / "c" / "semif" / "smollm2-135m-instruct-q4_1"
        key = {"SYS1CAL_SEMIF_MODE": "mode", "SYS1CAL_SEMIF_TOP_K": "top_k", "SYS1CAL_SEMIF_PREFILL": "prefill"}[
            variable
        ]
        shown = repr(int(value)) if key == "top_k" else repr(value)
        for extra in ((), ("--sys1cal-record-mode=none",)):  # the rest recorded into it, or a replay of it
            result = record(pytester, server.url, dataset, *extra)
            assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-3000:]
            (line,) = [line for line in result.stderr.lines if line]
            assert line.startswith(
                f"ERROR: {folder}: {variable}={shown}, but this folder was recorded with {key} {recorded} (its "
                f"manifest's settings): unset {variable} to use the folder's"
            )
        assert len(server.paths) == asked
    assert tree_hashes(pytester.path / "c") == before
