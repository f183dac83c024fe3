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


@pytest.mark.e2e  # bash running the workflow's steps, pytest processes against a loopback server
def test_the_shard_and_merge_steps_run_in_bash(written: Path, tmp_path: Path) -> None:
    """Each shard's recording step on a runner of its own (a folder with the project's files), its artifact
    carried as upload-artifact then download-artifact with a pattern would, then the merge and gate steps."""
    flow = flow_of(written)
    wanted = list(dict.fromkeys(r.latent_instance_id for r in RENDERINGS))[:6]
    source = load_dataset("sys1cal-v1").path.read_text(encoding="utf-8").splitlines()
    lines = "".join(source[r.line - 1] + "\n" for r in RENDERINGS if r.latent_instance_id in wanted)
    bin_dir = str(Path(sys.executable).parent)  # `pytest` and `python`, as the install step leaves them

    def runner(name: str) -> Path:
        root = tmp_path / name
        root.mkdir()
        (root / "small.jsonl").write_text(lines, encoding="utf-8")
        ini = 'sys1cal_model = "systemone"\nsys1cal_model_version = "v1"\nsys1cal_dataset = "small.jsonl"\n'
        (root / "pyproject.toml").write_text(f"[tool.pytest.ini_options]\n{ini}", encoding="utf-8")
        return root

    downloaded = tmp_path / "merge-runner-downloads"
    with LoopbackServer.for_renderings(RENDERINGS, Behaviour(bias=0.2)) as server:
        for shard in range(1, SHARDS + 1):
            root = runner(f"shard-{shard}")
            env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "VERSION": "v2", "SHARD": str(shard),
                   "SHARDS": str(SHARDS), "SHARD_COST": "0.0100", "SYS1CAL_BASE_URL": server.url}  # fmt: skip
            done = run_script(step(flow, "record", "Record this shard")["run"], env, root)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr
            assert f"shard {shard} of {SHARDS}:" in done.stdout and "a shard gates nothing" in done.stdout
            # upload-artifact of cassettes/systemone/v2/, downloaded by pattern into shards/<artifact name>/
            name = f"sys1cal-shard-{shard}-of-{SHARDS}"
            shutil.copytree(root / "cassettes" / "systemone" / "v2", downloaded / name)
    merge = runner("merge")
    shutil.copytree(downloaded, merge / "shards")
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "VERSION": "v2", "BASELINE_VERSION": ""}
    done = run_script(step(flow, "merge", "Merge the shards, checking each")["run"], env, merge)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"merged {SHARDS} shards into cassettes/systemone/v2" in done.stdout
    done = run_script(step(flow, "merge", "Gate the merged version")["run"], env, merge)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    report = json.loads((merge / "sys1cal-report.json").read_text(encoding="utf-8"))
    assert report["counts"]["measured"] == report["dataset"]["renderings"] == len(lines.splitlines())
    assert "shard" not in report

    # a shard's artifact missing: the merge step fails, naming it
    shutil.rmtree(merge / "cassettes")
    shutil.rmtree(merge / "shards" / f"sys1cal-shard-2-of-{SHARDS}")
    done = run_script(step(flow, "merge", "Merge the shards, checking each")["run"], env, merge)
    assert done.returncode == 4 and f"shard 2 of {SHARDS} missing (given: 1, 3)" in done.stderr


def test_init_refuses_a_shard_count_it_cannot_write(tmp_path: Path) -> None:
    for bad in ("1", "65", "x"):
        done = subprocess.run([sys.executable, "-m", "pytest_sys1cal", "init", "--shards", bad], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 2 and "--shards" in done.stderr and not (tmp_path / WORKFLOW).exists()
