"""Issue 25's wire items, on both built-in wires: a 307/308 redirect shown with its Location and never
followed; a base URL with a query string or fragment refused as a usage error naming the fix (and never its
values); proxies from the environment honoured and named in the plan (NO_PROXY too); and a base URL with a
user name and no password (``http://TOKEN@host``), whose token and the Basic header made of it reach no output,
against tests/echo.py's server that echoes the credentials it gets everywhere it can."""

from __future__ import annotations

import base64
import http.client
import threading
from pathlib import Path
from urllib.parse import urlsplit

# pytester's in-process runs forget modules first imported during a run; import the async HTTP stack once,
# before any run (see tests/recording/test_recording.py).
import anyio._backends._asyncio  # noqa: F401
import httpcore._backends.anyio  # noqa: F401
import pytest

from pytest_sys1cal.recording.proxies import route_for
from tests.echo import EchoServer
from tests.loopback import Handler, Serving
from tests.misbehave import ENVIRONMENT, WIRES, Misbehaving, recording, subset
from tests.runs import run, sys1cal
from tests.test_secrets import RENDERINGS
from tests.test_secrets import sys1cal as sys1cal_process

PROXY_VARIABLES = [f"{name}{suffix}" for name in ("http", "https", "all", "no") for suffix in ("_proxy", "_PROXY")]
TOKEN = "tok-CANARY-7d3e91b2c4-TOKEN"
PROXY_PASSWORD = "proxy-CANARY-5b8e2f-PW"
TOKEN_BASIC = base64.b64encode(f"{TOKEN}:".encode()).decode()  # what httpx sends for http://TOKEN@host


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*ENVIRONMENT, *PROXY_VARIABLES, *(v.upper() for v in PROXY_VARIABLES)):
        monkeypatch.delenv(name, raising=False)


# ------------------------------------------------------------------------------------------ redirects


