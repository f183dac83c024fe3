"""Server text is data (issues 25 and 28): what a server sends (the model id it reports, its error bodies) is
escaped for the medium it is written to, on both built-in wires, when recording and on every later replay.

A server reports a model id carrying a Markdown heading that claims the gates passed, a table, an image, HTML,
line breaks, a carriage return and ANSI escape codes; another answers with such an error body. The job summary
is rendered by a real CommonMark parser with GitHub's tables (markdown-it-py): no heading, table, image or HTML
may come out of the server's text. The terminal must stay one line per line (no escape code, no carriage return,
no line of the server's own), the HTML report escapes it, and the manifest keeps it as it was sent (data), so
that the offline replay, with the server gone, renders it escaped again."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from pytest_sys1cal.escape import markdown_text, one_line, quoted
from tests.field import subset
from tests.loopback import Behaviour, LoopbackServer
from tests.models.test_semif import FakeOpenAI
from tests.runs import sys1cal

FAKE_VERDICT = "All 19 gates passed ✅"
# Short enough to be quoted whole in the notice (120 characters): an image, an HTML tag (unquoted, so JSON quoting
# leaves it a tag), a heading and a table behind line breaks, escape codes, a carriage return, a bidi override.
HOSTILE = (
    f"evil-1 ![t](http://127.0.0.1:9/t.png) <img src=http://127.0.0.1:9/p.png>\n## {FAKE_VERDICT}\n|a|b|\n|-|-|"
    "\x1b[2J\x1b[32mOK\rX\u202eexe"
)
MARKERS = ("\x1b", "\r", "\u202e")  # what must never reach a terminal raw


class HostileOpenAI(FakeOpenAI):
    """The fake OpenAI-compatible server, reporting the hostile model id in every answer."""

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return {**super().answer(path, body), "model": HOSTILE}


def summary_tokens(text: str) -> list[Any]:
    """The job summary parsed as GitHub would (CommonMark with tables), children flattened in."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    flat = []
    for token in tokens:
        flat.append(token)
        flat += token.children or []
    return flat


def assert_inert_markdown(text: str) -> None:
    tokens = summary_tokens(text)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings and all(h.startswith("Sys1Cal calibration:") for h in headings), headings
    assert not [t for t in tokens if t.type in ("image", "html_inline", "html_block")]
    headers = [tokens[i + 2].content for i, t in enumerate(tokens) if t.type == "th_open"]
    assert "verdict" not in headers or "gate" in headers  # the plugin's own gate table only
    shown = "".join(t.content for t in tokens if t.type == "text")
    assert FAKE_VERDICT in shown and "<img src=" in shown and "![t](" in shown  # the server's words, as text


def assert_one_line_terminal(output: str) -> None:
    assert not any(marker in output for marker in MARKERS), repr(output[-2000:])
    for line in output.splitlines():
        assert not line.startswith(("## ", "|a|b|", "<img")), line


@pytest.fixture
def dataset(pytester: pytest.Pytester) -> Iterator[tuple[Path, list[Any]]]:
    path = pytester.path / "five.jsonl"
    yield path, subset(path, 5)


def run(pytester: pytest.Pytester, tag: str, monkeypatch: pytest.MonkeyPatch, *args: str) -> pytest.RunResult:
    """A run that writes every output: the job summary, the JSON and HTML reports, the JUnit XML."""
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / f"{tag}.md"))
    html = (f"--sys1cal-html={pytester.path / f'{tag}.html'}",) if _has_matplotlib() else ()
    return sys1cal(pytester, f"--sys1cal-report={pytester.path / f'{tag}.json'}", f"--junitxml={pytester.path / f'{tag}.xml'}", "--sys1cal-repeats=1", *html, *args)  # fmt: skip


def _has_matplotlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def check_outputs(pytester: pytest.Pytester, tag: str, result: pytest.RunResult) -> None:
    assert_one_line_terminal(result.stdout.str() + result.stderr.str())
    assert_inert_markdown((pytester.path / f"{tag}.md").read_text(encoding="utf-8"))
    report = json.loads((pytester.path / f"{tag}.json").read_text(encoding="utf-8"))
    assert report["model"]["server_model"] == HOSTILE  # the report keeps the data as it was sent
    assert [n for n in report["notices"] if n.startswith(f"the server reported model {quoted(HOSTILE)}, not")]
    if _has_matplotlib():
        page = (pytester.path / f"{tag}.html").read_text(encoding="utf-8")
        assert "<img" not in page and not any(marker in page for marker in MARKERS[::2])
        assert "&lt;img src=http://127.0.0.1:9/p.png&gt;" in page
    ET.parse(pytester.path / f"{tag}.xml")  # well-formed, escape codes and all


@pytest.mark.parametrize("wire", ["systemone", "semif"])
def test_a_hostile_model_id_is_data_when_recording_and_on_every_replay(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, dataset: tuple[Path, list[Any]], wire: str
) -> None:
    path, renderings = dataset
    root = pytester.path / "cassettes"
    common = (f"--sys1cal-model={wire}", f"--sys1cal-dataset={path}", f"--sys1cal-cassettes={root}")
    server = (
        LoopbackServer.for_renderings(renderings, Behaviour(model=HOSTILE)) if wire == "systemone" else HostileOpenAI()
    )
    with server:
        recorded = run(
            pytester, "recorded", monkeypatch, *common, f"--sys1cal-base-url={server.url}", "--sys1cal-record-mode=once"
        )
    assert recorded.ret == pytest.ExitCode.OK, recorded.stdout.str()[-3000:]
    (manifest,) = root.glob("*/*/manifest.json")
    assert json.loads(manifest.read_text(encoding="utf-8"))["server_model"] == HOSTILE  # kept as data
    check_outputs(pytester, "recorded", recorded)
    replayed = run(pytester, "replayed", monkeypatch, *common)  # the server is gone: offline, from the manifest
    assert replayed.ret == pytest.ExitCode.OK
    check_outputs(pytester, "replayed", replayed)
    notice = next(line for line in replayed.stdout.lines if line.startswith("notice: the server reported model"))
    assert notice.startswith('notice: the server reported model "evil-1 ![t](http://127.0.0.1:9/t.png) <img src=')


