"""The workflow a platform team signs (issue 37): every action pinned by a commit SHA with its tag in a comment,
`timeout-minutes` on every job, one story for the key (the sys1cal-record environment's secret, in `init`'s next
steps and the workflow alike, the environment limited to the default branch), and the install source one
variable (SYS1CAL_INSTALL), its step run in bash against a stand-in pip. The files come from a real `init`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_sys1cal.commands import project_files
from pytest_sys1cal.commands.project_files import install_source
from tests.commands.test_workflow import MODELS, flow_of, step
from tests.version_roots import REPO

# The tags the workflow used before it was pinned, and their commits: each cross-checked against several
# independent public workflows that pin the same tag (docs/setup.md says how to verify them with git ls-remote).
PINS = {
    "actions/checkout": ("08c6903cd8c0fde910a37f88322edcfb5dd907a8", "v5.0.0"),
    "actions/setup-python": ("e797f83bcb11b83ae66e0230d6156d7c80228e7c", "v6.0.0"),
    "actions/upload-artifact": ("b7c566a772e6b6bfb58ed0dc250532a479d7789f", "v6.0.0"),
    "actions/download-artifact": ("37930b1c2abaa49bbe596cd826c3c89aef350131", "v7.0.0"),
}


def init(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_sys1cal", "init", *args], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done


# The one-machine workflow of each model, and the sharded one (init --shards: its record matrix and merge job).
PROJECTS = {**MODELS, "sharded": ["--model", "systemone", "--version", "v1", "--shards", "3"]}


@pytest.fixture(scope="module", params=sorted(PROJECTS))
def project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp(request.param)
    return root, init(root, *PROJECTS[request.param]).stdout


def test_every_action_is_pinned_by_commit_with_its_tag_beside_it(project: tuple[Path, str]) -> None:
    text = (project[0] / project_files.WORKFLOW).read_text(encoding="utf-8")
    uses = re.findall(r"^\s*(?:- )?uses: (\S+)(.*)$", text, flags=re.M)
    assert uses
    for ref, comment in uses:
        action, _, sha = ref.partition("@")
        assert re.fullmatch(r"[0-9a-f]{40}", sha), ref
        assert PINS[action] == (sha, comment.strip().removeprefix("# ")), (ref, comment)


def test_every_job_has_a_timeout(project: tuple[Path, str]) -> None:
    jobs = flow_of(project[0] / project_files.WORKFLOW)["jobs"]
    timeouts = {name: job.get("timeout-minutes") for name, job in jobs.items()}
    assert all(isinstance(minutes, int) and 0 < minutes <= 360 for minutes in timeouts.values()), timeouts


def test_one_story_for_the_key_the_recording_environments_secret(project: tuple[Path, str]) -> None:
    root, printed = project
    text = (root / project_files.WORKFLOW).read_text(encoding="utf-8")
    flow = flow_of(root / project_files.WORKFLOW)
    assert flow["jobs"]["record"]["environment"] == "sys1cal-record"
    assert "that environment's secret" in text and "limit its deployment branches to the default branch" in text
    assert "repository secret" not in printed + text  # the key: the environment's secret, nowhere else
    assert "repository variable SYS1CAL_BASE_URL" not in printed + text
    assert "create the environment sys1cal-record (Settings → Environments)" in printed
    assert "limit its deployment branches to the default branch" in printed
    assert "add the environment secret" in printed
    setup = (REPO / "docs" / "setup.md").read_text(encoding="utf-8")
    assert "### The recording environment" in setup and "Deployment branches and tags" in setup


def test_the_install_step_installs_the_one_variable_as_it_is(project: tuple[Path, str], tmp_path: Path) -> None:
    """The step run in bash with a stand-in `python` that records its arguments: a URL requirement with spaces
    reaches pip as one argument."""
    flow = flow_of(project[0] / project_files.WORKFLOW)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_in = bin_dir / "python"
    stand_in.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$ARGS_FILE"\n', encoding="utf-8")
    stand_in.chmod(0o755)
    source = "pytest-sys1cal[html] @ git+https://example.invalid/org/pytest-sys1cal@" + "a" * 40
    jobs = [
        name
        for name, job in flow["jobs"].items()
        if any(s.get("name") == "Install pytest-sys1cal" for s in job["steps"])
    ]
    assert {"replay", "record"} <= set(jobs)
    for job in jobs:
        install = step(flow, job, "Install pytest-sys1cal")
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SYS1CAL_INSTALL": source,
               "ARGS_FILE": str(tmp_path / "args")}  # fmt: skip
        subprocess.run(["bash", "-e", "-c", install["run"]], env=env, check=True, timeout=30)
        assert (tmp_path / "args").read_text(encoding="utf-8").splitlines() == ["-m", "pip", "install", source]


def fake_distribution(monkeypatch: pytest.MonkeyPatch, direct_url: dict[str, Any] | None) -> None:
    """importlib.metadata's record of where this installation came from (PEP 610), as pip writes it: this
    machine's own installation is an editable checkout, so the other origins are stood in for."""
    import importlib.metadata

    class Distribution:
        def read_text(self, name: str) -> str | None:
            return None if direct_url is None else json.dumps(direct_url)

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Distribution())


@pytest.mark.parametrize(
    ("direct_url", "expected"),
    [
        (None, "pytest-sys1cal[html]==9.9"),
        ({"url": "file:///home/me/pytest-sys1cal", "dir_info": {"editable": True}}, "pytest-sys1cal[html]==9.9"),
        (
            {"url": "https://example.invalid/dist/pytest_sys1cal-9.9-py3-none-any.whl", "archive_info": {}},
            "pytest-sys1cal[html] @ https://example.invalid/dist/pytest_sys1cal-9.9-py3-none-any.whl",
        ),
        (
            {"url": "https://example.invalid/org/pytest-sys1cal", "vcs_info": {"vcs": "git", "commit_id": "b" * 40}},
            "pytest-sys1cal[html] @ git+https://example.invalid/org/pytest-sys1cal@" + "b" * 40,
        ),
    ],
)
def test_init_writes_the_source_this_installation_came_from(
    monkeypatch: pytest.MonkeyPatch, direct_url: dict[str, Any] | None, expected: str
) -> None:
    fake_distribution(monkeypatch, direct_url)
    assert install_source("9.9") == expected
