"""Replay at scale: the plugin's cost per rendering beside pytest's own, its memory, and what xdist does.

    python bench/bench_scale.py [--sizes 365,3666,18334] [--rounds 3] [--workdir DIR] [--tree DIR ...]

For each size, a real `python -m pytest --sys1cal` replay of recorded cassettes and a trivial pytest run
of as many parametrized items, started the same way, interleaved round by round so that machine noise hits
both alike; medians are printed. 365 is the bundled Jev set; the larger sizes are datasets written by
`python -m pytest_sys1cal generate` (seeded) and recorded once, through the plugin, against the loopback
/v1/systemone server of tests/loopback.py, one repeat each (cached in --workdir; the first run records).

Every run has pytest's cacheprovider on, each with a cache dir of its own. This tree's replay runs twice:
`cold`, its cache dir emptied before each run (every cassette read in full, the replay cache filled), and
`warm`, with the cache its untimed first run filled (each row from the replay cache, one in 16 also derived
from its cassette: the audit). The trivial suite keeps its cache dir (last-failed and node ids, as in
everyday use).

Printed per size: wall time of both, their ratio, the plugin's marginal µs per rendering (its time minus
the trivial run's, per rendering), peak RSS of both and the plugin's KB per rendering above the trivial
run, and the `-n 2 / -n 0` ratio of each (xdist). `--tree` runs the same measurements for other checkouts
of the plugin (e.g. an earlier commit, via PYTHONPATH), interleaved with this one, for a before/after table;
each tree replays cassettes its own manifest format describes (its bundled set; a copy of each generated
recording that the tree's own plugin has completed, so a tree that checks answer digests pays for it, and a
tree from before the replay cache that writes a replay index replays from the index it wrote; delete a
tree's copies after changing its plugin).
Targets (issue 27): marginal ≤ 150 µs per rendering beyond a trivial item, the 18k run ≤ 1.3× a trivial suite
of the same size, the analysis of 18k renderings ≤ 1.5 s on 2 cores; ≤ ~5 KB per rendering, plugin -n 2/-n 0
at or below the trivial suite's (issue 14).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # a script: the tests package is not installed

RECORD_DELAY, RECORD_CONCURRENCY = 0.05, 2
# renderings → (problems, seed) of `python -m pytest_sys1cal generate` (≈ 6.67 renderings per problem)
GENERATED = {3666: (550, 11), 18334: (2750, 12)}
# One process per measurement: wall time and the peak RSS of that process alone (its only child).
WRAPPER = """
import json, re, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[2:], cwd=sys.argv[1], capture_output=True, text=True)
elapsed = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
peak, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
found = re.search(r"analysis and reports of \d+ renderings: ([\d.]+) s", done.stdout)
print(json.dumps({"seconds": elapsed, "cpu": cpu, "peak_mb": peak, "rc": done.returncode,
                  "analysis": float(found.group(1)) if found else None, "tail": done.stdout[-400:] + done.stderr[-400:]}))
"""
TRIVIAL = """
import pytest

@pytest.mark.parametrize("i", range({n}))
def test_trivial(i):
    assert i >= 0
"""


@dataclass
class Case:
    """One size: how to replay it, and where the trivial suite of the same size lives."""

    size: int
    replay: list[str]
    trivial_dir: Path
    results: dict[str, list[dict[str, float]]] = field(default_factory=dict)


def measure(args: list[str], cwd: Path, env: dict[str, str], cache: Path | None = None) -> dict[str, float]:
    """One timed run; with pytest's cache in `cache` (None: -p no:cacheprovider, no cache at all)."""
    caching = ["-o", f"cache_dir={cache}"] if cache is not None else ["-p", "no:cacheprovider"]
    out = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(cwd), sys.executable, "-m", "pytest", "-q", *caching, *args],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    result = json.loads(out.stdout)
    if result["rc"] != 0:
        raise SystemExit(f"pytest {' '.join(args)} failed ({result['rc']}):\n{result['tail']}")
    return result


