"""Issue 39: a recording split into shards (--sys1cal-shard=I/N), each recorded by a real pytest process from
a real loopback `/v1/systemone` server into a folder of its own, then `python -m pytest_sys1cal merge`: the
merged folder replays to the same report as one machine's recording of the same deterministic server, and
every refusal is one line naming the shard and the field, exit 4, with nothing written."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_sys1cal.dataset import load_dataset
from pytest_sys1cal.store.lock import LOCK_NAME
from tests.loopback import Behaviour, LoopbackServer

pytestmark = pytest.mark.e2e
RENDERINGS = load_dataset("sys1cal-v1").renderings
MODEL, VERSION, COUNT = "systemone", "v1", 3


@dataclass
class Recorded:
    root: Path  # holds shard-1 … shard-N and single (each a cassette root)
    url: str

    def shard(self, index: int) -> Path:
        return self.root / f"shard-{index}" / MODEL / VERSION

    def copy(self, tmp: Path) -> list[Path]:
        """Fresh copies of the shards' folders (tests may damage them)."""
        copies = []
        for index in range(1, COUNT + 1):
            target = tmp / f"s{index}"
            shutil.copytree(self.shard(index), target)
            copies.append(target)
        return copies


def pytest_run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--sys1cal"]
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def merge(cwd: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_sys1cal", "merge", *map(str, args)]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


def record_args(url: str, root: str, *extra: str) -> list[str]:
    return [
        f"--sys1cal-model={MODEL}",
        f"--sys1cal-model-version={VERSION}",
        f"--sys1cal-base-url={url}",
        "--sys1cal-record-mode=once",
        "--sys1cal-repeats=1",
        "--sys1cal-rate=0",
        f"--sys1cal-cassettes={root}",
        *extra,
    ]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    """Three shards and one single-machine recording of one deterministic server (no noise)."""
    root = tmp_path_factory.mktemp("shards")
    with LoopbackServer.for_renderings(RENDERINGS, Behaviour(bias=0.3, position=0.2)) as server:
        for index in range(1, COUNT + 1):
            done = pytest_run(root, *record_args(server.url, f"shard-{index}", f"--sys1cal-shard={index}/{COUNT}"))
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr
        done = pytest_run(root, *record_args(server.url, "single"))
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr
        yield Recorded(root, server.url)


def replay_report(cwd: Path, root: str, name: str, *extra: str) -> dict:
    done = pytest_run(cwd, f"--sys1cal-model={MODEL}", f"--sys1cal-model-version={VERSION}",
                      f"--sys1cal-cassettes={root}", f"--sys1cal-report={name}", *extra)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    return json.loads((cwd / name).read_text(encoding="utf-8"))


def without_paths(report: dict, where: Path) -> str:
    """The report as text with the one place a cassette root is named (the advice in a notice) made neutral."""
    text = json.dumps(report, sort_keys=True)
    for root in ("merged", "single"):
        text = text.replace(f"--sys1cal-cassettes={where / root}", "--sys1cal-cassettes=ROOT")
    return text


# ------------------------------------------------------------------------------------------ the merge


def test_the_merged_folder_replays_to_the_single_machine_report(recorded: Recorded, tmp_path: Path) -> None:
    into = tmp_path / "merged" / MODEL / VERSION
    done = merge(tmp_path, *(recorded.shard(i) for i in range(1, COUNT + 1)), "--into", into)
    assert done.returncode == 0, done.stderr
    assert f"merged {COUNT} shards into {into}: 365 cassettes written; its manifest lists 365" in done.stdout
    replay_line = done.stdout.splitlines()[-1].removeprefix("replay and gate it: ")
    assert replay_line.startswith(f"pytest --sys1cal --sys1cal-model={MODEL} --sys1cal-model-version={VERSION}")
    shutil.copytree(recorded.root / "single", tmp_path / "single")
    merged = replay_report(tmp_path, str(tmp_path / "merged"), "merged.json")
    single = replay_report(tmp_path, str(tmp_path / "single"), "single.json")
    assert without_paths(merged, tmp_path) == without_paths(single, tmp_path)
    assert "shard" not in merged and merged["counts"]["measured"] == 365
    # one manifest, as the single recording wrote it: the same fields and digests (its time and server aside)
    ours = json.loads((into / "manifest.json").read_text(encoding="utf-8"))
    theirs = json.loads((tmp_path / "single" / MODEL / VERSION / "manifest.json").read_text(encoding="utf-8"))
    for manifest in (ours, theirs):
        manifest.pop("recorded_at")
        manifest.pop("replay_index", None)
    assert ours == theirs
    assert not (into / "shard.json").exists() and not (into / LOCK_NAME).exists()


def test_a_shard_report_says_so_and_gates_nothing(recorded: Recorded, tmp_path: Path) -> None:
    shutil.copytree(recorded.root / "shard-2", tmp_path / "shard-2")
    (tmp_path / "thresholds.yaml").write_text(f"{MODEL}:\n  noul:\n    min_mean_ovl: 0.99\n", encoding="utf-8")
    report = replay_report(tmp_path, "shard-2", "shard.json", f"--sys1cal-shard=2/{COUNT}")
    assert report["shard"]["index"] == 2 and report["shard"]["count"] == COUNT
    assert report["counts"]["renderings"] < 365
    assert {gate["verdict"] for gate in report["gates"]} == {"not applicable"}
    assert any(f"this run is shard 2 of {COUNT}" in gate["explanation"] for gate in report["gates"])


def test_xdist_inside_a_shard_gives_the_same_rows(recorded: Recorded, tmp_path: Path) -> None:
    """-n 2 inside shard 1 records the same renderings to the same rows as one process did."""
    done = pytest_run(tmp_path, *record_args(recorded.url, "x", f"--sys1cal-shard=1/{COUNT}"), "-n", "2",
                      "--sys1cal-report=x.json")  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    shutil.copytree(recorded.root / "shard-1", tmp_path / "shard-1")
    one = replay_report(tmp_path, "shard-1", "one.json", f"--sys1cal-shard=1/{COUNT}")
    two = json.loads((tmp_path / "x.json").read_text(encoding="utf-8"))
    assert two["items"] == one["items"] and two["counts"] == one["counts"]
    ours = json.loads((tmp_path / "x" / MODEL / VERSION / "shard.json").read_text(encoding="utf-8"))
    theirs = json.loads((recorded.shard(1) / "shard.json").read_text(encoding="utf-8"))
    assert ours["answers"] == theirs["answers"] and ours["renderings"] == theirs["renderings"]


def test_an_existing_folder_is_completed_where_its_manifest_lacks_cassettes(recorded: Recorded, tmp_path: Path) -> None:
    done = pytest_run(tmp_path, *record_args(recorded.url, "merged"), "-k", "bayes")
    assert done.returncode == 0, done.stderr
    into = tmp_path / "merged" / MODEL / VERSION
    before = {p: p.read_bytes() for p in into.glob("*/*.json")}
    done = merge(tmp_path, *recorded.copy(tmp_path), "--into", into)
    assert done.returncode == 0, done.stderr
    assert f"{365 - len(before)} cassettes written, {len(before)} kept as the folder had them" in done.stdout
    assert all(path.read_bytes() == data for path, data in before.items())
    manifest = json.loads((into / "manifest.json").read_text(encoding="utf-8"))
    assert len(manifest["answers"]) == 365


def test_a_stopped_shard_is_re_run_alone_and_resumes(recorded: Recorded, tmp_path: Path) -> None:
    """A shard that recorded part of its share (here: -k) is refused by the merge with the command that resumes it;
    run as printed, it records only what was missing, and the merge then goes through."""
    shards = recorded.copy(tmp_path)
    shutil.rmtree(shards[1])
    done = pytest_run(tmp_path, *record_args(recorded.url, "part", f"--sys1cal-shard=2/{COUNT}"), "-k", "frequency")
    assert done.returncode == 0, done.stderr
    part = tmp_path / "part" / MODEL / VERSION
    refused = merge(tmp_path, shards[0], part, shards[2], "--into", tmp_path / "m" / MODEL / VERSION)
    assert refused.returncode == 4
    line = refused.stderr.strip()
    assert line.startswith(f"error: merge: shard 2 of {COUNT} ({part}): field 'answers': ") and "\n" not in line
    command = line.split("its cassettes resume: ", 1)[1]
    assert f"--sys1cal-shard=2/{COUNT}" in command and "--sys1cal-record-mode=once" in command
    assert "-k" not in command.split()  # the whole share, not the stopped run's selection
    argv = [sys.executable, "-m", *shlex.split(command)]  # `pytest …` as printed, by this interpreter's pytest
    resumed = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout[-2000:]
    assert "already have cassettes" in resumed.stdout
    done = merge(tmp_path, shards[0], part, shards[2], "--into", tmp_path / "m" / MODEL / VERSION)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------------------------------ refusals


def refused(tmp_path: Path, shards: list[Path], into: Path | None = None) -> str:
    """The merge's one line (exit 4), after checking that it wrote nothing."""
    into = into or tmp_path / "out" / MODEL / VERSION
    existed = {p: p.read_bytes() for p in into.rglob("*") if p.is_file()} if into.exists() else None
    done = merge(tmp_path, *shards, "--into", into)
    assert done.returncode == 4, done.stdout + done.stderr
    assert done.stdout == "" and done.stderr.count("\n") == 1 and done.stderr.startswith("error: merge: ")
    if existed is None:
        assert not into.exists() and not into.parent.exists()
    else:
        assert {p: p.read_bytes() for p in into.rglob("*") if p.is_file()} == existed
    return done.stderr.strip().removeprefix("error: merge: ")


def edit(folder: Path, fields: dict[str, object]) -> None:
    path = folder / "shard.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(fields)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_a_missing_shard_is_named_with_the_command_that_records_it(recorded: Recorded, tmp_path: Path) -> None:
    one, _two, three = recorded.copy(tmp_path)
    line = refused(tmp_path, [one, three])
    assert line.startswith(f"shard 2 of {COUNT} missing (given: 1, 3); run it alone, into a folder of its own")
    command = line.split("then merge again with its folder: ", 1)[1]
    assert f"--sys1cal-shard=2/{COUNT}" in command and "--sys1cal-cassettes=shard-2" in command
    assert "--sys1cal-record-mode=once" in command and f"--sys1cal-base-url={recorded.url}" in command


def test_a_shard_given_twice_overlaps(recorded: Recorded, tmp_path: Path) -> None:
    one, two, three = recorded.copy(tmp_path)
    line = refused(tmp_path, [one, two, three, recorded.shard(2)])
    assert line.startswith(f"shard 2 of {COUNT} ({recorded.shard(2)}): field 'shard': the shards overlap: shard 2 of")


def test_a_latent_problem_in_two_shards_overlaps(recorded: Recorded, tmp_path: Path) -> None:
    one, two, three = recorded.copy(tmp_path)
    theirs = json.loads((one / "shard.json").read_text(encoding="utf-8"))["latent_problems"][0]
    ours = json.loads((two / "shard.json").read_text(encoding="utf-8"))["latent_problems"]
    edit(two, {"latent_problems": [*ours, theirs]})
    line = refused(tmp_path, [one, two, three])
    assert line == (
        f"shard 2 of {COUNT} ({two}): field 'latent_problems': the shards overlap: {theirs} is in shard 1 of "
        f"{COUNT} ({one}) too; merge the shards of one matrix"
    )


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("dataset", {"name": "other", "sha256": "0" * 64}, "record every shard with the same --sys1cal-dataset"),
        ("model", "semif", "merge the shards of one model's version"),
        ("version", "v2", "merge the shards of one version"),
        ("repeats", 2, "record every shard with the same --sys1cal-repeats"),
        ("seed", 7, "record every shard with the same --sys1cal-seed"),
        ("plugin_version", "0.0.1", "recorded by different pytest-sys1cal versions"),
        ("wire", {"questions": ["noul"], "settings": {}}, "asked different questions or adapter settings"),
        ("partition", "f" * 64, "dealt the latent problems differently"),
    ],
)
def test_a_field_that_differs_is_named(recorded: Recorded, tmp_path: Path, field: str, value: object, why: str) -> None:
    one, two, three = recorded.copy(tmp_path)
    edit(three, {field: value})
    line = refused(tmp_path, [one, two, three])
    assert line.startswith(f"shard 3 of {COUNT} ({three}): field '{field}': {json.dumps(value, sort_keys=True)[:77]}")
    assert f", but shard 1 of {COUNT} ({one}) has " in line and why in line


