"""The whole plugin on a generated dataset (issue 7): `python -m pytest_sys1cal generate` writes a fresh set,
the plugin records it against the loopback `/v1/systemone` server (tests/loopback.py) and replays it
offline; the report and the cassette manifest carry the file's sha256, so the cassettes refuse to replay
against any other dataset (the bundled one, or a set generated from another seed), while regenerating from
the same seed gives the same bytes and replays. A 10,000-problem set loads and collects in reasonable time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_sys1cal.dataset import load_dataset
from tests.loopback import Behaviour, LoopbackServer
from tests.runs import sys1cal

SEED, PROBLEMS, REPEATS = 5, 24, 2
VERSION = "jev-latest"  # the cassette folder of a systemone run without a version
BUNDLED_SHA = "2f31c498debb39891339e018b5c747991e54085ab231cb5a0d981d1fc83b530c"


def _clean_environment() -> dict[str, str]:
    """Subprocesses must not inherit this run's pytest options, xdist identity or job summary."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GITHUB_STEP_SUMMARY", "SYS1CAL_"))}


def generate(seed: int, problems: int, out: Path) -> str:
    """Run the generator command; return the sha256 it prints (checked against the file's)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_sys1cal",
            "generate",
            f"--seed={seed}",
            f"--problems={problems}",
            f"--out={out}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=_clean_environment(),
    )
    assert done.returncode == 0, done.stderr
    printed = re.search(r"sha256 ([0-9a-f]{64})", done.stdout).group(1)
    assert printed == hashlib.sha256(out.read_bytes()).hexdigest()
    return printed


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A generated dataset recorded through the plugin (a subprocess) against a loopback server."""
    base = tmp_path_factory.mktemp("generated")
    dataset = base / "fresh.jsonl"
    sha = generate(SEED, PROBLEMS, dataset)
    renderings = load_dataset(dataset).renderings
    with LoopbackServer.for_renderings(renderings, Behaviour(noise=0.3, seed=1)) as server:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "--sys1cal",
                "--sys1cal-model=systemone",
                f"--sys1cal-base-url={server.url}",
                "--sys1cal-record-mode=once",
                "--sys1cal-rate=0",
                f"--sys1cal-dataset={dataset}",
                f"--sys1cal-cassettes={base / 'cassettes'}",
                f"--sys1cal-repeats={REPEATS}",
                f"--sys1cal-report={base / 'recorded.json'}",
                "-p",
                "no:cacheprovider",
                "-q",
            ],  # fmt: skip
            cwd=base,
            env=_clean_environment(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert server.requests == len(renderings) * REPEATS
    return {"base": base, "dataset": dataset, "sha": sha, "renderings": len(renderings)}


def replay(pytester: pytest.Pytester, recorded: dict[str, object], *args: str) -> pytest.RunResult:
    return sys1cal(pytester, "--sys1cal-model=systemone", f"--sys1cal-cassettes={recorded['base'] / 'cassettes'}", *args)  # fmt: skip


def test_record_then_replay_offline_carries_the_dataset_hash(
    pytester: pytest.Pytester, recorded: dict[str, object]
) -> None:
    base, sha, n = recorded["base"], recorded["sha"], recorded["renderings"]
    assert n == len(load_dataset(recorded["dataset"]).renderings) and 24 * 5 <= n <= 24 * 8
    manifest = json.loads((base / "cassettes" / "systemone" / VERSION / "manifest.json").read_text())
    assert manifest["dataset"] == {"name": "fresh", "sha256": sha}
    assert (manifest["source"], manifest["repeats"]) == ("recorded", REPEATS)
    assert len(list((base / "cassettes" / "systemone" / VERSION).rglob("*__repr_*.json"))) == n
    first = json.loads((base / "recorded.json").read_text())

    report = pytester.path / "replayed.json"
    result = replay(pytester, recorded, f"--sys1cal-dataset={recorded['dataset']}", f"--sys1cal-report={report}")
    result.assert_outcomes(passed=n)
    result.stdout.fnmatch_lines([f"*dataset fresh sha256 {sha[:12]}* ({n} renderings, {PROBLEMS} latent problems)*"])
    replayed = json.loads(report.read_text())
    assert replayed["dataset"] == {"name": "fresh", "sha256": sha, "renderings": n, "latent_problems": PROBLEMS}
    assert replayed["dataset"]["sha256"] == hashlib.sha256(recorded["dataset"].read_bytes()).hexdigest()
    assert replayed["dataset"]["sha256"] == manifest["dataset"]["sha256"]
    # The same answers, now from disk, repeat by repeat: concurrent recording appends each rendering's
    # interactions in repeat order, whatever order the answers arrived in.
    assert replayed["items"] == first["items"]
    assert {item["family"] for item in replayed["items"]} == {
        "bayes", "compound", "conditional", "explicit_probability", "frequency", "sequential_bayes",
    }  # fmt: skip


def test_the_same_seed_regenerates_the_same_bytes_and_replays(
    pytester: pytest.Pytester, recorded: dict[str, object], tmp_path: Path
) -> None:
    again = tmp_path / "again.jsonl"
    assert generate(SEED, PROBLEMS, again) == recorded["sha"]
    assert again.read_bytes() == recorded["dataset"].read_bytes()
    replay(pytester, recorded, f"--sys1cal-dataset={again}").assert_outcomes(passed=recorded["renderings"])


def test_cassettes_refuse_the_bundled_dataset(pytester: pytest.Pytester, recorded: dict[str, object]) -> None:
    result = replay(pytester, recorded)  # no --sys1cal-dataset: the bundled sys1cal-v1
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # 4
    result.stderr.fnmatch_lines([f"*recorded for dataset sha256 {recorded['sha']}*has sha256 {BUNDLED_SHA}*"])
    assert "Traceback" not in result.stderr.str()


def test_cassettes_refuse_a_dataset_from_another_seed(
    pytester: pytest.Pytester, recorded: dict[str, object], tmp_path: Path
) -> None:
    other = tmp_path / "other.jsonl"
    other_sha = generate(SEED + 1, PROBLEMS, other)
    assert other_sha != recorded["sha"]
    result = replay(pytester, recorded, f"--sys1cal-dataset={other}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*recorded for dataset sha256 {recorded['sha']}*{other} has sha256 {other_sha}*"])


@pytest.mark.slow
def test_a_10000_problem_set_loads_and_collects(tmp_path: Path) -> None:
    """Generation and collection of ~67,000 renderings, each in one process; the file is ~150 MB.
    Measured on 2 vCPUs: generating ~4 s, collecting ~10 s (json parsing ~4 s, items ~3 s)."""
    dataset = tmp_path / "big.jsonl"
    start = time.perf_counter()
    generate(11, 10_000, dataset)
    generated = time.perf_counter() - start
    try:
        expected = sum(1 for _ in dataset.open("rb"))
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--sys1cal", "--sys1cal-model=systemone", f"--sys1cal-dataset={dataset}",
             "--collect-only", "-q", "-p", "no:cacheprovider"],
            cwd=tmp_path, env=_clean_environment(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        collected = time.perf_counter() - start
    finally:
        dataset.unlink()
    assert done.returncode == 0, done.stderr[-2000:]
    items = [line for line in done.stdout.splitlines() if line.startswith("sys1cal::systemone[")]
    assert len(items) == expected and 60_000 < expected < 70_000
    assert f"{expected} tests collected" in done.stdout
    assert len(set(items)) == expected  # ids are unique
    timing = f"generate {generated:.1f} s, collect {collected:.1f} s for {expected} renderings"
    print(timing)
    assert collected < 120, timing