def prepare(size: int, workdir: Path) -> list[str]:
    """The replay arguments of a size, generating and recording its dataset on first use."""
    if size == 365:
        return ["--sys1cal", "--model=jev", f"--sys1cal-cassettes={REPO / 'cassettes'}"]
    if size not in GENERATED:
        raise SystemExit(f"size {size}: choose 365 or one of {sorted(GENERATED)}")
    problems, seed = GENERATED[size]
    dataset, cassettes = workdir / f"generated-{problems}.jsonl", workdir / f"cassettes-{problems}"
    if not dataset.is_file():
        subprocess.run(
            [sys.executable, "-m", "pytest_sys1cal", "generate", f"--seed={seed}", f"--problems={problems}", f"--out={dataset}"],
            check=True, capture_output=True,
        )  # fmt: skip
    replay = ["--sys1cal", "--model=systemone", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={cassettes}"]
    if not (cassettes / "systemone" / "jev-latest" / "manifest.json").is_file():
        record(dataset, replay)
    return replay


def record(dataset: Path, replay: list[str]) -> None:
    from pytest_sys1cal.dataset import load_dataset
    from tests.loopback import Behaviour, LoopbackServer

    renderings = load_dataset(dataset).renderings
    print(f"recording {len(renderings)} renderings of {dataset.name} against the loopback server (once) ...")
    with LoopbackServer.for_renderings(renderings, Behaviour(bias=0.3, noise=0.05)) as server:
        server.server.socket.listen(128)
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *replay, f"--sys1cal-base-url={server.url}",
             "--sys1cal-record-mode=once", "--sys1cal-repeats=1", "--sys1cal-rate=0", "--sys1cal-concurrency=16"],
            check=True, capture_output=True,
        )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="365,3666,18334")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "sys1cal-bench-scale")
    parser.add_argument("--tree", action="append", default=[], help="another checkout to measure (PYTHONPATH)")
    parser.add_argument("--no-xdist", action="store_true", help="skip the -n 2 runs")
    options = parser.parse_args()
    options.workdir.mkdir(parents=True, exist_ok=True)
    # name: (checkout, whose cache dir is emptied before each run); "cold" and "warm" are this tree.
    trees = {
        "cold": (None, True),
        "warm": (None, False),
        **{Path(t).name: (Path(t).resolve(), False) for t in options.tree},
    }
    cases = []
    for size in (int(s) for s in options.sizes.split(",")):
        trivial = options.workdir / f"trivial-{size}"
        trivial.mkdir(exist_ok=True)
        (trivial / "test_trivial.py").write_text(TRIVIAL.format(n=size))
        cases.append(Case(size, prepare(size, options.workdir), trivial))

    xdist = [[]] if options.no_xdist else [[], ["-n", "2"]]
    for case in cases:
        trivial_cache = options.workdir / f"cache-trivial-{case.size}"
        for extra in xdist:  # one untimed run of each first: warm bytecode and file caches, fill the warm caches
            measure(extra, case.trivial_dir, os.environ.copy(), trivial_cache)
            for name, (tree, _) in trees.items():
                args = [*own_cassettes(case, name if tree else "this", tree, options.workdir), *extra]
                measure(args, tree or REPO, tree_env(tree), cache_dir(options.workdir, case, name, extra, fresh=True))
        for _ in range(options.rounds):
            for extra in xdist:
                n = "-n2" if extra else "-n0"
                trivial = measure(extra, case.trivial_dir, os.environ.copy(), trivial_cache)
                case.results.setdefault(f"trivial {n}", []).append(trivial)
                for name, (tree, cold) in trees.items():
                    # Run from the tree itself: `python -m pytest` puts the working directory first on sys.path.
                    args = [*own_cassettes(case, name if tree else "this", tree, options.workdir), *extra]
                    cache = cache_dir(options.workdir, case, name, extra, fresh=cold)
                    case.results.setdefault(f"{name} {n}", []).append(
                        measure(args, tree or REPO, tree_env(tree), cache)
                    )
    report(cases, trees, xdist=not options.no_xdist, rounds=options.rounds)
    if not options.no_xdist:
        recording_with_xdist(options.rounds)
    return 0


