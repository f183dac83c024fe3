"""A run with --sys1cal-shard=I/N (issue 39) in pytester: its share of whole latent problems deselected like -k,
the ini key, the spec's and the baseline's refusals, and what a shard's folder allows (it replays only as that
shard; a whole version's folder is never turned into a shard's)."""

from __future__ import annotations

import json

import anyio._backends._asyncio  # noqa: F401  (tests/recording/test_recording.py says why)
import httpcore._backends.anyio  # noqa: F401
import pytest

from pytest_sys1cal.dataset import load_dataset
from tests.field import first_problems
from tests.loopback import Behaviour, LoopbackServer
from tests.runs import CHEAP, QUIET

RENDERINGS = load_dataset("sys1cal-v1").renderings


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("--sys1cal", *QUIET, *CHEAP, *args)


def test_a_shard_replays_whole_latent_problems_deselecting_the_rest(pytester: pytest.Pytester) -> None:
    shares = []
    for index in (1, 2, 3):
        done = run(pytester, "--model=jev", f"--sys1cal-shard={index}/3", "--co", "-q")
        assert done.ret == 0
        ids = [line for line in done.outlines if line.startswith("sys1cal::")]
        shares.append(ids)
        assert any(f"/365 tests collected ({365 - len(ids)} deselected)" in line for line in done.outlines)
    flat = [node for share in shares for node in share]
    assert len(flat) == len(set(flat)) == 365
    problem = {r.short_id: r.latent_instance_id for r in RENDERINGS}
    owner: dict[str, int] = {}
    for index, share in enumerate(shares):
        for node in share:
            assert owner.setdefault(problem[node.split("/", 1)[1].rstrip("]")], index) == index


def test_the_ini_key_and_the_header(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nsys1cal_shard = 2/4\n")
    done = run(pytester, "--model=jev")
    assert done.ret == 0
    done.stdout.fnmatch_lines(
        [
            "sys1cal: shard 2 of 4: 23 of 92 latent problems, * of 365 renderings (dealt by priced cost: the largest "
            "shard *× the mean); a shard gates nothing: merge the shards, then replay the merged folder to gate it",
            "*this run is shard 2 of 4 (* of 365 renderings, 23 of 92 latent problems); threshold gates describe the "
            "whole dataset, so a shard gates nothing*",
        ]
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("--sys1cal-shard=5/4",),
            "*argument --sys1cal-shard: '5/4' is not a shard: I/N needs 1 ≤ I ≤ N (N ≥ 1), e.g. 2/4",
        ),
        (("--sys1cal-shard=93/93",), "*93 shards of a dataset with 92 latent problems*use at most 92 shards*"),
        (
            ("--sys1cal-shard=1/2", "--sys1cal-baseline=jev-1.13.0"),
            "*a shard gates nothing, the upgrade gate included*",
        ),
    ],
)
def test_refused_in_one_line(pytester: pytest.Pytester, args: tuple[str, ...], expected: str) -> None:
    done = run(pytester, "--model=jev", *args)
    assert done.ret in (pytest.ExitCode.USAGE_ERROR, 2)
    done.stderr.fnmatch_lines([expected])
    assert "Traceback" not in done.stderr.str()


