"""The workflow `init --shards N` writes (issue 39): clean under actionlint and shellcheck, the key in each shard's
recording step alone, the dollar cap split per shard, the replay job the one-machine workflow's, and its shard and
merge steps run in bash against a stand-in for the CI: each shard's step records from a real loopback server into a
runner folder of its own, the artifacts are copied as upload/download-artifact would, and the merge step's merged
folder replays."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_sys1cal.commands.project_files import WORKFLOW
from pytest_sys1cal.dataset import load_dataset
from tests.commands.test_workflow import actionlint, flow_of, run_script, runs, shellcheck, step
from tests.loopback import Behaviour, LoopbackServer

SHARDS = 3
RENDERINGS = load_dataset("sys1cal-v1").renderings


def init(root: Path, *args: str) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_sys1cal", "init", *args], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return root / WORKFLOW


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return init(tmp_path_factory.mktemp("sharded"), "--model", "systemone", "--version", "v1", "--shards", str(SHARDS))


def test_linters_find_nothing(written: Path, tmp_path: Path) -> None:
    assert actionlint(written) == []
    for (job, name), script in runs(flow_of(written)).items():
        assert shellcheck(script, tmp_path) == [], f"{job} / {name}"


def test_the_matrix_the_key_and_the_unchanged_replay(written: Path, tmp_path: Path) -> None:
    flow = flow_of(written)
    jobs = flow["jobs"]
    assert list(jobs) == ["replay", "comment", "record", "merge"]
    record = jobs["record"]
    assert record["strategy"] == {"fail-fast": False, "matrix": {"shard": list(range(1, SHARDS + 1))}}
    assert record["environment"] == "sys1cal-record" and "cancel-in-progress" not in record["concurrency"]
    holders = [(job, s.get("name")) for job, spec in jobs.items() for s in spec["steps"] if "secrets." in json.dumps(s)]
    assert holders == [("record", "Record this shard")]
    assert jobs["merge"]["needs"] == "record" and "environment" not in jobs["merge"]
    for (job, name), script in runs(flow).items():
        assert "${{" not in script, f"{job} / {name}"
    one_machine = flow_of(init(tmp_path, "--model", "systemone", "--version", "v1"))
    assert jobs["replay"] == one_machine["jobs"]["replay"] and jobs["comment"] == one_machine["jobs"]["comment"]
    upload = step(flow, "record", "Upload this shard's cassettes")
    assert upload["if"].startswith("${{ always()") and upload["with"]["overwrite"] is True


@pytest.mark.parametrize(("cap", "share"), [("5", "1.6666"), ("20", "6.6666"), ("0.03", "0.0100"), ("2.50", "0.8333")])
def test_the_cap_is_split_evenly_between_the_shards(written: Path, tmp_path: Path, cap: str, share: str) -> None:
    flow = flow_of(written)
    output = tmp_path / "output"
    env = {"VERSION": "v2", "MAX_COST": cap, "MAX_COST_CEILING": "20", "SHARD": "2", "SHARDS": str(SHARDS),
           "GITHUB_OUTPUT": str(output)}  # fmt: skip
    done = run_script(step(flow, "record", "Check the inputs")["run"], env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert output.read_text() == f"shard_cost={share}\n"
    assert float(share) * SHARDS <= float(cap)  # never more than the cap in all


WANTED = list(dict.fromkeys(r.latent_instance_id for r in RENDERINGS))[:6]
SOURCE = load_dataset("sys1cal-v1").path.read_text(encoding="utf-8").splitlines()
LINES = "".join(SOURCE[r.line - 1] + "\n" for r in RENDERINGS if r.latent_instance_id in WANTED)  # 6 problems
BIN = str(Path(sys.executable).parent)  # `pytest` and `python`, as the install step leaves them


def make_runner(root: Path, thresholds: str | None = None) -> Path:
    """A runner's checkout: the project's ini and its small dataset (and thresholds.yaml when given)."""
    root.mkdir()
    (root / "small.jsonl").write_text(LINES, encoding="utf-8")
    ini = 'sys1cal_model = "systemone"\nsys1cal_model_version = "v1"\nsys1cal_dataset = "small.jsonl"\n'
    (root / "pyproject.toml").write_text(f"[tool.pytest.ini_options]\n{ini}", encoding="utf-8")
    if thresholds is not None:
        (root / "thresholds.yaml").write_text(thresholds, encoding="utf-8")
    return root


@pytest.mark.e2e  # bash running the workflow's steps, pytest processes against a loopback server
def test_the_shard_and_merge_steps_run_in_bash(written: Path, tmp_path: Path) -> None:
    """Each shard's recording step on a runner of its own (a folder with the project's files), its artifact
    carried as upload-artifact then download-artifact with a pattern would, then the merge and gate steps."""
    flow = flow_of(written)
    downloaded = tmp_path / "merge-runner-downloads"
    with LoopbackServer.for_renderings(RENDERINGS, Behaviour(bias=0.2)) as server:
        for shard in range(1, SHARDS + 1):
            root = make_runner(tmp_path / f"shard-{shard}")
            env = {"PATH": f"{BIN}:{os.environ['PATH']}", "VERSION": "v2", "SHARD": str(shard),
                   "SHARDS": str(SHARDS), "SHARD_COST": "0.0100", "SYS1CAL_BASE_URL": server.url}  # fmt: skip
            done = run_script(step(flow, "record", "Record this shard")["run"], env, root)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr
            assert f"shard {shard} of {SHARDS}:" in done.stdout and "a shard gates nothing" in done.stdout
            # upload-artifact of cassettes/systemone/v2/, downloaded by pattern into shards/<artifact name>/
            name = f"sys1cal-shard-{shard}-of-{SHARDS}"
            shutil.copytree(root / "cassettes" / "systemone" / "v2", downloaded / name)
    merge = make_runner(tmp_path / "merge")
    shutil.copytree(downloaded, merge / "shards")
    env = {"PATH": f"{BIN}:{os.environ['PATH']}", "VERSION": "v2", "BASELINE_VERSION": ""}
    done = run_script(step(flow, "merge", "Merge the shards, checking each")["run"], env, merge)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"merged {SHARDS} shards into cassettes/systemone/v2" in done.stdout
    done = run_script(step(flow, "merge", "Gate the merged version")["run"], env, merge)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    report = json.loads((merge / "sys1cal-report.json").read_text(encoding="utf-8"))
    assert report["counts"]["measured"] == report["dataset"]["renderings"] == len(LINES.splitlines())
    assert "shard" not in report

    # a shard's artifact missing: the merge step fails, naming it
    shutil.rmtree(merge / "cassettes")
    shutil.rmtree(merge / "shards" / f"sys1cal-shard-2-of-{SHARDS}")
    done = run_script(step(flow, "merge", "Merge the shards, checking each")["run"], env, merge)
    assert done.returncode == 4 and f"shard 2 of {SHARDS} missing (given: 1, 3)" in done.stderr


@pytest.mark.e2e  # bash running the workflow's steps, pytest processes against loopback servers
def test_in_rounds_each_run_records_one_round_and_the_merge_job_says_what_comes_next(
    written: Path, tmp_path: Path
) -> None:
    """rounds on: each run's shard steps record their part of the next round (the shard's folder carried from the
    run before, as download-artifact with its run-id would), the merge job merges the whole rounds, its gate step
    looks, and the last step says whether the upgrade is decided or which run the next round continues."""
    flow = flow_of(written)
    design = "systemone:\n  regression:\n    sequential:\n      rounds: 2\n"  # 2 rounds of 3 problems, 1 a shard
    shards = [make_runner(tmp_path / f"shard-{i}", design) for i in range(1, SHARDS + 1)]
    merge = make_runner(tmp_path / "merge", design)
    path = f"{BIN}:{os.environ['PATH']}"
    with LoopbackServer.for_renderings(RENDERINGS, Behaviour(noise=0.3, seed=1)) as server:  # the baseline, v1
        done = subprocess.run(["pytest", "--sys1cal", "--sys1cal-record-mode=once", f"--sys1cal-base-url={server.url}"],
                              cwd=merge, env={**os.environ, "PATH": path}, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:]
    said = []
    with LoopbackServer.for_renderings(RENDERINGS, Behaviour(noise=0.3, seed=2, bias=-1.0)) as server:
        for k in (1, 2):
            shutil.rmtree(merge / "shards", ignore_errors=True)
            for index, root in enumerate(shards, start=1):
                env = {"PATH": path, "VERSION": "v2", "SHARD": str(index), "SHARDS": str(SHARDS), "ROUNDS": "true",
                       "SHARD_COST": "0.0100", "SYS1CAL_BASE_URL": server.url}  # fmt: skip
                done = run_script(step(flow, "record", "Record this shard")["run"], env, root)
                assert done.returncode == 0, done.stdout[-3000:] + done.stderr
                assert f"shard {index} of {SHARDS} in rounds, recording its part of round {k} of 2" in done.stdout
                name = f"sys1cal-shard-{index}-of-{SHARDS}"
                shutil.copytree(root / "cassettes" / "systemone" / "v2", merge / "shards" / name)
            env = {"PATH": path, "VERSION": "v2", "BASELINE_VERSION": "v1", "GITHUB_RUN_ID": f"{1000 + k}",
                   "GITHUB_STEP_SUMMARY": str(merge / "summary.md")}  # fmt: skip
            done = run_script(step(flow, "merge", "Merge the shards, checking each")["run"], env, merge)
            assert done.returncode == 0 and f"it holds {k} of 2 rounds whole" in done.stdout, done.stderr
            gate = run_script(step(flow, "merge", "Gate the merged version")["run"], env, merge)
            done = run_script(step(flow, "merge", "Say what the rounds need next")["run"], env, merge)
            assert done.returncode == 0, done.stderr
            said.append((gate.returncode, done.stdout.strip()))
    assert said[0] == (1, "Rounds: 1 of 2 recorded, not decided yet: run this workflow again with rounds on and "
                          "previous_run 1001 to record the next round.")  # fmt: skip
    assert said[1][0] == 1 and said[1][1].startswith("Rounds: decided at round 2 of 2: "), said
    assert said[1][1] in (merge / "summary.md").read_text(encoding="utf-8")


def test_rounds_need_a_baseline_and_a_previous_run_given_with_rounds(written: Path, tmp_path: Path) -> None:
    check = step(flow_of(written), "record", "Check the inputs")["run"]
    base = {"VERSION": "v2", "MAX_COST": "5", "MAX_COST_CEILING": "20", "SHARD": "1", "SHARDS": str(SHARDS),
            "GITHUB_OUTPUT": str(tmp_path / "output"), "BASELINE_VERSION": "v1", "ROUNDS": "true", "PREVIOUS_RUN": ""}  # fmt: skip
    assert run_script(check, base, tmp_path).returncode == 0
    for change, error in [
        ({"BASELINE_VERSION": ""}, "set BASELINE_VERSION in the workflow"),
        ({"PREVIOUS_RUN": "12; rm -rf /"}, "previous_run is the id of a run that recorded rounds"),
        ({"ROUNDS": "false", "PREVIOUS_RUN": "12"}, "previous_run is the id of a run that recorded rounds"),
    ]:
        done = run_script(check, {**base, **change}, tmp_path)
        assert done.returncode == 1 and error in done.stdout, (change, done.stdout)


def test_init_refuses_a_shard_count_it_cannot_write(tmp_path: Path) -> None:
    for bad in ("1", "65", "x"):
        done = subprocess.run([sys.executable, "-m", "pytest_sys1cal", "init", "--shards", bad], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 2 and "--shards" in done.stderr and not (tmp_path / WORKFLOW).exists()
