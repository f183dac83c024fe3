"""Bodies above the size limit are refused before they are stored, compressed or not, with the limit in the
message, and memory stays bounded (issue 25, issue 28's 200,000 top_logprobs): a 200 MB body (declared, and
ending only at the close), a gzip bomb (1.1 MB inflating to 1.15 GB) cut while it inflates, an encoding the
recording did not ask for, and a SemIf answer with far more alternatives than asked; on both built-in wires,
against tests/misbehave.py's server. The reader's own rules (recording/body.py) are tested first, on bytes."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib
from pathlib import Path

# pytester's in-process runs forget modules first imported during a run; import the async HTTP stack once,
# before any run (see tests/recording/test_recording.py).
import anyio._backends._asyncio  # noqa: F401
import httpcore._backends.anyio  # noqa: F401
import pytest

from pytest_sys1cal.recording.body import BodyRefused, LimitedBody
from tests.misbehave import ENVIRONMENT, WIRES, Misbehaving, gzip_bomb, recording, subset
from tests.runs import run

URL = "http://server/v1/x"


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


def read(data: bytes, limit: int, encoding: str | None = None, declared: str | None = None, piece: int = 1000) -> bytes:
    body = LimitedBody(limit, encoding, declared, URL)
    for start in range(0, len(data), piece):
        body.feed(data[start : start + piece])
    return body.content()


# ------------------------------------------------------------------------------------------ the reader


def test_bodies_within_the_limit_are_read_whole_in_every_encoding_asked_for() -> None:
    text = json.dumps({"answers": list(range(2000))}).encode()
    assert read(text, 100_000) == text
    assert read(gzip.compress(text), 100_000, "gzip") == text
    assert read(zlib.compress(text), 100_000, "deflate") == text  # zlib-wrapped, as RFC 9110 says
    raw = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    assert read(raw.compress(text) + raw.flush(), 100_000, "deflate") == text  # raw deflate, as some servers send
    assert read(gzip.compress(zlib.compress(text)), 100_000, "deflate, gzip") == text  # applied in that order
    assert read(text, len(text), "identity", str(len(text))) == text  # exactly the limit is allowed


def test_a_body_is_refused_the_moment_it_passes_the_limit() -> None:
    with pytest.raises(BodyRefused, match=r"its Content-Length says 2,000,000 bytes \(2 MB\)"):
        LimitedBody(1_000_000, None, "2000000", URL)  # before a byte is read
    body = LimitedBody(1000, None, None, URL)
    body.feed(b"x" * 1000)
    with pytest.raises(BodyRefused, match=r"larger than the 1,000 bytes a response may have \(more than 1,000 bytes"):
        body.feed(b"x")
    with pytest.raises(BodyRefused, match="it decompressed to more than 1,000,000 bytes"):
        read(gzip_bomb(8), 1_000_000, "gzip", piece=65536)  # 8 MiB of zeros from 8 KB
    with pytest.raises(BodyRefused, match="not valid gzip data"):
        read(b"not gzip at all", 1000, "gzip")
    with pytest.raises(BodyRefused, match="encoded as br, which the recording did not ask for"):
        LimitedBody(1000, "br", None, URL)


# ------------------------------------------------------------------------------------------ runs, on both wires


def stored(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*/*.json") if p.name != "manifest.json")


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "until-close"])
@pytest.mark.parametrize("wire", WIRES)
def test_a_200_mb_body_is_refused_before_it_is_stored(
    pytester: pytest.Pytester, tmp_path: Path, wire: str, declared: bool
) -> None:
    dataset, _ = subset(tmp_path, 3)
    root = tmp_path / "c"
    with Misbehaving([], script=[("big", 200_000_000, declared)], wire=wire) as server:
        result = run(pytester, *recording(wire, server.url, dataset, root, "--sys1cal-concurrency=1"))
        written = server.written
    result.assert_outcomes(failed=1, passed=2)
    what = (
        "its Content-Length says 200,000,000 bytes (200 MB)" if declared else "more than 1,000,000 bytes (1 MB) arrived"
    )
    result.stdout.fnmatch_lines(
        [f"*server error: the answer from http://127.0.0.1:*/v1/* is larger than the 1,000,000 bytes (1 MB) a "
         f"response may have ({what}); refused before anything was stored (--sys1cal-max-response-mb raises the limit)*"]
    )  # fmt: skip
    assert written < 20_000_000, written  # cut off early, not read to the end
    assert len(stored(root)) == 2 and all(p.stat().st_size < 100_000 for p in stored(root))


@pytest.mark.e2e  # a subprocess, to measure its peak memory
@pytest.mark.parametrize("wire", WIRES)
def test_a_gzip_bomb_is_cut_while_it_inflates_and_memory_stays_bounded(tmp_path: Path, wire: str) -> None:
    """1.1 MB of gzip that inflates to 1.15 GB, under a 5 MB limit (so the compressed bytes pass and only the
    inflating can stop it): the run's peak memory stays far below what the inflated body would take."""
    dataset, _ = subset(tmp_path, 2)
    root = tmp_path / "c"
    environ = {k: v for k, v in __import__("os").environ.items() if k not in ENVIRONMENT}
    with Misbehaving([], script=[("gzip-bomb",)], wire=wire) as server:
        args = recording(wire, server.url, dataset, root, "--sys1cal-concurrency=1", "--sys1cal-max-response-mb=5")
        # VmHWM, not ru_maxrss: a child's ru_maxrss keeps its parent's peak across fork and exec, so under xdist
        # it reported the worker's own 520 MB, not this run's; VmHWM belongs to the address space made at exec.
        probe = (
            "import sys, pytest\n"
            "code = pytest.main(sys.argv[1:])\n"
            "print('PEAK-KB', next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))\n"
            "sys.exit(code)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", probe, *args], cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=300
        )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-3000:]
    assert "it decompressed to more than 5,000,000 bytes (5 MB)); refused before anything was stored" in output
    peak_mb = int(output.split("PEAK-KB ")[1].split()[0]) / 1024
    assert peak_mb < 400, peak_mb  # the inflated body alone would be 1,100 MB
    assert len(stored(root)) == 1