def test_a_shard_folder_replays_only_as_its_shard(pytester: pytest.Pytester) -> None:
    dataset = first_problems(pytester.path / "small.jsonl", 3)
    common = ("--model=systemone", "--sys1cal-model-version=v1", f"--sys1cal-dataset={dataset}")
    with LoopbackServer.for_renderings(RENDERINGS, Behaviour(bias=0.2)) as server:
        done = run(pytester, *common, f"--sys1cal-base-url={server.url}", "--sys1cal-record-mode=once",
                   "--sys1cal-repeats=1", "--sys1cal-shard=1/2", "--sys1cal-cassettes=s1")  # fmt: skip
        assert done.ret == 0, done.stdout.str()
        folder = pytester.path / "s1" / "systemone" / "v1"
        shard = json.loads((folder / "shard.json").read_text(encoding="utf-8"))
        assert shard["shard"] == {"index": 1, "count": 2} and len(shard["answers"]) == len(shard["renderings"])
        assert shard["command"][:2] == ["pytest", "--sys1cal"] and "--sys1cal-shard=1/2" in shard["command"]

        whole = run(pytester, *common, "--sys1cal-cassettes=s1")
        assert whole.ret == pytest.ExitCode.USAGE_ERROR
        whole.stderr.fnmatch_lines(
            [f"*{folder / 'shard.json'}: this folder holds shard 1 of 2, not the whole version: merge the shards' "
             "folders into one version folder*; or replay this shard alone with --sys1cal-shard=1/2"]
        )  # fmt: skip
        other = run(pytester, *common, "--sys1cal-cassettes=s1", "--sys1cal-shard=2/2")
        assert other.ret == pytest.ExitCode.USAGE_ERROR
        other.stderr.fnmatch_lines(["*this folder holds shard 1 of 2, and this run is shard 2 of 2: record each*"])
        assert run(pytester, *common, "--sys1cal-cassettes=s1", "--sys1cal-shard=1/2").ret == 0

        # a whole version's folder is not made a shard's by recording one into it
        done = run(pytester, *common, f"--sys1cal-base-url={server.url}", "--sys1cal-record-mode=once",
                   "--sys1cal-repeats=1", "--sys1cal-cassettes=whole")  # fmt: skip
        assert done.ret == 0
        into = run(pytester, *common, f"--sys1cal-base-url={server.url}", "--sys1cal-record-mode=once",
                   "--sys1cal-shard=2/2", "--sys1cal-cassettes=whole")  # fmt: skip
        assert into.ret == pytest.ExitCode.USAGE_ERROR
        into.stderr.fnmatch_lines(["*holds a recording of the whole version*a shard records into a folder of its own*"])
        assert not (pytester.path / "whole" / "systemone" / "v1" / "shard.json").exists()


def test_a_shard_that_saved_nothing_leaves_nothing(pytester: pytest.Pytester) -> None:
    """Every request refused: the recording saved nothing, so neither manifest nor shard manifest stays."""
    dataset = first_problems(pytester.path / "small.jsonl", 2)
    script = [(400, {"Content-Type": "application/json"}, b'{"detail": "no"}')] * 40
    with LoopbackServer.for_renderings(RENDERINGS, Behaviour(script=script)) as server:
        done = run(pytester, "--model=systemone", "--sys1cal-model-version=v1", f"--sys1cal-dataset={dataset}",
                   f"--sys1cal-base-url={server.url}", "--sys1cal-record-mode=once", "--sys1cal-repeats=1",
                   "--sys1cal-shard=1/2", "--sys1cal-cassettes=s", "--sys1cal-retry-budget=0")  # fmt: skip
    assert done.ret != 0
    assert not (pytester.path / "s").exists() or not any((pytester.path / "s").rglob("*.json"))


def test_in_rounds_each_round_is_dealt_among_the_shards_apart(pytester: pytest.Pytester) -> None:
    """--sys1cal-sequential with --sys1cal-shard (issue 40): a shard recording into an empty folder takes its part of
    round 1 only; the three parts are disjoint, none empty, and together exactly round 1's latent problems."""
    from pytest_sys1cal.analysis.sequential_design import Design, problem_order

    order = problem_order([r.latent_instance_id for r in RENDERINGS], seed=0)
    first_round = set(order[: Design.of(len(order)).ends[0]])
    problem = {r.short_id: r.latent_instance_id for r in RENDERINGS}
    parts = []
    for index in (1, 2, 3):
        args = (f"--sys1cal-shard={index}/3", "--sys1cal-sequential", "--sys1cal-record-mode=once")
        done = run(pytester, "--model=systemone", *args, f"--sys1cal-cassettes=shard-{index}", "--co", "-q")
        assert done.ret == 0, done.stdout.str()[-2000:]
        ids = [line for line in done.outlines if line.startswith("sys1cal::")]
        parts.append({problem[node.split("/", 1)[1].rstrip("]")] for node in ids})
    assert all(parts) and sum(len(part) for part in parts) == len(set().union(*parts))
    assert set().union(*parts) == first_round