def cache_dir(workdir: Path, case: Case, name: str, extra: list[str], *, fresh: bool) -> Path:
    """The pytest cache dir of one tree, size and -n; emptied first when `fresh`."""
    path = workdir / f"cache-{name}-{case.size}{'-n2' if extra else ''}"
    if fresh:
        shutil.rmtree(path, ignore_errors=True)
    return path


def tree_env(tree: Path | None) -> dict[str, str]:
    env = os.environ.copy()
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def own_cassettes(case: Case, name: str, tree: Path | None, workdir: Path) -> list[str]:
    """The replay arguments of `case` for one tree, on cassettes that tree's own manifest format describes: its
    own bundled set for 365; for a generated set, a copy of the recording made once per tree and completed by a
    recording run of that tree's plugin that has nothing to send (a tree that keeps answer digests in the
    manifest adds them then, so its replay pays for checking them, and one from before the replay cache that
    writes a replay index writes it then, so its replay reads it; an older one leaves the copy as it is)."""
    root = tree or REPO
    args = [arg.replace(str(REPO / "cassettes"), str(root / "cassettes")) for arg in case.replay]
    recorded = next(
        (arg.split("=", 1)[1] for arg in args if arg.startswith("--sys1cal-cassettes=") and "cassettes-" in arg), None
    )
    if recorded is None:
        return args
    copy = workdir / f"{Path(recorded).name}-{name}"
    if not copy.is_dir():
        shutil.copytree(recorded, copy)
        measure(
            [
                *args,
                f"--sys1cal-cassettes={copy}",
                "--sys1cal-record-mode=once",
                "--sys1cal-base-url=http://127.0.0.1:9",
            ],
            root,
            tree_env(tree),
        )
    return [*args, f"--sys1cal-cassettes={copy}"]


def recording_with_xdist(rounds: int) -> None:
    """Where xdist pays: recording, where items wait on a server. The bundled 365 renderings, one repeat,
    recorded into fresh folders against the loopback server answering after DELAY seconds, -n 0 and -n 2."""
    from pytest_sys1cal.dataset import load_dataset
    from tests.loopback import Behaviour, LoopbackServer

    renderings = load_dataset("sys1cal-v1").renderings
    times: dict[str, list[float]] = {"-n0": [], "-n2": []}
    with LoopbackServer.for_renderings(renderings, Behaviour(bias=0.3, delay=RECORD_DELAY)) as server:
        server.server.socket.listen(128)
        for _ in range(rounds):
            for name, extra in (("-n0", []), ("-n2", ["-n", "2"])):
                with tempfile.TemporaryDirectory() as tmp:
                    args = [
                        "--sys1cal", "--model=systemone", f"--sys1cal-base-url={server.url}",
                        f"--sys1cal-cassettes={tmp}", "--sys1cal-record-mode=once", "--sys1cal-repeats=1",
                        "--sys1cal-rate=0", f"--sys1cal-concurrency={RECORD_CONCURRENCY}", *extra,
                    ]  # fmt: skip
                    times[name].append(measure(args, Path(tmp), os.environ.copy())["seconds"])
    n0, n2 = statistics.median(times["-n0"]), statistics.median(times["-n2"])
    print(
        f"recording 365 renderings against a server answering in {RECORD_DELAY * 1000:.0f} ms, "
        f"--sys1cal-concurrency={RECORD_CONCURRENCY}: -n 0 {n0:.2f} s, -n 2 {n2:.2f} s (-n 2/-n 0 {n2 / n0:.2f})"
    )


