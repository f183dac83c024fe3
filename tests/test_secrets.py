"""Secrets on every route (issue 20): with a canary API key and a canary password in the base URL, against a
server that echoes them everywhere it can (tests/echo.py), nothing the run prints or writes holds either:
not the terminal (pytest runs as a subprocess, so everything the user sees is captured), the JUnit XML, the
JSON and HTML reports, the job summary, the cassettes (every byte) or the manifest; and no cassette URI or
printed command carries URL credentials. One test per route; each fails when that route's redaction is
taken out. The Redactor's own rules are tested first, on their own."""

from __future__ import annotations

import base64
import html
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit
from xml.etree import ElementTree

import pytest
from vcr.request import Request as VcrRequest

from pytest_sys1cal.dataset import load_dataset
from pytest_sys1cal.redact import REDACTED, Redactor, redact_log_records, strip_userinfo
from pytest_sys1cal.store.folder import CassetteFolder
from tests.echo import EchoServer

KEY = "sk-CANARY-4f9a1c7e2b8d-KEY"
PASSWORD = "pw-CANARY-93e1b7a0-PW"
BASIC = base64.b64encode(f"user:{PASSWORD}".encode()).decode()  # what httpx sends for user:password@
# Halves too: a traceback's repr cut in the middle of a secret must not show either half.
CANARIES = (KEY, PASSWORD, BASIC, KEY[:13], KEY[13:], PASSWORD[:11], PASSWORD[11:])
RENDERINGS = load_dataset("sys1cal-v1").renderings[:2]
ERROR_STATUSES = (400, 401, 403, 404, 422, 429, 500)
# (adapter, environment variable of its key, whether the base URL carries user:password@)
ADAPTERS = {"systemone": ("SYS1CAL_API_KEY", False), "jev": ("TYPESAFE_API_KEY", True)}
FAST = (
    "--sys1cal-repeats=1", "--sys1cal-bootstrap=0", "--sys1cal-recalibration-splits=1", "--sys1cal-retry-budget=0",
    "-p", "no:cacheprovider", "-p", "no:randomly",
)  # fmt: skip


# ------------------------------------------------------------------------------------------ the Redactor itself


def test_a_secret_is_redacted_in_every_form_and_case() -> None:
    redactor = Redactor(["  sk-Canary/Key+1é \n"])
    shown = [
        "sk-Canary/Key+1é",  # stripped
        "SK-CANARY/KEY+1É",  # any case: httpx lower-cases header names
        "sk-Canary%2FKey%2B1%C3%A9",  # percent-encoded
        "sk-Canary/Key+1\\u00e9",  # JSON-escaped
        "b'sk-Canary/Key+1\\xc3\\xa9'",  # a bytes repr in a traceback
    ]
    for text in shown:
        assert "anary" not in redactor.text(f"x {text} y").lower(), text
        assert b"anary" not in redactor.bytes(f"x {text} y".encode()).lower(), text
    assert redactor.text("no secret here") == "no secret here"


def test_url_credentials_are_stripped_and_the_password_is_a_secret_everywhere() -> None:
    redactor = Redactor(urls=[f"http://user:{PASSWORD}@host:1"])
    assert (
        redactor.text(f"see http://user:{PASSWORD}@host:1/v1 and {PASSWORD}") == f"see http://host:1/v1 and {REDACTED}"
    )
    assert redactor.text(f"Basic {BASIC}") == f"Basic {REDACTED}"
    assert strip_userinfo("http://u:p@ss@h:2/x?q=a@b") == "http://h:2/x?q=a@b"  # a password may hold an @
    assert Redactor().text("http://u:p@ss@h:2/x?q=a@b") == "http://h:2/x?q=a@b"


def test_short_secrets_are_not_searched_for_in_text_but_leave_urls() -> None:
    """A 4-letter password would match ordinary words and mangle the cassettes' bodies."""
    redactor = Redactor(["key"], urls=["http://user:pw@h"])
    assert (
        redactor.text('{"role": "user", "key": "pw"} http://user:pw@h/x') == '{"role": "user", "key": "pw"} http://h/x'
    )


def test_pytest_reprs_and_log_records_are_redacted() -> None:
    redactor = Redactor([KEY])
    try:
        raise RuntimeError(f"headers {{'Authorization': 'Bearer {KEY}'}}")
    except RuntimeError:
        info = pytest.ExceptionInfo.from_current()
    rendered = str(redactor.fields(info.getrepr(showlocals=True, style="long")))
    assert KEY not in rendered and f"Bearer {REDACTED}" in rendered
    undo = redact_log_records(redactor)
    try:
        record = logging.getLogger("httpx").makeRecord("httpx", logging.INFO, "f", 1, "GET %s", (KEY,), None)
        plain = logging.getLogger("httpx").makeRecord("httpx", logging.INFO, "f", 1, "GET %s", ("/x",), None)
    finally:
        undo()
    assert record.getMessage() == f"GET {REDACTED}"
    assert (plain.msg, plain.args) == ("GET %s", ("/x",))  # a record without a secret is left as it was


