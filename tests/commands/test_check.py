"""The preflight (issue 24, "Mistakes that cost seconds"): ``python -m pytest_sys1cal check …`` runs the recording
command it is given as a dry run (``--sys1cal-dry-run``): it checks the key, reachability and the model name
(against ``GET /v1/models``), prints the plan and the cost, sends nothing billable, records nothing, and exits
0, or 4 with one line saying what to fix. Against the jevcompat mock (which counts the POSTs it answers) and
tests/misbehave.py's OpenAI-compatible server, as a user runs it: a subprocess."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from jevcompat.mock import MockConfig

from tests.loopback import jevcompat_mock
from tests.misbehave import ENVIRONMENT, Misbehaving, subset
from tests.runs import run

# Each test runs the command as a user does: a subprocess (which starts pytest), against a server.
pytestmark = pytest.mark.e2e

KEY = "sk-the-right-key-0123456789"


def check(folder: Path, url: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m pytest_sys1cal check` in `folder` on the first 12 renderings, as printed in the docs."""
    dataset, _ = subset(folder, 12)
    environ = {k: v for k, v in os.environ.items() if k not in ENVIRONMENT and not k.startswith("TYPESAFE_")}
    environ |= env or {}
    command = [
        sys.executable, "-m", "pytest_sys1cal", "check", "--model", "systemone", f"--sys1cal-base-url={url}",
        f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={folder / 'cassettes'}", "-p", "no:randomly", *args,
    ]  # fmt: skip
    done = subprocess.run(command, cwd=folder, env=environ, capture_output=True, text=True, timeout=120)
    done.stdout += done.stderr
    return done


def test_a_good_setup_passes_prints_the_plan_and_sends_nothing_billable(tmp_path: Path) -> None:
    config = MockConfig(key=KEY)
    with jevcompat_mock(config) as mock:
        done = check(tmp_path, mock.url, "--sys1cal-model-version=mock", env={"SYS1CAL_API_KEY": KEY})
    assert done.returncode == 0, done.stdout[-3000:]
    for line in [
        "sys1cal: recording 12 of 12 renderings (0 already have cassettes)",
        "sys1cal: 120 requests (10 repeats); about ",  # the plan and its price
        f"sys1cal: check: {mock.url} answered GET /v1/models in ",
        "sys1cal: check: key: the key in SYS1CAL_API_KEY; the server accepted the request",
        "sys1cal: check: model: 'mock' is among the 2 the server lists",
        "sys1cal: dry run passed: nothing billable was sent and nothing recorded; the same command without "
        "--sys1cal-dry-run records",
        "dry run: no rendering was measured or recorded, and no report written",
    ]:
        assert line in done.stdout, (line, done.stdout[-3000:])
    assert config.requests == 0  # no POST /v1/systemone: nothing billable
    assert not (tmp_path / "cassettes").exists()  # no manifest, no lock, no folder


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (
            ["--sys1cal-model-version=mock"],
            {"SYS1CAL_API_KEY": "sk-a-wrong-key-000000"},
            "the server refused the request with the key in SYS1CAL_API_KEY (HTTP 401: Cannot authenticate with the "
            "server.); check the key",
        ),
        (
            ["--sys1cal-model-version=mock"],
            {},
            "the server refused the request with no key (SYS1CAL_API_KEY is not set) (HTTP 403: Must supply an API "
            "key!); check the key",
        ),
        (
            ["--sys1cal-model-version=mock", "--sys1cal-max-cost=0.00001"],
            {"SYS1CAL_API_KEY": KEY},
            "more than --sys1cal-max-cost $1e-05. Nothing was sent.",
        ),
    ],
    ids=["wrong-key", "no-key", "over-the-cap"],
)
def test_each_mistake_is_one_line_and_exit_4(tmp_path: Path, args: list[str], env: dict[str, str], said: str) -> None:
    config = MockConfig(key=KEY)
    with jevcompat_mock(config) as mock:
        done = check(tmp_path, mock.url, *args, env=env)
    assert done.returncode == 4, done.stdout[-3000:]
    assert said in done.stdout, done.stdout[-3000:]
    assert config.requests == 0 and not (tmp_path / "cassettes").exists()


def test_jev_without_its_key_is_told_before_anything_is_asked(tmp_path: Path) -> None:
    with jevcompat_mock(MockConfig()) as mock:
        done = check(tmp_path, mock.url, "--model", "jev")
    assert done.returncode == 4 and "TYPESAFE_API_KEY is not set; export it to record" in done.stdout, done.stdout