def median(runs: list[dict[str, float]], key: str) -> float | None:
    values = [run[key] for run in runs if run.get(key) is not None]
    return statistics.median(values) if values else None


def report(cases: list[Case], trees: dict[str, tuple[Path | None, bool]], *, xdist: bool, rounds: int) -> None:
    print(f"medians of {rounds} interleaved rounds; wall time of the whole pytest process, peak RSS of that process")
    print("µs/rendering: (plugin − trivial) ÷ renderings; replay µs: the same without the analysis and reports,")
    print("which the plugin times itself; KB/rendering: (plugin − trivial peak RSS) ÷ renderings; cpu: the same two")
    print("of CPU time (user + system, every thread), which other load on a shared machine moves far less than wall")
    head = f"{'renderings':>10} {'plugin':>10} {'trivial s':>9} {'plugin s':>9} {'ratio':>6} {'µs/rendering':>12}"
    head += f" {'cpu ratio':>9} {'cpu µs':>6}"
    head += f" {'replay µs':>9} {'analysis s':>10} {'trivial MB':>10} {'plugin MB':>9} {'KB/rendering':>12}"
    if xdist:
        head += f" {'-n2/-n0 plugin':>14} {'-n2/-n0 trivial':>15}"
    print(head)
    for name in trees:
        for case in cases:
            print(_row(case, name, xdist))
        if len(cases) > 1:
            print(_slope(cases[0], cases[-1], name))


def _row(case: Case, name: str, xdist: bool) -> str:
    trivial, runs = case.results["trivial -n0"], case.results[f"{name} -n0"]
    t_s, t_mb = median(trivial, "seconds"), median(trivial, "peak_mb")
    p_s, p_mb, analysis = median(runs, "seconds"), median(runs, "peak_mb"), median(runs, "analysis")
    assert t_s and t_mb and p_s and p_mb
    replay = "—" if analysis is None else f"{(p_s - analysis - t_s) / case.size * 1e6:.0f}"
    t_cpu, p_cpu = median(trivial, "cpu") or 0.0, median(runs, "cpu") or 0.0
    line = (
        f"{case.size:>10} {name:>10} {t_s:>9.2f} {p_s:>9.2f} {p_s / t_s:>6.2f} {(p_s - t_s) / case.size * 1e6:>12.0f}"
        f" {p_cpu / t_cpu if t_cpu else 0:>9.2f} {(p_cpu - t_cpu) / case.size * 1e6:>6.0f}"
        f" {replay:>9} {'—' if analysis is None else f'{analysis:.2f}':>10} {t_mb:>10.0f} {p_mb:>9.0f}"
        f" {(p_mb - t_mb) * 1024 / case.size:>12.1f}"
    )
    if xdist:
        x_plugin = (median(case.results[f"{name} -n2"], "seconds") or 0) / p_s
        x_trivial = (median(case.results["trivial -n2"], "seconds") or 0) / t_s
        line += f" {x_plugin:>14.2f} {x_trivial:>15.2f}"
    return line


def _slope(small: Case, large: Case, name: str) -> str:
    """Per rendering between two sizes: what each extra rendering costs, start-up and imports aside."""

    def extra(case: Case, key: str) -> float:
        return (median(case.results[f"{name} -n0"], key) or 0) - (median(case.results["trivial -n0"], key) or 0)

    n = large.size - small.size
    seconds = (extra(large, "seconds") - extra(small, "seconds")) / n * 1e6
    cpu = (extra(large, "cpu") - extra(small, "cpu")) / n * 1e6
    memory = (extra(large, "peak_mb") - extra(small, "peak_mb")) * 1024 / n
    return (
        f"{'marginal':>10} {name:>10} from {small.size} to {large.size} renderings: {seconds:.0f} µs ({cpu:.0f} µs of CPU)"
        f" and {memory:.1f} KB per rendering"
    )


if __name__ == "__main__":
    sys.exit(main())