def test_scrubbing_drops_headers_named_after_a_secret_and_redacts_every_other_part(tmp_path: Path) -> None:
    folder = CassetteFolder(tmp_path, "systemone", "v", "once", Redactor([KEY], urls=[f"http://user:{PASSWORD}@h"]))
    uri, body = f"http://user:{PASSWORD}@h/v1/systemone?k={KEY}", f'{{"k": "{KEY}"}}'.encode()
    request = folder.scrub.request(VcrRequest("POST", uri, body, {"X-Trace": KEY, "Authorization": "Basic x"}))
    assert (request.uri, request.body) == (f"http://h/v1/systemone?k={REDACTED}", f'{{"k": "{REDACTED}"}}'.encode())
    assert dict(request.headers) == {"X-Trace": REDACTED}
    response = folder.scrub.response({
        "status": {"code": 200, "message": f"OK {KEY}"},
        "headers": {f"x-echo-{KEY.lower()}": ["1"], "x-echo": [KEY], "location": [f"http://user:{PASSWORD}@h/?k={KEY}"]},
        "body": {"string": f'{{"echo": "{KEY}"}}'.encode()},
    })  # fmt: skip
    assert response["status"]["message"] == f"OK {REDACTED}"
    assert response["headers"] == {"x-echo": [REDACTED], "location": [f"http://h/?k={REDACTED}"]}
    assert response["body"]["string"] == f'{{"echo": "{REDACTED}"}}'.encode()


# ------------------------------------------------------------------------------------------ runs, by route


@dataclass
class Run:
    returncode: int
    output: str
    folder: Path

    def places(self) -> dict[str, bytes]:
        """What the user sees and every file the run left (the dataset and conftest, its inputs, left out)."""
        files = {
            str(path.relative_to(self.folder)): path.read_bytes()
            for path in sorted(self.folder.rglob("*"))
            if path.is_file() and path.name not in {"two.jsonl", "conftest.py"} and "__pycache__" not in path.parts
        }
        return {"terminal": self.output.encode(), **files}


