"""Issue 6's speed target: recording through the real plugin runs at the server's floor.

    python bench/bench_recording.py [--runs N] [--subset-family NAME]

A loopback `/v1/systemone` server (tests/loopback.py: answers after a fixed 200 ms, at most 16
requests in flight, TCP_NODELAY) is recorded by real `python -m pytest --sys1cal ...
--sys1cal-record-mode once` processes into fresh cassette folders:

- concurrency 16: all 365 renderings × 2 repeats = 730 requests, `--runs` times (median shown);
- concurrency 1: one family only (`--subset-family`, default frequency: 30 renderings, 60 requests),
  then scaled to 730 requests (sequential requests cost the same each, so the recording phase scales
  linearly; pytest's start-up and the analysis do not scale and are added once).

Ideal = requests × 0.2 s / 16. Printed for each: the whole run (process start to exit, pytest's own
start-up, collection and the end-of-run analysis included) and the recording phase (first request
to last answer, measured on the server), each ÷ ideal, and the speed-up of 16 over 1. Both runs use
`--sys1cal-rate 0` (no client-side rate limit): the ideal is the server's floor, and the default
1,000 requests/min would be the floor instead (730 requests ≥ 44 s). Target: ratio ≤ 1.2.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # a script: the tests package is not installed

from pytest_sys1cal.dataset import load_dataset  # noqa: E402
from tests.loopback import Behaviour, LoopbackServer  # noqa: E402

DELAY, IN_FLIGHT, REPEATS = 0.2, 16, 2


class TimedServer(LoopbackServer):
    """The loopback server, noting when each answer is computed (after its 200 ms delay)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        # socketserver listens with a backlog of 5: 16 connections opened at once overflow it, and the
        # kernel resets some, which the client then retries. A server meant to take 16 at once must
        # accept them; a real API's is far larger.
        self.server.socket.listen(128)
        self.answered_at: list[float] = []
        self._times = threading.Lock()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        result = super().answer(body)
        with self._times:
            self.answered_at.append(time.perf_counter())
        return result

    def phase(self) -> float:
        """First request's arrival (its answer minus the delay) to the last answer."""
        return max(self.answered_at) - min(self.answered_at) + DELAY


@dataclass
class Run:
    concurrency: int
    requests: int
    whole: float
    phase: float
    plugin_phase: float | None
    max_in_flight: int


def record(renderings: Any, concurrency: int, selection: list[str]) -> Run:
    behaviour = Behaviour(bias=0.3, delay=DELAY, max_in_flight=IN_FLIGHT)
    with tempfile.TemporaryDirectory() as tmp, TimedServer.for_renderings(renderings, behaviour) as server:
        args = [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--sys1cal",
            "--sys1cal-model", "systemone", "--sys1cal-base-url", server.url,
            "--sys1cal-cassettes", str(Path(tmp) / "cassettes"), "--sys1cal-record-mode", "once",
            "--sys1cal-repeats", str(REPEATS), "--sys1cal-concurrency", str(concurrency), "--sys1cal-rate", "0",
            *selection,
        ]  # fmt: skip
        start = time.perf_counter()
        result = subprocess.run(args, cwd=tmp, capture_output=True, text=True)
        whole = time.perf_counter() - start
        if result.returncode != 0:
            raise SystemExit(
                f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout[-3000:]}{result.stderr[-2000:]}"
            )
        found = re.search(r"sys1cal: recorded ([\d,]+) requests in ([\d.]+) s", result.stdout)
        plugin_phase = float(found.group(2)) if found else None
        return Run(concurrency, server.requests, whole, server.phase(), plugin_phase, server.max_seen_in_flight)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs at concurrency 16 (median shown)")
    parser.add_argument("--subset-family", default="frequency", help="family recorded at concurrency 1")
    options = parser.parse_args()
    renderings = load_dataset("sys1cal-v1").renderings
    total = len(renderings) * REPEATS
    ideal = total * DELAY / IN_FLIGHT

    fast = [record(renderings, 16, []) for _ in range(options.runs)]
    slow = record(renderings, 1, ["-k", options.subset_family])
    for run in [*fast, slow]:
        expected = total if run.concurrency == 16 else slow.requests
        assert run.requests == expected, (run.requests, expected)

    whole16 = statistics.median(r.whole for r in fast)
    phase16 = statistics.median(r.phase for r in fast)
    scale = total / slow.requests
    phase1 = slow.phase * scale
    whole1 = (slow.whole - slow.phase) + phase1

    print(
        f"recording {len(renderings)} renderings × {REPEATS} repeats = {total} requests; loopback server: "
        f"{DELAY * 1000:.0f} ms per request, at most {IN_FLIGHT} in flight, TCP_NODELAY; "
        f"ideal = {total} × {DELAY} s / {IN_FLIGHT} = {ideal:.3f} s"
    )
    print(f"{'':34}{'whole run':>11}{'÷ ideal':>9}{'recording phase':>17}{'÷ ideal':>9}{'max in flight':>15}")
    print(
        f"{f'concurrency 16 (median of {len(fast)})':34}{whole16:>9.2f} s{whole16 / ideal:>9.2f}"
        f"{phase16:>15.2f} s{phase16 / ideal:>9.2f}{max(r.max_in_flight for r in fast):>15}"
    )
    print(
        f"{'concurrency 1 (scaled, see below)':34}{whole1:>9.2f} s{whole1 / ideal:>9.2f}"
        f"{phase1:>15.2f} s{phase1 / ideal:>9.2f}{slow.max_in_flight:>15}"
    )
    print(
        f"  concurrency 1 measured on -k {options.subset_family}: {slow.requests} requests, whole run "
        f"{slow.whole:.2f} s, recording phase {slow.phase:.2f} s; phase × {scale:.2f} = {phase1:.1f} s, plus "
        f"the {slow.whole - slow.phase:.2f} s outside it"
    )
    print(f"  concurrency 16 runs: whole {', '.join(f'{r.whole:.2f}' for r in fast)} s; recording phase "
          f"{', '.join(f'{r.phase:.2f}' for r in fast)} s (server) / "
          f"{', '.join(f'{r.plugin_phase:.2f}' if r.plugin_phase else '?' for r in fast)} s (plugin's own line)")  # fmt: skip
    print(
        f"speed-up of concurrency 16 over 1: whole run {whole1 / whole16:.1f}×, recording phase {phase1 / phase16:.1f}×"
    )
    verdict = "met" if whole16 / ideal <= 1.2 else "NOT met"
    print(f"target whole run ÷ ideal ≤ 1.2: {verdict} ({whole16 / ideal:.2f}); recording phase {phase16 / ideal:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