@pytest.mark.parametrize("status", [307, 308])
@pytest.mark.parametrize("wire", WIRES)
def test_a_redirect_is_shown_with_its_location_and_not_followed(
    pytester: pytest.Pytester, tmp_path: Path, wire: str, status: int
) -> None:
    dataset, _ = subset(tmp_path, 6)
    with Misbehaving([], wire=wire) as elsewhere:
        location = f"{elsewhere.url}/moved/v1/systemone"
        default = ("status", status, {"Location": location}, b"")
        with Misbehaving([], default=default, wire=wire) as server:
            result = run(pytester, *recording(wire, server.url, dataset, tmp_path / "c"))
        followed = elsewhere.requests
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*Interrupted: sys1cal: *HTTP {status}: the server redirects {server.url}/v1/* to {location}; not followed (a "
         "redirect could carry the key to another host): if the server has moved, give its new address with "
         "--sys1cal-base-url*"]
    )  # fmt: skip
    assert followed == 0


# ------------------------------------------------------------------------------------------ base URLs


@pytest.mark.parametrize(
    ("url", "what", "origin"),
    [
        (
            "http://127.0.0.1:9/?api_key=sk-QUERY-SECRET-1234",
            "a query string (parameters: api_key)",
            "http://127.0.0.1:9/",
        ),
        ("http://127.0.0.1:9/api?", "a query string", "http://127.0.0.1:9/api"),
        ("http://127.0.0.1:9#top", "a fragment", "http://127.0.0.1:9"),
    ],
)
@pytest.mark.parametrize("wire", WIRES)
def test_a_base_url_with_a_query_string_or_fragment_is_a_usage_error(
    pytester: pytest.Pytester, tmp_path: Path, wire: str, url: str, what: str, origin: str
) -> None:
    dataset, _ = subset(tmp_path, 2)
    result = run(pytester, *recording(wire, url, dataset, tmp_path / "c"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: --sys1cal-base-url: the base URL has {what}, which the plugin cannot join its routes to (it appends "
         f"/v1/… to the origin); give the origin alone, {origin}, and pass a key through the environment, never in "
         "the URL"]
    )  # fmt: skip
    assert "QUERY-SECRET" not in result.stdout.str() + result.stderr.str()


def test_a_base_url_from_the_environment_is_checked_and_named_too(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test-key-for-the-jev-wire")
    monkeypatch.setenv("TYPESAFE_BASE_URL", "https://api.example.test/?region=eu")
    dataset, _ = subset(tmp_path, 2)
    result = sys1cal(pytester, "--model=jev", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={tmp_path / 'c'}", "--sys1cal-model-version=jev-1.14.0", "--sys1cal-record-mode=once")  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: TYPESAFE_BASE_URL: the base URL has a query string (parameters: region)*"])


# ------------------------------------------------------------------------------------------ proxies


class ForwardProxy(Serving):
    """A plain HTTP forward proxy on 127.0.0.1: requests in absolute form, relayed to their server; `seen`
    keeps the URLs it relayed."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.lock = threading.Lock()
        owner = self

        class ProxyHandler(Handler):
            def relay(self) -> None:
                target = urlsplit(self.path)
                with owner.lock:
                    owner.seen.append(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                connection = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in ("proxy-connection", "connection", "proxy-authorization")
                }
                connection.request(self.command, target.path or "/", body=body or None, headers=headers)
                answer = connection.getresponse()
                payload = answer.read()
                self.send_response(answer.status, answer.reason)
                for name, value in answer.getheaders():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                connection.close()

            do_GET = do_POST = relay  # noqa: N815

        self.serve(ProxyHandler)


@pytest.mark.parametrize("wire", WIRES)
def test_a_proxy_from_the_environment_is_honoured_and_said(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, wire: str
) -> None:
    dataset, _ = subset(tmp_path, 3)
    with Misbehaving([], wire=wire) as server, ForwardProxy() as proxy:
        # The proxy's credentials (sent to the proxy only) are a secret: never shown, never stored.
        monkeypatch.setenv("HTTP_PROXY", proxy.url.replace("http://", f"http://proxy-user:{PROXY_PASSWORD}@"))
        result = run(pytester, *recording(wire, server.url, dataset, tmp_path / "c"))
        relayed, asked = list(proxy.seen), server.requests
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([f"sys1cal: through the proxy {proxy.url} (from HTTP_PROXY in the environment)"])
    stored = b"".join(p.read_bytes() for p in (tmp_path / "c").rglob("*.json"))
    assert PROXY_PASSWORD not in result.stdout.str() and PROXY_PASSWORD.encode() not in stored
    assert asked == len(relayed) == (3 if wire == "systemone" else 12)
    assert all(url.startswith(f"{server.url}/v1/") for url in relayed)


def test_no_proxy_sends_requests_around_the_proxy_and_says_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    dataset, _ = subset(tmp_path, 3)
    with Misbehaving([]) as server, ForwardProxy() as proxy:
        monkeypatch.setenv("http_proxy", proxy.url)
        monkeypatch.setenv("NO_PROXY", "example.com, 127.0.0.0/8")
        result = run(pytester, *recording("systemone", server.url, dataset, tmp_path / "c"))
        relayed = list(proxy.seen)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["sys1cal: directly, not through the proxy in http_proxy: NO_PROXY names this server"])
    assert relayed == []


def test_the_route_follows_the_schemes_variables_and_no_proxy_as_curl_reads_them() -> None:
    env = {"HTTPS_PROXY": "proxy.corp:3128", "ALL_PROXY": "http://all:1", "NO_PROXY": ".internal,10.0.0.0/8,h:8080"}
    assert route_for("https://api.typesafe.ai", env).proxy == "http://proxy.corp:3128"  # host:port means http://
    assert route_for("http://api.typesafe.ai", env).proxy == "http://all:1"  # no HTTP_PROXY: ALL_PROXY
    assert route_for("https://a.b.internal", env).proxy is None  # a domain it is under
    assert route_for("http://10.1.2.3:8000", env).bypassed == "ALL_PROXY"  # a network it is in
    assert route_for("http://h:8080", env).proxy is None and route_for("http://h:9090", env).proxy  # host:port
    assert route_for("http://x", {"NO_PROXY": "*", "HTTP_PROXY": "http://p:1"}).proxy is None
    assert route_for("http://x", {}).line() is None  # no proxy named: nothing to say
    assert "socksio" in (route_for("http://x", {"ALL_PROXY": "socks5://p:1"}).problem or "socksio")


# ------------------------------------------------------------------------------------------ URL credentials


@pytest.mark.e2e  # pytest in a subprocess, so that everything it prints is captured
@pytest.mark.parametrize("status", [200, 400])
@pytest.mark.parametrize("adapter", ["systemone", "jev"])
def test_a_token_given_as_the_base_urls_user_name_reaches_no_output(tmp_path: Path, adapter: str, status: int) -> None:
    """``http://TOKEN@host`` is sent as Basic credentials (``TOKEN:``); the server echoes them in its error, its
    headers, the reported model and the body. Neither the token nor its Basic form is in the terminal, the JUnit
    XML, the reports, the job summary, the cassettes or the manifest."""
    with EchoServer(RENDERINGS, status=status) as server:
        url = server.url.replace("http://", f"http://{TOKEN}@")
        args = [f"--sys1cal-model={adapter}", "--sys1cal-model-version=v1", f"--sys1cal-base-url={url}",
                "--sys1cal-record-mode=once"]  # fmt: skip
        run = sys1cal_process(tmp_path, *args, "-rA", env={"TYPESAFE_API_KEY": "sk-the-jev-key-0123456789"})
    assert server.seen and set(server.seen) == {f"Basic {TOKEN_BASIC}"}  # the route was exercised
    assert run.returncode == (0 if status == 200 else 1), run.output[-3000:]
    places = run.places()
    assert {"junit.xml", "report.json", "summary.md"} <= set(places)
    if status == 200:
        assert f"cassettes/{adapter}/v1/manifest.json" in places
    canaries = (TOKEN, TOKEN_BASIC, TOKEN[:14], TOKEN[14:])
    leaked = [(place, c) for place, data in places.items() for c in canaries if c.lower().encode() in data.lower()]
    assert leaked == [], (leaked, run.output[-3000:])