def test_shards_of_another_matrix_are_refused(recorded: Recorded, tmp_path: Path) -> None:
    one, two, three = recorded.copy(tmp_path)
    edit(three, {"shard": {"index": 3, "count": 4}})
    line = refused(tmp_path, [one, two, three])
    assert line.startswith(f"shard 3 of 4 ({three}): field 'shard': one of 4 shards, but shard 1 of {COUNT}")


def test_a_server_that_reported_another_model_is_refused(recorded: Recorded, tmp_path: Path) -> None:
    """Recorded for real: shard 3 against a server of another model."""
    one, two, _three = recorded.copy(tmp_path)
    with LoopbackServer.for_renderings(RENDERINGS, Behaviour(bias=0.3, model="loopback-2")) as other:
        done = pytest_run(tmp_path, *record_args(other.url, "other", f"--sys1cal-shard=3/{COUNT}"))
    assert done.returncode == 0, done.stderr
    three = tmp_path / "other" / MODEL / VERSION
    line = refused(tmp_path, [one, two, three])
    assert line.startswith(f"shard 3 of {COUNT} ({three}): field 'server_model': \"loopback-2\", but shard 1")


def test_an_edited_answer_is_refused(recorded: Recorded, tmp_path: Path) -> None:
    one, two, three = recorded.copy(tmp_path)
    name = sorted(json.loads((two / "shard.json").read_text(encoding="utf-8"))["answers"])[0]
    cassette = two / name
    cassette.write_text(cassette.read_text(encoding="utf-8").replace('\\"noul\\": 0.', '\\"noul\\": 0.9'), "utf-8")
    line = refused(tmp_path, [one, two, three])
    assert line.startswith(
        f"shard 2 of {COUNT} ({two}): field 'answers': {name}: its answers are not the ones recorded"
    )


