"""A real headless Chromium for the tests, driven over the DevTools protocol (CDP) with websocket-client.

`open_page` loads one file and returns what a person would see and what the browser did: console errors,
uncaught exceptions, error log entries, every request the page made, a measurement of each <figure>, and
a full-page screenshot. Chromium is Debian's package (`apt-get install chromium`); `find_chromium()` is
None where it is absent, and the tests skip saying so.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

FLAGS = [
    "--headless",
    "--no-sandbox",  # root in CI
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",  # any free port; Chromium writes it to DevToolsActivePort
]
WIDTH, HEIGHT = 1280, 900
START_TIMEOUT = 30.0
LOAD_TIMEOUT = 60.0
FIGURES_JS = """JSON.stringify([...document.querySelectorAll('figure')].map(f => {
  const svg = f.querySelector('svg'); const r = svg ? svg.getBoundingClientRect() : null;
  const box = f.getBoundingClientRect();
  return {id: f.id, title: (f.querySelector('h3') || {}).textContent || '',
          width: r ? r.width : 0, height: r ? r.height : 0,
          marks: svg ? svg.querySelectorAll('path, use').length : 0,
          caption: (f.querySelector('figcaption') || {}).textContent || '',
          box: {x: box.x + scrollX, y: box.y + scrollY, width: box.width, height: box.height}};
}))"""


def find_chromium() -> str | None:
    return next((path for name in ("chromium", "chromium-browser") if (path := shutil.which(name))), None)


CHROMIUM = find_chromium()
# The mark of a test that opens a page in Chromium: skipped, saying how to get it, where it is absent.
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium; .ci/run installs it)"
)


@dataclass
class Page:
    url: str
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    log_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    title: str = ""
    screenshot: bytes = b""
    figure_shots: dict[str, bytes] = field(default_factory=dict)
    probes: dict[str, Any] = field(default_factory=dict)  # the value of each expression asked for, JSON-decoded


class Session:
    """One CDP connection to a page target: numbered commands, events kept in the order they came."""

    def __init__(self, ws_url: str):
        import websocket  # websocket-client, the test extra

        # No UTF-8 check of each frame in Python (seconds a screenshot): every message is parsed as JSON anyway.
        self.socket = websocket.create_connection(
            ws_url, timeout=LOAD_TIMEOUT, suppress_origin=True, skip_utf8_validation=True
        )
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_for(self, event: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(e["method"] == event for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {event} within {timeout:g} s")
            self.socket.settimeout(max(deadline - time.monotonic(), 0.1))
            message = json.loads(self.socket.recv())
            if "method" in message:
                self.events.append(message)

    def close(self) -> None:
        self.socket.close()


@contextlib.contextmanager
def chromium(binary: str) -> Iterator[int]:
    """A headless Chromium with a fresh profile; yields its DevTools port on 127.0.0.1. Chromium runs in a
    process group of its own, ended whole: its helper processes outlive the main one for a moment and keep
    writing into the profile, which a removal racing them then fails on ("Directory not empty")."""
    profile = tempfile.mkdtemp(prefix="sys1cal-chromium-")
    process = subprocess.Popen(
        [binary, *FLAGS, f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield _devtools_port(Path(profile), process)
    finally:
        _end_group(process)
        for _attempt in range(50):  # what the helpers wrote as they ended
            shutil.rmtree(profile, ignore_errors=True)
            if not os.path.exists(profile):
                break
            time.sleep(0.1)


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to Chromium's process group, SIGKILL to what is left of it after 10 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _devtools_port(profile: Path, process: subprocess.Popen[bytes]) -> int:
    marker = profile / "DevToolsActivePort"
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited with status {process.returncode} before it listened")
        if marker.is_file() and (lines := marker.read_text().splitlines()):
            return int(lines[0])
        time.sleep(0.1)
    raise TimeoutError(f"chromium did not open its DevTools port within {START_TIMEOUT:g} s")


def _page_target(port: int) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as response:
            pages = [t for t in json.load(response) if t.get("type") == "page"]
        if pages:
            return pages[0]["webSocketDebuggerUrl"]
        if time.monotonic() > deadline:
            raise TimeoutError("chromium opened no page")
        time.sleep(0.1)


def open_page(binary: str, path: Path, *, figure_shots: bool = False, probes: dict[str, str] | None = None) -> Page:
    """Load `path` from disk in a fresh headless Chromium and report what happened; `probes`: name → a JavaScript
    expression whose value is JSON text (JSON.stringify(...)), evaluated once the page has loaded."""
    url = path.resolve().as_uri()
    page = Page(url=url)
    with chromium(binary) as port:
        session = Session(_page_target(port))
        try:
            for domain in ("Runtime", "Log", "Network", "Page"):
                session.send(f"{domain}.enable")
            session.send(
                "Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1, mobile=False
            )
            session.send("Page.navigate", url=url)
            session.wait_for("Page.loadEventFired", LOAD_TIMEOUT)
            page.title = _evaluate(session, "document.title")
            page.figures = json.loads(_evaluate(session, FIGURES_JS))
            page.probes = {name: json.loads(_evaluate(session, js)) for name, js in (probes or {}).items()}
            page.screenshot = _screenshot(session)
            if figure_shots:
                page.figure_shots = {f["id"]: _screenshot(session, f["box"]) for f in page.figures}
            _collect(page, session.events)
        finally:
            session.close()
    return page


def _evaluate(session: Session, expression: str) -> Any:
    result = session.send("Runtime.evaluate", expression=expression, returnByValue=True)
    if "exceptionDetails" in result:
        raise RuntimeError(f"{expression[:40]}…: {result['exceptionDetails']}")
    return result["result"]["value"]


def _screenshot(session: Session, box: dict[str, float] | None = None) -> bytes:
    if box is None:
        size = session.send("Page.getLayoutMetrics")["cssContentSize"]
        box = {"x": 0, "y": 0, "width": WIDTH, "height": size["height"]}
    clip = {**box, "scale": 1}
    shot = session.send("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip)
    return base64.b64decode(shot["data"])


def _collect(page: Page, events: list[dict[str, Any]]) -> None:
    for event in events:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            page.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            page.exceptions.append(str(params.get("exceptionDetails", {}).get("text")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            page.log_errors.append(f"{params['entry'].get('source')}: {params['entry'].get('text')}")
        elif method == "Network.requestWillBeSent":
            page.requests.append(params["request"]["url"])


def not_blank(png: bytes) -> tuple[float, int]:
    """(share of pixels that are not near-white, distinct colours) of a screenshot. The colours are counted as
    one 24-bit number a pixel: np.unique over rows of three took most of a browser test's time on a full page."""
    import numpy as np
    from matplotlib.image import imread

    pixels = imread(io.BytesIO(png), format="png")[..., :3]
    inked = float(np.mean(pixels.min(axis=-1) < 0.9))
    rgb = (pixels * 255).astype(np.uint8).reshape(-1, 3).astype(np.uint32)
    colours = np.unique(rgb[:, 0] << 16 | rgb[:, 1] << 8 | rgb[:, 2]).size
    return inked, int(colours)