def test_a_server_that_is_not_up_is_said_with_what_to_check(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = check(tmp_path, f"http://127.0.0.1:{port}")
    assert done.returncode == 4, done.stdout[-3000:]
    assert f"sys1cal: dry run: cannot reach http://127.0.0.1:{port}/v1/models: ConnectError: " in done.stdout
    assert "is the server up? check --sys1cal-base-url" in done.stdout


def test_a_server_without_a_model_list_passes_saying_what_was_not_checked(tmp_path: Path) -> None:
    config = MockConfig(faults=frozenset({"models-404"}))
    with jevcompat_mock(config) as mock:
        done = check(tmp_path, mock.url, "--sys1cal-model-version=mock")
    assert done.returncode == 0, done.stdout[-3000:]
    assert (
        "sys1cal: check: the server lists no models (GET /v1/models: HTTP 404), so the key and the model name 'mock' "
        "are first checked by the recording's first request (it stops at once if either is wrong)" in done.stdout
    )
    assert config.requests == 0


def test_on_the_openai_compatible_wire_an_unlisted_name_is_shown_not_refused(tmp_path: Path) -> None:
    """llama.cpp lists the one model it loaded (its alias, or its file) and answers any name (checked against
    xllamacpp's server by hand): the SemIf preflight shows the list."""
    dataset, _ = subset(tmp_path, 12)
    with Misbehaving([], wire="semif", models=["/models/SmolLM2-135M-Instruct-Q4_1.gguf"]) as server:
        done = check(tmp_path, server.url, "--model", "semif")
        posts = server.requests
    assert done.returncode == 0, done.stdout[-3000:]
    assert "sys1cal: 480 requests (10 repeats)" in done.stdout  # four questions per repeat on this wire
    assert (
        "sys1cal: check: model: 'smollm2-135m-instruct-q4_1' is not among the models the server lists "
        "(/models/SmolLM2-135M-Instruct-Q4_1.gguf); a semif server may answer any name" in done.stdout
    )
    assert posts == 0


def test_a_replay_is_not_a_dry_run(tmp_path: Path) -> None:
    with jevcompat_mock(MockConfig()) as mock:
        done = check(tmp_path, mock.url, "--sys1cal-record-mode=none")
    assert done.returncode == 4
    assert "--sys1cal-dry-run checks a recording, and record mode none only replays" in done.stdout


def test_the_dry_run_runs_in_one_process(tmp_path: Path) -> None:
    with jevcompat_mock(MockConfig()) as mock:
        done = check(tmp_path, mock.url, "-n", "2")
    assert done.returncode == 4 and "--sys1cal-dry-run checks in one process: drop -n (or give -n 0)" in done.stdout


def test_the_dry_run_option_without_the_benchmark_is_refused(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--sys1cal-dry-run")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --sys1cal-dry-run given without --sys1cal, so the benchmark would not run*"])


def test_a_model_the_server_serves_but_does_not_list_is_not_refused(tmp_path: Path) -> None:
    """The jevcompat mock lists jev-latest and mock and answers jev-1.13.0 too (issue 37): the check says the name
    is not listed and how it decides (the first answer), passes, and the recording it vouched for records."""
    config = MockConfig(key=KEY)
    with jevcompat_mock(config) as mock:
        done = check(tmp_path, mock.url, "--sys1cal-model-version=jev-1.13.0", env={"SYS1CAL_API_KEY": KEY})
        assert done.returncode == 0, done.stdout[-3000:]
        assert (
            "sys1cal: check: model: 'jev-1.13.0' is not among the 2 the server lists (jev-latest, mock, GET "
            "/v1/models); a server may serve a model it does not list, so the check does not refuse it: the "
            "recording's first answer decides, and an unknown model stops it at once"
        ) in done.stdout
        assert config.requests == 0
        dataset = tmp_path / "first-12.jsonl"  # check() wrote it: the same renderings, recorded now
        recorded = subprocess.run(
            [sys.executable, "-m", "pytest", "--sys1cal", "--sys1cal-model=systemone", f"--sys1cal-base-url={mock.url}",
             "--sys1cal-model-version=jev-1.13.0", f"--sys1cal-dataset={dataset}", "--sys1cal-repeats=1",
             f"--sys1cal-cassettes={tmp_path / 'cassettes'}", "--sys1cal-record-mode=once", "-p", "no:randomly",
             "-p", "no:cacheprovider"],
            cwd=tmp_path, env={**os.environ, "SYS1CAL_API_KEY": KEY}, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert recorded.returncode == 0, recorded.stdout[-3000:]
    assert len(list((tmp_path / "cassettes" / "systemone" / "jev-1.13.0").glob("*/*.json"))) == 12
