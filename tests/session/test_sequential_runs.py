"""--sys1cal-sequential (issue 40) end to end: a candidate recorded in rounds against a baseline version, both
recorded over real HTTP from loopback servers with noise (tests/loopback.py) on a dataset of 30 latent problems.
A degraded candidate stops early with the full recording's verdict; an A/A pair (the same server, independent
noise) does not FAIL; the stopped folder's manifest says its rounds and a replay of it reaches the same verdict;
the refusals are one line each."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import anyio._backends._asyncio  # noqa: F401  (tests/recording/test_recording.py says why)
import httpcore._backends.anyio  # noqa: F401
import pytest

from pytest_sys1cal.dataset import load_dataset
from tests.field import first_problems
from tests.loopback import Behaviour, LoopbackServer
from tests.runs import CHEAP, QUIET

pytestmark = pytest.mark.e2e  # pytest runs in processes of their own, against loopback servers

RENDERINGS = load_dataset("sys1cal-v1").renderings
PROBLEMS = 30  # enough latent problems for 10 rounds of 3, few enough to record in seconds
NOISE = 0.3
WORSE = -1.0  # logit bias of the degraded candidate: a drop in mean OVL of about 0.1, ten times the margin


class Run:
    """A finished pytest run in a subprocess: its exit status, output, and the requests its server answered."""

    def __init__(self, done: subprocess.CompletedProcess[str], requests: int):
        self.ret = done.returncode
        self.out = done.stdout + done.stderr
        self.requests = requests

    def lines(self, start: str) -> list[str]:
        return [line for line in self.out.splitlines() if line.startswith(start)]


def sys1cal(place: Path, version: str, *args: str, behaviour: Behaviour | None = None) -> Run:
    """pytest --sys1cal on the small dataset in `place`; with `behaviour`, recording from a loopback server."""
    command = [sys.executable, "-m", "pytest", "--sys1cal", *QUIET, *CHEAP, "-q", "--model=systemone",
               f"--sys1cal-model-version={version}", f"--sys1cal-dataset={place / 'small.jsonl'}",
               f"--sys1cal-cassettes={place / 'c'}", "--sys1cal-repeats=1", *args]  # fmt: skip
    if behaviour is None:
        return Run(subprocess.run(command, cwd=place, capture_output=True, text=True, timeout=300), 0)
    with LoopbackServer.for_renderings(RENDERINGS, behaviour) as server:
        url = (f"--sys1cal-base-url={server.url}", "--sys1cal-record-mode=once")
        done = subprocess.run([*command, *url], cwd=place, capture_output=True, text=True, timeout=300)
    return Run(done, server.requests)


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the small dataset and a cassette root with the baseline version v1 recorded in full."""
    root = tmp_path_factory.mktemp("sequential")
    first_problems(root / "small.jsonl", PROBLEMS)
    done = sys1cal(root, "v1", behaviour=Behaviour(noise=NOISE, seed=1))
    assert done.ret == 0, done.out[-3000:]
    return root