def test_a_listed_cassette_that_is_gone_is_refused(recorded: Recorded, tmp_path: Path) -> None:
    one, two, three = recorded.copy(tmp_path)
    name = sorted(json.loads((one / "shard.json").read_text(encoding="utf-8"))["answers"])[-1]
    (one / name).unlink()
    line = refused(tmp_path, [one, two, three])
    assert line.startswith(f"shard 1 of {COUNT} ({one}): field 'answers': {name} is listed but missing from the folder")


def test_a_shard_not_recorded_whole_is_refused(recorded: Recorded, tmp_path: Path) -> None:
    one, two, three = recorded.copy(tmp_path)
    answers = json.loads((three / "shard.json").read_text(encoding="utf-8"))["answers"]
    first = sorted(answers)[0]
    edit(three, {"answers": {k: v for k, v in answers.items() if k != first}})
    line = refused(tmp_path, [one, two, three])
    assert line.startswith(
        f"shard 3 of {COUNT} ({three}): field 'answers': 1 of {len(answers)} renderings of its share not recorded "
        f"(first: {first}; "
    )
    assert f"--sys1cal-shard=3/{COUNT} " in line and line.endswith("--sys1cal-record-mode=once")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"partition": None}, "field 'partition': null is not a sha256"),
        ({"schema": "sys1cal-shard/9"}, "field 'schema': 'sys1cal-shard/9' is not 'sys1cal-shard/1'"),
        ({"answers": {"bayes/not-ours.json": "0" * 64}}, "field 'answers': bayes/not-ours.json is not among this"),
        ({"version": "../v1"}, "field 'version': '../v1' is not a plain name"),
        ({"sequential": {"rounds": 0}}, 'field \'sequential\': {"rounds": 0} is not an object {"spending"'),
    ],
)
def test_a_damaged_shard_manifest_is_refused(recorded: Recorded, tmp_path: Path, change: dict, expected: str) -> None:
    one, two, three = recorded.copy(tmp_path)
    edit(two, change)
    assert refused(tmp_path, [one, two, three]).startswith(f"{two / 'shard.json'}: {expected}")