def sys1cal(folder: Path, *args: str, env: dict[str, str]) -> Run:
    """`python -m pytest --sys1cal …` in `folder`, writing JUnit XML, the JSON and HTML reports and the job
    summary there; its stdout and stderr together."""
    dataset = folder / "two.jsonl"
    if not dataset.exists():
        lines = load_dataset("sys1cal-v1").path.read_text(encoding="utf-8").splitlines()
        dataset.write_text("".join(lines[r.line - 1] + "\n" for r in RENDERINGS), encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SYS1CAL_", "TYPESAFE_"))}
    environ |= {"GITHUB_STEP_SUMMARY": str(folder / "summary.md"), **env}
    command = [
        sys.executable, "-m", "pytest", "--sys1cal", f"--sys1cal-dataset={dataset}",
        f"--sys1cal-cassettes={folder / 'cassettes'}", f"--junitxml={folder / 'junit.xml'}",
        f"--sys1cal-report={folder / 'report.json'}", f"--sys1cal-html={folder / 'report.html'}", *FAST, *args,
    ]  # fmt: skip
    done = subprocess.run(command, cwd=folder, env=environ, capture_output=True, text=True, timeout=300)
    return Run(done.returncode, done.stdout + done.stderr, folder)


def assert_nothing_leaks(run: Run, *expected: str) -> None:
    """No canary (in any case, not even half of one) anywhere the run printed or wrote; the `expected`
    files were written (an absent file hides nothing)."""
    places = run.places()
    assert set(expected) <= set(places), (sorted(places), run.output[-3000:])
    leaked = [(place, c) for place, data in places.items() for c in CANARIES if c.lower().encode() in data.lower()]
    assert leaked == [], (leaked, run.output[-3000:])
    assert_no_url_credentials(run)


def assert_no_url_credentials(run: Run) -> None:
    """No cassette URI and no printed command carries ``user:password@``."""
    for path in (run.folder / "cassettes").rglob("*/*.json"):
        for interaction in json.loads(path.read_text(encoding="utf-8")).get("interactions", []):
            assert "@" not in urlsplit(interaction["request"]["uri"]).netloc, path
    commands = [
        line[line.index("pytest --sys1cal") :] for line in run.output.splitlines() if "pytest --sys1cal" in line
    ]
    assert all("@" not in word for command in commands for word in command.split() if "base-url" in word), commands


def adapter_args(adapter: str, server: EchoServer | str, key: str = KEY) -> tuple[list[str], dict[str, str]]:
    """The options and environment of a recording against `server` (or a URL) with the canary key; for jev,
    the base URL carries the canary password too (httpx then sends it as Basic credentials)."""
    key_env, with_password = ADAPTERS[adapter]
    url = server if isinstance(server, str) else server.url
    if with_password:
        url = url.replace("http://", f"http://user:{PASSWORD}@")
    args = [f"--sys1cal-model={adapter}", "--sys1cal-model-version=v1", f"--sys1cal-base-url={url}"]
    return [*args, "--sys1cal-record-mode=once"], {key_env: key}


def sent_credentials(server: EchoServer, adapter: str) -> None:
    """The server was asked, and with the canary: the test exercised the route."""
    assert server.requests > 0
    expected = f"Basic {BASIC}" if ADAPTERS[adapter][1] else f"Bearer {KEY}"
    assert set(server.seen) == {expected}, server.seen


@pytest.mark.e2e
@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
@pytest.mark.parametrize("status", ERROR_STATUSES)
def test_a_key_quoted_in_a_servers_error_reaches_no_output(tmp_path: Path, adapter: str, status: int) -> None:
    """Route: the server's error message (item failure line, JUnit `message`, the report's item errors, the
    Interrupted line of a 401/403, the summary)."""
    with EchoServer(RENDERINGS, status=status) as server:
        args, env = adapter_args(adapter, server)
        run = sys1cal(tmp_path, *args, "-rA", env=env)
    sent_credentials(server, adapter)
    assert run.returncode == (2 if status in (401, 403) else 1), run.output[-3000:]  # 2: 401/403 stop the run
    assert f"HTTP {status}: Invalid request for API key" in run.output and REDACTED in run.output
    assert_nothing_leaks(run, "junit.xml", "report.json", "report.html", "summary.md")


@pytest.mark.e2e
@pytest.mark.parametrize("status", [422, 401])
def test_a_key_quoted_in_a_servers_error_is_redacted_on_xdist_workers(tmp_path: Path, status: int) -> None:
    """The same route under xdist: messages are built on the workers, which have the run's redactor too."""
    with EchoServer(RENDERINGS, status=status) as server:
        args, env = adapter_args("systemone", server)
        run = sys1cal(tmp_path, *args, "-n", "2", "-rA", env=env)
    sent_credentials(server, "systemone")
    assert run.returncode in (1, 2) and f"HTTP {status}: Invalid request for API key {REDACTED}" in run.output
    assert_nothing_leaks(run, "junit.xml", "report.json", "report.html", "summary.md")


@pytest.mark.e2e
@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_a_key_echoed_in_a_successful_answer_reaches_no_cassette_and_replays(tmp_path: Path, adapter: str) -> None:
    """Route: what a recording keeps (headers by name and value, the reason phrase, the body, the reported
    model in the manifest and the notices). The scrubbed cassettes still replay."""
    with EchoServer(RENDERINGS) as server:
        args, env = adapter_args(adapter, server)
        run = sys1cal(tmp_path, *args, env=env)
    sent_credentials(server, adapter)
    echoed = f"user:{REDACTED}" if ADAPTERS[adapter][1] else REDACTED  # Basic credentials: the user name is no secret
    assert run.returncode == 0 and f"server reported model echo-{echoed}" in run.output, run.output[-3000:]
    folder = tmp_path / "cassettes" / adapter / "v1"
    cassette = json.loads(next(folder.glob("*/*.json")).read_text(encoding="utf-8"))["interactions"][0]["response"]
    assert cassette["status"]["message"] == f"OK {echoed}" and cassette["headers"]["x-echo"] == [echoed]
    assert not any(name.startswith("x-echo-") for name in cassette["headers"])  # the header named after the key
    for page in ("report.html", "summary.md"):  # the marker escaped there: a bare <REDACTED> is an unknown tag
        assert f"echo-{html.escape(echoed)}" in (tmp_path / page).read_text(encoding="utf-8"), page
    assert_nothing_leaks(
        run, "junit.xml", "report.json", "report.html", "summary.md", f"cassettes/{adapter}/v1/manifest.json"
    )
    replay = sys1cal(tmp_path, *args[:-1], "--sys1cal-record-mode=none", env=env)
    assert replay.returncode == 0, replay.output[-3000:]
    assert_nothing_leaks(replay, "junit.xml", "report.json")


@pytest.mark.e2e
def test_a_key_with_surrounding_whitespace_is_sent_stripped_and_redacted(tmp_path: Path) -> None:
    with EchoServer(RENDERINGS) as server:
        args, env = adapter_args("systemone", server, key=f"  {KEY} \n")
        run = sys1cal(tmp_path, *args, env=env)
    sent_credentials(server, "systemone")
    assert run.returncode == 0, run.output[-3000:]
    assert_nothing_leaks(run, "junit.xml", "report.json", "report.html", "summary.md")


@pytest.mark.e2e
@pytest.mark.parametrize(("key", "said"), [(f"{KEY[:13]}\n{KEY[13:]}", "a line break"), (f"{KEY}é", "a control")])
def test_an_unsendable_key_stops_before_anything_is_sent_without_showing_it(
    tmp_path: Path, key: str, said: str
) -> None:
    with EchoServer(RENDERINGS) as server:
        args, env = adapter_args("systemone", server, key=key)
        run = sys1cal(tmp_path, *args, env=env)
    assert server.requests == 0 and run.returncode == 4, run.output[-3000:]
    assert f"SYS1CAL_API_KEY holds {said}" in run.output and "Nothing was sent" in run.output
    assert_nothing_leaks(run)


@pytest.mark.e2e
def test_credentials_in_the_base_url_reach_no_connection_error_or_command(tmp_path: Path) -> None:
    """Routes: the fatal connection error (item line, Interrupted line, JUnit, reports) and the commands
    printed when replay has no cassette folder (a usage error) or misses a cassette (an item's advice)."""
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    args, env = adapter_args("jev", closed)
    run = sys1cal(tmp_path, *args, env=env)
    assert run.returncode == 2 and f"cannot connect to {closed}/v1/systemone" in run.output, run.output[-3000:]
    assert_nothing_leaks(run, "junit.xml", "report.json")
    for path in tmp_path.glob("*.*"):
        path.unlink()
    no_folder = sys1cal(tmp_path, *args[:-1], env=env)
    assert no_folder.returncode == 4 and f"--sys1cal-base-url={closed}" in no_folder.output, no_folder.output
    assert_nothing_leaks(no_folder)
    with EchoServer(RENDERINGS[:1]) as server:
        args, env = adapter_args("jev", server)
        sys1cal(tmp_path, *args, "-k", RENDERINGS[0].short_id, env=env)
    missing = sys1cal(tmp_path, *args[:-1], env=env)  # the second rendering has no cassette
    assert missing.returncode == 1 and f"--sys1cal-base-url={server.url} " in missing.output, missing.output[-3000:]
    assert_nothing_leaks(missing, "junit.xml", "report.json")


# A `systemone` adapter with a bug that quotes the request's headers (the key among them) in its message and
# keeps them in a local variable (--showlocals), where BUGGY says: in `parse` (on the main thread when
# replaying, on the recording thread when recording) or in `requests` (first called by the recording plan,
# before any item: an internal error).
BUGGY_CONFTEST = """
import os

import pytest
from vcr.request import Request as VcrRequest

from pytest_sys1cal.models.systemone import SystemOneAdapter


class Buggy(SystemOneAdapter):
    name = "buggy"

    def requests(self, rendering, question_ids):
        headers = self.json_headers()
        if os.environ.get("BUGGY") == "requests":
            raise RuntimeError(f"cannot build a request with headers {headers}")
        return super().requests(rendering, question_ids)

    def parse(self, question_ids, responses):
        headers = self.json_headers()
        if os.environ.get("BUGGY") == "parse":
            raise RuntimeError(f"cannot parse the answer to a request with headers {headers}")
        return super().parse(question_ids, responses)


@pytest.hookimpl(optionalhook=True)
def pytest_sys1cal_adapters():
    return {"buggy": Buggy}
"""
BUGGY = ("--sys1cal-model=buggy", "--sys1cal-model-version=v1")


@pytest.fixture(scope="module")
def buggy_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Cassettes of the buggy adapter, recorded once while its bug slept."""
    folder = tmp_path_factory.mktemp("buggy")
    (folder / "conftest.py").write_text(BUGGY_CONFTEST, encoding="utf-8")
    with EchoServer(RENDERINGS) as server:
        run = sys1cal(
            folder,
            *BUGGY,
            f"--sys1cal-base-url={server.url}",
            "--sys1cal-record-mode=once",
            env={"SYS1CAL_API_KEY": KEY},
        )
    assert run.returncode == 0, run.output[-3000:]
    return folder


@pytest.fixture
def buggy_cassettes(buggy_recording: Path, tmp_path: Path) -> Path:
    """A folder of the test's own with the buggy adapter's conftest and cassettes."""
    shutil.copy(buggy_recording / "conftest.py", tmp_path)
    shutil.copytree(buggy_recording / "cassettes", tmp_path / "cassettes")
    return tmp_path


@pytest.mark.e2e
@pytest.mark.parametrize(
    "options",
    [("--showlocals", "--tb=long", "-rA"), ("--tb=native",), ("-l", "-n", "2", "-rA"), ("-p", "no:terminal")],
    ids=["showlocals", "native", "xdist", "no-terminal"],
)
def test_a_bug_quoting_the_key_shows_its_traceback_redacted(buggy_cassettes: Path, options: tuple[str, ...]) -> None:
    """Route: pytest's own traceback of an unexpected exception (its message, --showlocals' locals, the short
    summary, JUnit's message and text), built on the worker under xdist."""
    env = {"SYS1CAL_API_KEY": KEY, "BUGGY": "parse"}
    run = sys1cal(buggy_cassettes, *BUGGY, *options, env=env)
    assert run.returncode == 1, run.output[-3000:]
    failures = ElementTree.parse(buggy_cassettes / "junit.xml").getroot().iter("failure")
    junit = [(failure.get("message", ""), failure.text or "") for failure in failures]
    assert len(junit) == len(RENDERINGS), junit
    assert all("RuntimeError: cannot parse the answer" in m and f"Bearer {REDACTED}" in m + t for m, t in junit), junit
    if "no:terminal" not in options:
        assert "RuntimeError: cannot parse the answer" in run.output and f"Bearer {REDACTED}" in run.output
    if "--showlocals" in options:
        # The local that holds the key, shown redacted (pytest 8.0 sorts a dict's keys in a local's repr, newer ones keep their order).
        assert re.search(r"^headers +=\s+\{.*'Authorization': 'Bearer <REDACTED>'", run.output, re.MULTILINE)
    assert_nothing_leaks(run, "junit.xml", "report.json", "report.html", "summary.md")


@pytest.mark.e2e
def test_a_bug_quoting_the_key_while_recording_or_planning_is_redacted(buggy_cassettes: Path) -> None:
    """Routes: an exception on the recording thread (the item's one line) and one in the plan, before any
    item runs (pytest's INTERNALERROR lines, --showlocals included)."""
    with EchoServer(RENDERINGS) as server:
        record = (f"--sys1cal-base-url={server.url}", "--sys1cal-record-mode=all")
        thread = sys1cal(buggy_cassettes, *BUGGY, *record, env={"SYS1CAL_API_KEY": KEY, "BUGGY": "parse"})
        assert thread.returncode == 1 and "recording failed: RuntimeError: cannot parse the answer" in thread.output
        assert f"Bearer {REDACTED}" in thread.output
        assert_nothing_leaks(thread, "junit.xml", "report.json")
        for path in buggy_cassettes.glob("*.*"):
            path.unlink() if path.suffix != ".py" else None
        plan = sys1cal(
            buggy_cassettes, *BUGGY, *record, "--showlocals", env={"SYS1CAL_API_KEY": KEY, "BUGGY": "requests"}
        )
    assert plan.returncode == 3 and "INTERNALERROR" in plan.output and f"Bearer {REDACTED}" in plan.output
    assert_nothing_leaks(plan)


@pytest.mark.e2e
def test_log_records_of_httpx_and_vcrpy_are_redacted(tmp_path: Path) -> None:
    """Route: logging. httpx logs each request's URL (credentials included) and reason phrase, vcrpy each
    recorded response before it is scrubbed; live logs, the log file and JUnit's captured logs show them."""
    logs = (
        "-o",
        "log_cli=true",
        "--log-cli-level=DEBUG",
        f"--log-file={tmp_path / 'log.txt'}",
        "--log-file-level=DEBUG",
    )
    with EchoServer(RENDERINGS, status=200) as server:
        args, env = adapter_args("jev", server)
        run = sys1cal(tmp_path, *args, *logs, "-o", "junit_logging=all", env=env)
    sent_credentials(server, "jev")
    assert run.returncode == 0, run.output[-3000:]
    log = (tmp_path / "log.txt").read_text(encoding="utf-8")
    assert f'HTTP Request: POST {server.url}/v1/systemone "HTTP/1.1 200 OK user:{REDACTED}"' in log
    assert "Appending request" in log
    assert_nothing_leaks(run, "junit.xml", "report.json", "log.txt")