def test_an_encoding_not_asked_for_is_refused(pytester: pytest.Pytester, tmp_path: Path) -> None:
    dataset, _ = subset(tmp_path, 2)
    script = [("status", 200, {"Content-Encoding": "br"}, b"\x8b\x00\x80")]
    with Misbehaving([], script=script) as server:
        result = run(pytester, *recording("systemone", server.url, dataset, tmp_path / "c", "--sys1cal-concurrency=1"))
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        ["*the answer from * is encoded as br, which the recording did not ask for (it sends Accept-Encoding: gzip, "
         "deflate) and cannot read within its size limit; refused*"]
    )  # fmt: skip


def test_200000_top_logprobs_when_20_were_asked_are_never_stored(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """Issue 28's 38 MB cassette for one rendering. At the default limit the body (about 15 MB) is refused by its
    size; with the limit raised past it, the SemIf readout refuses an answer slot with more alternatives than
    the top-K asked (fatal: a server that ignores top_logprobs answers every request alike). Nothing is stored."""
    dataset, _ = subset(tmp_path, 3)
    root = tmp_path / "c"
    with Misbehaving([], default=("top", 200_000), wire="semif") as server:
        # In subprocesses: the server builds and sends 22 MB answers, which an in-process run would wait on the GIL for.
        by_size = pytester.runpytest_subprocess(
            *recording("semif", server.url, dataset, root, "--sys1cal-concurrency=1")
        )
        by_count = pytester.runpytest_subprocess(
            *recording("semif", server.url, dataset, root, "--sys1cal-concurrency=1", "--sys1cal-max-response-mb=100")
        )
    by_size.assert_outcomes(failed=3)
    by_size.stdout.fnmatch_lines(
        ["*is larger than the 1,000,000 bytes (1 MB) a response may have (its Content-Length*"]
    )
    by_count.assert_outcomes(failed=1)
    by_count.stdout.fnmatch_lines(
        ["*Interrupted: sys1cal: *malformed answer: answer to 'noul': the server returned 200,000 answer-slot "
         "alternatives where 20 were asked (SYS1CAL_SEMIF_TOP_K); refused, not stored: this server does not honour "
         "top_logprobs/logprobs*"]
    )  # fmt: skip
    assert stored(root) == []