def problems_of(shard: Path) -> list[str]:
    return list(json.loads((shard / "shard.json").read_text(encoding="utf-8"))["latent_problems"])


def rounds_field(shard: Path, **changes: object) -> dict[str, object]:
    """A ``sequential`` field holding one round made of the shard's own latent problems (as if recorded in rounds)."""
    field = {"spending": "obrien-fleming", "rounds": 5, "alpha": 0.05, "seed": 0, "recorded_rounds": 1}
    return {**field, "latent_problems": problems_of(shard), **changes}


def test_shards_in_rounds_and_not_are_refused(recorded: Recorded, tmp_path: Path) -> None:
    one, two, three = recorded.copy(tmp_path)
    edit(three, {"sequential": rounds_field(three)})
    line = refused(tmp_path, [one, two, three])
    assert line.startswith(
        f"shard 1 of {COUNT} ({one}): field 'sequential': missing, but shard 3 of {COUNT} ({three}) is recorded in "
        "rounds: record every shard of one matrix alike"
    )


def test_shards_in_rounds_of_another_design_or_problems_are_refused(recorded: Recorded, tmp_path: Path) -> None:
    one, two, three = recorded.copy(tmp_path)
    together = [problem for shard in (one, two, three) for problem in problems_of(shard)]
    for shard in (one, two):
        edit(shard, {"sequential": rounds_field(shard, latent_problems=together)})
    edit(three, {"sequential": rounds_field(three, latent_problems=together, alpha=0.1)})
    line = refused(tmp_path, [one, two, three])
    assert line.startswith(f"shard 3 of {COUNT} ({three}): field 'sequential': alpha 0.1, but shard 1 of {COUNT}")
    edit(three, {"sequential": rounds_field(three, latent_problems=together[1:])})
    for shard in (one, two):  # every shard's field alike, and one problem more among the shards than in the rounds
        edit(shard, {"sequential": rounds_field(shard, latent_problems=together[1:])})
    line = refused(tmp_path, [one, two, three])
    assert line.startswith(
        f"shard 1 of {COUNT} ({one}): field 'latent_problems': the shards' problems are not rounds 1–1 of their order "
        f"({len(together)} problems against {len(together) - 1})"
    )