def report(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def verdicts(data: dict[str, Any]) -> dict[str, str]:
    return {row["name"]: row["verdict"] for row in data["gates"] if row["name"].startswith("regression.")}


def manifest(place: Path, version: str) -> dict[str, Any]:
    return json.loads((place / "c" / "systemone" / version / "manifest.json").read_text(encoding="utf-8"))


def test_a_degraded_candidate_stops_early_with_the_full_recordings_verdict(place: Path) -> None:
    worse = Behaviour(noise=NOISE, seed=2, bias=WORSE)
    against = "--sys1cal-baseline=v1"
    rounds = sys1cal(place, "r", against, "--sys1cal-sequential", f"--sys1cal-report={place / 'r.json'}",
                     behaviour=worse)  # fmt: skip
    full = sys1cal(place, "f", against, f"--sys1cal-report={place / 'f.json'}", behaviour=worse)
    assert rounds.ret == full.ret == pytest.ExitCode.TESTS_FAILED, rounds.out[-3000:]
    stopped, whole = report(place / "r.json"), report(place / "f.json")
    assert verdicts(stopped) == verdicts(whole) == dict.fromkeys(verdicts(whole), "FAILED")
    assert len(verdicts(whole)) == 3
    block = stopped["sequential"]
    assert block["early"] and block["decided"] and block["round"] < block["design"]["rounds"] == 10
    # The report's requests are the ones the server answered; a full recording costs what the full run sent.
    assert block["requests"] == rounds.requests < full.requests == block["full_requests"]
    assert block["saved_requests"] == full.requests - rounds.requests
    assert {p["standing"] for p in block["primitives"].values()} == {"FAILED"}
    # What a person sees: the plan's cost, a progress line per round, the stop.
    assert any("at most" in line and "expected about" in line for line in rounds.lines("sys1cal: upgrade gate in"))
    progress = rounds.lines("sys1cal: round ")
    assert len(progress) == block["round"] and progress[0].startswith("sys1cal: round 1 of 10 (3 of 30 latent")
    assert "the recording stops here" in progress[-1]
    assert block["line"] in rounds.out and f"{block['saved_requests']:,} saved" in block["line"]

    # The folder says which rounds it holds, and replays offline to the same verdict.
    held = manifest(place, "r")["sequential"]
    assert held["recorded_rounds"] == block["round"]
    assert len(held["latent_problems"]) == block["design"]["ends"][block["round"] - 1] == block["latent_problems"]
    replay = sys1cal(place, "r", against, f"--sys1cal-report={place / 'replay.json'}")
    assert replay.ret == pytest.ExitCode.TESTS_FAILED, replay.out[-3000:]
    again = report(place / "replay.json")
    assert verdicts(again) == verdicts(stopped)
    assert again["sequential"]["round"] == block["round"] and again["sequential"]["requests"] == block["requests"]
    # only the held rounds' renderings are replayed, the rest deselected as -k deselects
    assert f"{whole['counts']['renderings'] - block['renderings']} deselected" in replay.out

    # Resumed without --sys1cal-sequential: the rest of the dataset, then the fixed design's verdict.
    resumed = sys1cal(place, "r", against, f"--sys1cal-report={place / 'resumed.json'}", behaviour=worse)
    assert resumed.requests == full.requests - rounds.requests
    assert "sequential" not in manifest(place, "r") and "sequential" not in report(place / "resumed.json")
    assert verdicts(report(place / "resumed.json")) == verdicts(whole)


def test_an_improved_candidate_passes_early_as_the_full_recording_does(place: Path) -> None:
    better = Behaviour(noise=NOISE / 3, seed=4)  # answers three times less noisy than the baseline's
    rounds = sys1cal(place, "b", "--sys1cal-baseline=v1", "--sys1cal-sequential",
                     f"--sys1cal-report={place / 'b.json'}", behaviour=better)  # fmt: skip
    full = sys1cal(place, "bf", "--sys1cal-baseline=v1", f"--sys1cal-report={place / 'bf.json'}", behaviour=better)
    assert rounds.ret == full.ret == pytest.ExitCode.OK, rounds.out[-3000:]
    stopped = report(place / "b.json")
    assert verdicts(stopped) == verdicts(report(place / "bf.json")) == dict.fromkeys(verdicts(stopped), "passed")
    assert stopped["sequential"]["early"] and rounds.requests < full.requests


def test_an_aa_pair_does_not_fail_and_xdist_stops_at_the_same_round(place: Path) -> None:
    same = Behaviour(noise=NOISE, seed=3)  # v1's server, its noise drawn afresh
    alone = sys1cal(place, "aa", "--sys1cal-baseline=v1", "--sys1cal-sequential",
                    f"--sys1cal-report={place / 'aa.json'}", behaviour=same)  # fmt: skip
    data = report(place / "aa.json")
    assert "FAILED" not in verdicts(data).values(), alone.out[-3000:]
    assert data["sequential"]["requests"] == alone.requests
    # Under -n 2 the workers wait for each look: the same rounds, the same requests, the same verdicts.
    workers = sys1cal(place, "aa2", "--sys1cal-baseline=v1", "--sys1cal-sequential", "-n", "2",
                      f"--sys1cal-report={place / 'aa2.json'}", behaviour=same)  # fmt: skip
    two = report(place / "aa2.json")
    assert workers.requests == alone.requests, workers.out[-3000:]
    assert verdicts(two) == verdicts(data) and two["sequential"]["round"] == data["sequential"]["round"]


def merge(place: Path, version: str, *shards: int) -> subprocess.CompletedProcess[str]:
    folders = [str(place / f"shard-{i}" / "systemone" / version) for i in shards]
    into = str(place / "c" / "systemone" / version)
    command = [sys.executable, "-m", "pytest_sys1cal", "merge", *folders, "--into", into]
    return subprocess.run(command, cwd=place, capture_output=True, text=True, timeout=120)


def test_rounds_recorded_as_shards_stop_where_one_machine_stops(place: Path) -> None:
    """Each round recorded as two shards (the second under -n 2), merged, and looked at by a replay of the merged
    folder: the same round, verdicts and requests as one machine recording in rounds (the loopback's answers are
    a function of the question, not of the machine that asks)."""
    worse = Behaviour(noise=NOISE, seed=2, bias=WORSE)
    against = "--sys1cal-baseline=v1"
    alone = sys1cal(place, "one", against, "--sys1cal-sequential", f"--sys1cal-report={place / 'one.json'}",
                    behaviour=worse)  # fmt: skip
    one = report(place / "one.json")["sequential"]
    sent, look = 0, {}
    for k in range(1, 11):
        for i in (1, 2):
            # -v after -q: the header is shown
            shard = sys1cal(place, "sh", f"--sys1cal-shard={i}/2", "--sys1cal-sequential",
                            f"--sys1cal-cassettes={place / f'shard-{i}'}", *(("-n", "2") if i == 2 else ()),
                            "-v", behaviour=worse)  # fmt: skip
            assert shard.ret == pytest.ExitCode.OK, shard.out[-3000:]
            (header,) = shard.lines(f"sys1cal: shard {i} of 2 in rounds, recording its part of round {k} of 10")
            held = json.loads((place / f"shard-{i}" / "systemone" / "sh" / "shard.json").read_text(encoding="utf-8"))
            assert held["sequential"]["recorded_rounds"] == k  # its part of rounds 1 … k, whole
            assert f": {len(held['latent_problems'])} of 30 latent problems" in header
            sent += shard.requests
            if k == 2 and i == 1:  # shard 2 is a round behind: the merge names it and how to catch up
                behind = merge(place, "sh", 1, 2)
                assert behind.returncode == 4 and "Traceback" not in behind.stderr, behind.stderr
                assert "shard 2 of 2 (" in behind.stderr and "holds 1 of 10 rounds, and shard 1 of 2" in behind.stderr
                assert "--sys1cal-shard=2/2 --sys1cal-sequential --sys1cal-seed=0" in behind.stderr
        merged = merge(place, "sh", 1, 2)
        assert merged.returncode == 0, merged.stderr
        assert f"it holds {k} of 10 rounds whole ({3 * k} latent problems)" in merged.stdout
        assert (f"record round {k + 1} on every shard" in merged.stdout) == (k < 10)
        looked = sys1cal(place, "sh", against, f"--sys1cal-report={place / 'sh.json'}")
        look = report(place / "sh.json")["sequential"]
        if look["decided"]:
            break
        assert f"(round {k} of 10): Δ = " in looked.out and "not decided yet" in looked.out, looked.out[-3000:]
    assert alone.ret == looked.ret == pytest.ExitCode.TESTS_FAILED, looked.out[-3000:]
    assert look["round"] == one["round"] < 10 and look["early"]
    assert verdicts(report(place / "sh.json")) == verdicts(report(place / "one.json"))
    assert sent == alone.requests == look["requests"] == one["requests"]
    # a shard's folder replays its part of the rounds it holds, sending nothing
    again = sys1cal(place, "sh", "--sys1cal-shard=1/2", f"--sys1cal-cassettes={place / 'shard-1'}", "-v")
    assert again.ret == pytest.ExitCode.OK, again.out[-3000:]
    assert again.lines(f"sys1cal: shard 1 of 2 in rounds, its part of the {look['round']} whole rounds of 10")


CRASH = """import os


def pytest_runtest_call(item):  # the worker measuring this rendering dies, as one killed for its memory would
    if hasattr(item.config, "workerinput") and item.nodeid.endswith("[bayes/bayes__seed_000048__repr_prose]"):
        os._exit(9)
"""


def test_a_worker_that_dies_mid_round_neither_hangs_the_rounds_nor_leaves_the_count(
    place: Path, tmp_path: Path
) -> None:
    """xdist puts a crashed worker's other items at the back of its queue, behind later rounds' items that wait
    for a look only those items complete: the rounds used to wait forever. Now they go back to the front, and
    the rendering it died on counts as not measured (a failed row), so its round is looked at."""
    crashing = tmp_path / "crashing"
    shutil.copytree(place / "c" / "systemone" / "v1", crashing / "c" / "systemone" / "v1")
    shutil.copy(place / "small.jsonl", crashing / "small.jsonl")
    (crashing / "conftest.py").write_text(CRASH, encoding="utf-8")
    worse = Behaviour(noise=NOISE, seed=2, bias=WORSE)
    done = sys1cal(crashing, "w", "--sys1cal-baseline=v1", "--sys1cal-sequential", "-n", "2",
                   f"--sys1cal-report={crashing / 'w.json'}", behaviour=worse)  # fmt: skip
    assert done.ret == pytest.ExitCode.TESTS_FAILED, done.out[-3000:]
    died = "FAILED sys1cal::systemone[bayes/bayes__seed_000048__repr_prose] - worker 'gw"
    assert len(done.lines(died)) == 1, done.out[-3000:]  # pytest's own line for the crash
    data = report(crashing / "w.json")
    assert data["counts"]["failed"] == 1 and data["sequential"]["decided"]
    (failure,) = data["failures"]
    assert failure["instance_id"] == "bayes__seed_000048__repr_prose__parallel_primitives", failure
    assert re.fullmatch(
        r"worker 'gw\d' crashed while running 'sys1cal::systemone\[bayes/bayes__seed_000048__repr_prose\]'",
        failure["error"],
    ), failure
    assert verdicts(data) == dict.fromkeys(verdicts(data), "FAILED") and len(verdicts(data)) == 3
    assert "pytest's closing line counts 4 failed: these gates and the 1 rendering(s) not measured" in done.out
    assert "4 failed" in done.out.splitlines()[-1]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--sys1cal-sequential",), "ERROR: --sys1cal-sequential without --sys1cal-baseline: *"),
        (
            ("--sys1cal-sequential", "--sys1cal-baseline=v1", "-k", "bayes"),
            "*--sys1cal-sequential with -k bayes: the rounds are whole latent problems*drop the selection*",
        ),
        (
            ("--sys1cal-sequential", "--sys1cal-shard=1/4"),
            "*4 shards of rounds of 3 latent problems: in rounds every shard records a part of each round, so use at "
            "most 3 shards, or fewer rounds*",
        ),
        (
            ("--sys1cal-sequential", "--sys1cal-baseline=v1", "--sys1cal-thresholds=call.yaml"),
            "*the upgrade gate in rounds with the per-call reading (*call.yaml:2 systemone.reading: call)*",
        ),
    ],
)
def test_refused_in_one_line(place: Path, args: tuple[str, ...], expected: str) -> None:
    (place / "call.yaml").write_text("systemone:\n  reading: call\n", encoding="utf-8")
    # each a recording, refused before anything is sent (nothing listens on port 9)
    done = sys1cal(place, "x", *args, "--sys1cal-record-mode=once", "--sys1cal-base-url=http://127.0.0.1:9")
    assert done.ret == pytest.ExitCode.USAGE_ERROR, done.out[-2000:]
    assert "Traceback" not in done.out
    errors = [line for line in done.out.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and fnmatch(errors[0], expected), done.out[-2000:]


def test_a_folder_whose_rounds_are_not_the_first_of_its_order_is_refused(place: Path, tmp_path: Path) -> None:
    """A manifest edited by hand: its rounds' latent problems are not the seeded order's first round."""
    shutil.copytree(place / "c" / "systemone" / "v1", tmp_path / "c" / "systemone" / "v1")
    shutil.copy(place / "small.jsonl", tmp_path / "small.jsonl")
    data = manifest(place, "v1")
    data["sequential"] = {"spending": "obrien-fleming", "rounds": 10, "alpha": 0.05, "seed": 0,
                          "recorded_rounds": 1, "latent_problems": ["not", "its", "order"]}  # fmt: skip
    (tmp_path / "c" / "systemone" / "v1" / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    done = sys1cal(tmp_path, "v1")
    assert done.ret == pytest.ExitCode.USAGE_ERROR and "Traceback" not in done.out, done.out[-2000:]
    (error,) = [line for line in done.out.splitlines() if line.startswith("ERROR")]
    assert fnmatch(
        error,
        "ERROR: */c/systemone/v1: its manifest's sequential.latent_problems are not the first 1 rounds of the order "
        "seeded 0 on small; restore the manifest from version control, or record the folder again "
        "(--sys1cal-record-mode=all)",
    ), error
