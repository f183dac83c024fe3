"""Issue 39's speed target: a recording split into 4 shards on 4 machines, each against its own server, takes at
most 0.3× the wall time of one machine recording everything against one server.

    python bench/bench_shards.py [--repeats N] [--delay S] [--in-flight N]

Side by side in one run: four loopback `/v1/systemone` servers (tests/loopback.py) that each answer after a fixed
delay with at most `--in-flight` requests served at once, as a remote server paces its clients: the recording is
bound by the server, not by this machine. One real `python -m pytest --sys1cal … --sys1cal-record-mode=once`
process records all 365 renderings against the first server; then four processes at once, each
`--sys1cal-shard=I/4` against a server of its own, each into a cassette root of its own; then `python -m
pytest_sys1cal merge` joins them. Both use concurrency = the servers' in-flight limit and no client-side rate
limit. Printed: each wall time (process start to exit, pytest's start-up and the analysis included), the shards'
(first start to last exit), their ratio, the merge's time, and the requests each server saw.

Measured here (2 cores shared with other work, load average about 7, all 4 shards on this one machine): at the
defaults (500 ms an answer, 4 at once, 10 repeats) one machine 471.5 s, 4 shards 127.2 s, ratio 0.270; with
--delay 0.2, 224.5 s against 70.7 s, 0.315 (the fixed part, pytest's start-up and the end-of-run analysis of
four processes on two cores, weighs more against a shorter recording; on a real matrix each shard has a
machine of its own).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # a script: the tests package is not installed

from pytest_sys1cal.dataset import load_dataset  # noqa: E402
from tests.loopback import Behaviour, LoopbackServer  # noqa: E402

SHARDS = 4


class PacedServer(LoopbackServer):
    """The loopback server with a listen backlog that takes every connection the client opens at once."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.server.socket.listen(128)


def command(url: str, root: Path, options: argparse.Namespace, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--sys1cal", "--sys1cal-model=systemone",
        "--sys1cal-model-version=bench-1", f"--sys1cal-base-url={url}", f"--sys1cal-cassettes={root}",
        "--sys1cal-record-mode=once", f"--sys1cal-repeats={options.repeats}",
        f"--sys1cal-concurrency={options.in_flight}", "--sys1cal-rate=0", *extra,
    ]  # fmt: skip


def check(done: subprocess.CompletedProcess[str], what: str) -> None:
    if done.returncode != 0:
        raise SystemExit(f"{what} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10, help="samples per rendering (default 10, as recorded)")
    parser.add_argument("--delay", type=float, default=0.5, help="seconds each server takes per answer")
    parser.add_argument("--in-flight", type=int, default=4, help="requests each server serves at once")
    options = parser.parse_args()
    renderings = load_dataset("sys1cal-v1").renderings
    behaviour = Behaviour(bias=0.3, delay=options.delay, max_in_flight=options.in_flight)
    servers = [PacedServer.for_renderings(renderings, behaviour) for _ in range(SHARDS)]
    for server in servers:
        server.__enter__()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            start = time.perf_counter()
            single = subprocess.run(command(servers[0].url, work / "single", options), cwd=work, capture_output=True,
                                    text=True)  # fmt: skip
            one = time.perf_counter() - start
            check(single, "the one-machine recording")
            first = servers[0].requests
            start = time.perf_counter()
            running = [
                subprocess.Popen(
                    command(s.url, work / f"shard-{i}", options, f"--sys1cal-shard={i}/{SHARDS}"),
                    cwd=work,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )  # fmt: skip
                for i, s in enumerate(servers, start=1)
            ]
            ends = []
            for index, process in enumerate(running, start=1):
                out, err = process.communicate()
                ends.append(time.perf_counter() - start)
                check(subprocess.CompletedProcess(process.args, process.returncode, out, err), f"shard {index}")
            sharded = max(ends)
            start = time.perf_counter()
            merged = subprocess.run(
                [sys.executable, "-m", "pytest_sys1cal", "merge", *(str(work / f"shard-{i}" / "systemone" / "bench-1")
                 for i in range(1, SHARDS + 1)), "--into", str(work / "merged" / "systemone" / "bench-1")],
                capture_output=True, text=True,
            )  # fmt: skip
            merging = time.perf_counter() - start
            check(merged, "the merge")
    finally:
        for server in servers:
            server.__exit__(None, None, None)
    total = len(renderings) * options.repeats
    per_shard = [servers[0].requests - first, *(s.requests for s in servers[1:])]
    print(
        f"recording {len(renderings)} renderings × {options.repeats} repeats = {total} requests; each loopback server "
        f"answers after {options.delay * 1000:.0f} ms, at most {options.in_flight} at once "
        f"(≈ {options.in_flight / options.delay:.0f} requests/s: server-bound); client concurrency {options.in_flight}, "
        "no rate limit"
    )
    print(f"{'':38}{'wall time':>11}{'requests per server':>24}")
    print(f"{'one machine, one server':38}{one:>9.2f} s{first:>24}")
    shares = ", ".join(str(n) for n in per_shard)
    print(f"{f'{SHARDS} shards at once, a server each':38}{sharded:>9.2f} s{shares:>24}")
    print(
        f"  each shard's wall time: {', '.join(f'{e:.2f}' for e in ends)} s; merge {merging:.2f} s ({merged.stdout.splitlines()[0]})"
    )
    ratio = sharded / one
    print(f"ratio {SHARDS} shards ÷ one machine: {ratio:.3f} (target ≤ 0.3: {'met' if ratio <= 0.3 else 'NOT met'})")
    assert sum(per_shard) == total and first == total, (first, per_shard)
    return 0


if __name__ == "__main__":
    sys.exit(main())