def test_rounds_are_not_merged_into_a_recording_that_is_not_in_rounds(recorded: Recorded, tmp_path: Path) -> None:
    shards = recorded.copy(tmp_path)
    into = tmp_path / "out" / MODEL / VERSION
    assert merge(tmp_path, *shards, "--into", into).returncode == 0  # the whole version, not in rounds
    together = [problem for shard in shards for problem in problems_of(shard)]
    for shard in shards:
        edit(shard, {"sequential": rounds_field(shard, latent_problems=together)})
    line = refused(tmp_path, shards, into)
    assert line == (
        f"--into {into}: holds a recording that is not in rounds, and the shards are recorded in rounds: merge them "
        "into a folder of their own (another cassette root)"
    )


def test_a_folder_that_is_no_shard_is_refused(recorded: Recorded, tmp_path: Path) -> None:
    one, two, _three = recorded.copy(tmp_path)
    single = recorded.root / "single" / MODEL / VERSION
    assert refused(tmp_path, [one, two, single]).startswith(f"{single}: no shard.json in it or in the folders below")


def test_an_artifact_folder_above_the_shard_is_found(recorded: Recorded, tmp_path: Path) -> None:
    one, two, three = recorded.copy(tmp_path)
    artifact = tmp_path / "artifact-3" / "cassettes" / MODEL
    artifact.mkdir(parents=True)
    three.rename(artifact / VERSION)
    done = merge(tmp_path, one, two, tmp_path / "artifact-3", "--into", tmp_path / "out" / MODEL / VERSION)
    assert done.returncode == 0, done.stderr


def test_into_must_be_the_shards_version_folder(recorded: Recorded, tmp_path: Path) -> None:
    line = refused(tmp_path, recorded.copy(tmp_path), tmp_path / "out" / MODEL / "v2")
    assert line.startswith(f"--into {tmp_path / 'out' / MODEL / 'v2'}: the shards hold {MODEL} {VERSION}")
    assert line.endswith(f"merge into {tmp_path / 'out' / MODEL / VERSION}")


def test_into_a_folder_of_another_recording_is_refused(recorded: Recorded, tmp_path: Path) -> None:
    done = pytest_run(tmp_path, *record_args(recorded.url, "out", "--sys1cal-repeats=2"), "-k", "bayes")
    assert done.returncode == 0, done.stderr
    line = refused(tmp_path, recorded.copy(tmp_path))
    assert line.startswith(f"--into {tmp_path / 'out' / MODEL / VERSION}: field 'repeats' of its manifest.json")


def test_into_a_shard_folder_is_refused(recorded: Recorded, tmp_path: Path) -> None:
    one, two, three = recorded.copy(tmp_path)
    into = tmp_path / "x" / MODEL / VERSION
    shutil.copytree(three, into)
    assert refused(tmp_path, [one, two, three], into).startswith(f"--into {into}: holds a shard (shard.json)")


def test_into_a_folder_being_recorded_is_refused(recorded: Recorded, tmp_path: Path) -> None:
    into = tmp_path / "out" / MODEL / VERSION
    into.mkdir(parents=True)
    import os
    import socket

    lock = {"pid": os.getpid(), "host": socket.gethostname(), "started": "2026-01-01T00:00:00+00:00"}
    (into / LOCK_NAME).write_text(json.dumps(lock), encoding="utf-8")
    line = refused(tmp_path, recorded.copy(tmp_path), into)
    assert line.startswith(f"{into}: another recording into this folder is running (pid {os.getpid()}")