def _error_body(wire: str) -> bytes:
    detail = {"detail": HOSTILE} if wire == "systemone" else {"error": {"message": HOSTILE}}
    return json.dumps(detail).encode()


class RefusingOpenAI(FakeOpenAI):
    """The fake OpenAI-compatible server answering every request with `status` and the hostile error body."""

    def __init__(self, status: int):
        super().__init__()
        self.status = status
        owner = self
        handler = self.server.RequestHandlerClass

        def do_post(request: Any) -> None:
            request.rfile.read(int(request.headers["Content-Length"]))
            payload = _error_body("semif")
            request.send_response(owner.status)
            request.send_header("Content-Type", "application/json")
            request.send_header("Content-Length", str(len(payload)))
            request.end_headers()
            request.wfile.write(payload)

        handler.do_POST = do_post  # type: ignore[attr-defined]


@pytest.mark.parametrize("wire", ["systemone", "semif"])
@pytest.mark.parametrize("status", [400, 401])
def test_a_hostile_error_body_stays_one_line_everywhere(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, dataset: tuple[Path, list[Any]], wire: str, status: int
) -> None:
    """400 fails each item with the server's message; 401 stops the run, its message the stop's reason."""
    path, renderings = dataset
    if wire == "systemone":
        script = [(status, {}, _error_body(wire))] * 40
        server: Any = LoopbackServer.for_renderings(renderings, Behaviour(script=script))
    else:
        server = RefusingOpenAI(status)
    with server:
        result = run(
            pytester, "refused", monkeypatch, f"--sys1cal-model={wire}", f"--sys1cal-dataset={path}",
            f"--sys1cal-cassettes={pytester.path / 'c'}", f"--sys1cal-base-url={server.url}",
            "--sys1cal-record-mode=once", "--sys1cal-retry-budget=0",
        )  # fmt: skip
    output = result.stdout.str()
    assert result.ret in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.INTERRUPTED), output[-3000:]
    assert f"HTTP {status}" in output and f"\\n## {FAKE_VERDICT}\\n|a|b|" in output
    assert_one_line_terminal(output + result.stderr.str())
    cases = ET.parse(pytester.path / "refused.xml").getroot().iter("testcase")
    messages = [f.get("message", "") for case in cases for f in (*case.iter("failure"), *case.iter("skipped"))]
    assert messages and all("\n" not in m and "\x1b" not in m for m in messages)
    summary = pytester.path / "refused.md"
    if summary.exists():
        assert "<img" not in summary.read_text(encoding="utf-8")


def test_the_helpers() -> None:
    assert one_line("a\r\nb\x1b[31m\u2028c\td") == "a\\r\\nb\\x1b[31m\\u2028c\\td"
    assert one_line("plain ≤ Δ ✅ text") == "plain ≤ Δ ✅ text"
    assert markdown_text("## x") == "\\## x" and markdown_text("1. x") == "1\\. x"
    assert markdown_text("-0.161") == "-0.161" and markdown_text("- item") == "\\- item"
    assert markdown_text("<img src=x>|`y`*z*[a](b) $m$ ~s~ _e_ min_mean_ovl") == (
        "&lt;img src=x&gt;\\|\\`y\\`\\*z\\*\\[a\\](b) \\$m\\$ \\~s\\~ \\_e\\_ min_mean_ovl"
    )
    assert quoted("jev-1.13.0") == "jev-1.13.0" and quoted("org/m:8b") == "org/m:8b" and quoted("a b") == '"a b"'
    assert quoted("x" * 500).endswith('… (500 characters)"')


def test_server_text_mentions_nobody_and_links_nowhere_on_github() -> None:
    """In a pull-request comment an @name notifies that person or team, and a bare URL or www. address becomes
    a link the server chose: the escaped text keeps every character but breaks GitHub's triggers."""
    hostile = "ping @octocat and @org/team, mail a@b.example, see https://evil.example/x or www.evil.example"
    escaped = markdown_text(hostile)
    assert not re.search(r"@[A-Za-z0-9]|://|(?<![A-Za-z0-9])www\.", escaped), escaped
    rendered = "".join(t.content for t in summary_tokens(escaped) if t.type == "text")
    assert rendered.replace("\u200b", "") == hostile  # shown as sent, only a zero-width space added


def test_a_code_span_shows_any_text_literally_and_a_table_keeps_it() -> None:
    """Node ids and gate names go into the pull-request comment and the job summary as code spans: whatever
    they hold (backticks, a table's |, a line break) renders as those characters, inside one span."""
    from pytest_sys1cal.escape import code_span
    from pytest_sys1cal.report.table import Table, markdown

    texts = ["sys1cal::jev[bayes/x__seed_1]", "a`b", "`edge`", "pipe|in\nit"]
    rows = [[code_span(text), "1"] for text in texts]
    lines = markdown(Table(title="t", columns=["id", "n"], rows=rows))
    tokens = summary_tokens("\n".join(lines))
    shown = [t.content for t in tokens if t.type == "code_inline"]
    assert shown == ["sys1cal::jev[bayes/x__seed_1]", "a`b", "`edge`", "pipe|in\\nit"]
    cells = [t for t in tokens if t.type == "td_open"]
    assert len(cells) == 2 * len(texts)  # the | inside a span did not split its cell
