"""Issues 24, 25 and 28's stop times: how long a whole 365-rendering recording takes to stop, at the default
settings, when it cannot make progress.

    python bench/bench_stops.py [--quick]

Each case is a real `python -m pytest --sys1cal … --sys1cal-record-mode=once` process over the bundled
dataset (365 renderings, 10 repeats: 3,650 requests on /v1/systemone) against a server on 127.0.0.1:

- unknown model: the jevcompat mock, asked for `jev-1.14.0`, which it does not serve (HTTP 400);
- Retry-After 3600: tests/misbehave.py's server answering every request 429 with `Retry-After: 3600`;
- never answers: tests/misbehave.py's server accepting every connection and answering nothing (about two
  minutes at the default 60 s deadline; `--quick` leaves it out).

Printed for each: seconds from process start to exit, renderings failed and not run, requests the server
got, and the ratio of the seconds to the issue's bound (a few minutes = 300 s for a server that never
answers; a minute for the long Retry-After; the wrong model "seconds", taken as 10 s). Target: ratio ≤ 1.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # a script: the tests package is not installed

from jevcompat.mock import MockConfig, Running  # noqa: E402

from tests.misbehave import Misbehaving  # noqa: E402

RATE_LIMITED = b'{"detail": {"error_type": "rate_limit_error", "message": "rate limited"}}'


def record(url: str, folder: Path, *args: str) -> tuple[float, str]:
    command = [
        sys.executable, "-m", "pytest", "--sys1cal", "--sys1cal-model=systemone", f"--sys1cal-base-url={url}",
        f"--sys1cal-cassettes={folder / 'cassettes'}", "--sys1cal-record-mode=once", "-p", "no:cacheprovider",
        "-p", "no:randomly", *args,
    ]  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=1800)
    return time.monotonic() - started, done.stdout + done.stderr


def outcome(output: str) -> str:
    failed = re.search(r"(\d+) failed", output)
    counts = re.search(r"\((\d+) ran, (\d+) failed, (\d+) not run\)", output)
    stop = re.search(r"Interrupted: sys1cal: (.{0,160})", output)
    ran = (
        f"{counts.group(2)} failed, {counts.group(3)} not run"
        if counts
        else f"{failed.group(1) if failed else '?'} failed"
    )
    return f"{ran}; stopped with: {stop.group(1) if stop else '(no stop)'}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="leave out the server that never answers (2 minutes)")
    quick = parser.parse_args().quick
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config = MockConfig()
        with Running(config) as mock:
            seconds, output = record(mock.url, folder / "a", "--sys1cal-model-version=jev-1.14.0")
        rows.append(("unknown model (jevcompat mock)", seconds, 10.0, config.requests, outcome(output)))
        limited = ("status", 429, {"Retry-After": "3600"}, RATE_LIMITED)
        with Misbehaving([], default=limited) as server:
            seconds, output = record(server.url, folder / "b")
            rows.append(("429, Retry-After: 3600", seconds, 60.0, server.requests, outcome(output)))
        if not quick:
            with Misbehaving([], default=("hang",)) as server:
                seconds, output = record(server.url, folder / "c")
                rows.append(("never answers", seconds, 300.0, server.requests, outcome(output)))
    for name, seconds, bound, requests, said in rows:
        print(f"{name:32} {seconds:7.1f} s  ÷ {bound:g} s = {seconds / bound:.2f}   {requests} requests; {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
