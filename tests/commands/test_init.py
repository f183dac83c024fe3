"""`python -m pytest_sys1cal init`: the files it writes (never over an existing one), the workflow's structure,
and every pytest command in the workflow parsed by the plugin's own options and run as printed."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jevcompat.mock as jevcompat
import pytest
import yaml

from pytest_sys1cal import __version__
from pytest_sys1cal.commands.project_files import WORKFLOW, Project, ini_snippet
from pytest_sys1cal.gates.config import parse_thresholds
from pytest_sys1cal.report.pr_comment import MARKER
from tests.degraded import degrade
from tests.loopback import jevcompat_mock
from tests.runs import REPO, run

JEV = REPO / "cassettes" / "jev" / "jev-1.13.0"
FILES = ("thresholds.yaml", WORKFLOW, ".gitattributes")


def init(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_sys1cal", "init", *args], cwd=root, capture_output=True, text=True, timeout=120
    )


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


# ============================================================================================ the files


def test_init_writes_the_three_files_and_prints_the_ini_snippet(tmp_path: Path) -> None:
    done = init(tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(snapshot(tmp_path)) == sorted(FILES)
    assert done.stdout.startswith(f"Wrote {', '.join(FILES)}.")
    snippet = re.search(r"\[tool\.pytest\.ini_options\]\n(?:    .*\n)+", done.stdout.replace("\n    [tool", "\n[tool"))
    assert (
        snippet
        and 'sys1cal_model = "jev"' in snippet.group(0)
        and 'sys1cal_model_version = "jev-1.13.0"' in done.stdout
    )


def test_init_twice_changes_nothing_and_names_the_files(tmp_path: Path) -> None:
    assert init(tmp_path).returncode == 0
    before = snapshot(tmp_path)
    again = init(tmp_path)
    assert again.returncode == 4 and again.stdout == ""
    # .gitattributes has init's lines already: only the two files init would have to overwrite are named.
    assert again.stderr.strip() == (
        f"error: thresholds.yaml, {WORKFLOW} already exist; init never overwrites and wrote nothing: move or delete "
        "them and run init again, or see what init would write with --show and merge it by hand "
        "(python -m pytest_sys1cal docs setup)"
    )
    assert snapshot(tmp_path) == before


def test_an_existing_thresholds_file_stops_all_of_them(tmp_path: Path) -> None:
    (tmp_path / "thresholds.yaml").write_text("jev: null\n")
    (tmp_path / ".gitattributes").write_text("*.png binary\n")
    done = init(tmp_path, "--dir", ".")
    assert done.returncode == 4
    assert done.stderr.startswith("error: thresholds.yaml already exists; init never overwrites and wrote nothing")
    assert sorted(snapshot(tmp_path)) == [".gitattributes", "thresholds.yaml"] and not (tmp_path / ".github").exists()
    assert (tmp_path / ".gitattributes").read_text() == "*.png binary\n"  # not added to when init stops


def test_an_existing_gitattributes_gets_the_lines_it_lacks(tmp_path: Path) -> None:
    """Most repositories have a .gitattributes (issue 24: init used to refuse it and write nothing): init adds
    its lines at the end, every existing line as it was, and adds nothing a second time."""
    mine = "*.png binary\ncassettes/** linguist-generated=true -diff\n"
    (tmp_path / ".gitattributes").write_text(mine)
    done = init(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Added init's lines to the end of .gitattributes (the rest as it was)." in done.stdout
    text = (tmp_path / ".gitattributes").read_text()
    assert text.startswith(mine + "\n# pytest-sys1cal: ")
    assert text.endswith("\ncassettes/**/manifest.json linguist-generated=false diff\n")
    assert text.count("cassettes/** linguist-generated=true -diff") == 1  # the line it had is not added again
    (tmp_path / "thresholds.yaml").unlink()
    shutil.rmtree(tmp_path / ".github")
    again = init(tmp_path)
    assert again.returncode == 0 and (tmp_path / ".gitattributes").read_text() == text
    assert "has init's lines already" in again.stdout


def test_show_prints_what_init_would_write_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / ".gitattributes").write_text("*.png binary\n")
    (tmp_path / "thresholds.yaml").write_text("jev: null\n")
    before = snapshot(tmp_path)
    done = init(tmp_path, "--model", "systemone", "--version", "my-model-1", "--show")
    assert done.returncode == 0, done.stderr
    assert snapshot(tmp_path) == before
    out = done.stdout
    assert out.startswith("init --show: nothing was written.")
    assert "---- thresholds.yaml: EXISTS, so init would stop and write nothing; it would write\n" in out
    assert f"---- {WORKFLOW}: would be written\n# pytest-sys1cal" in out
    assert "---- .gitattributes: exists; these lines would be added at its end" in out
    shown = out.split("---- thresholds.yaml: ", 1)[1].split("\n", 1)[1].split("\n---- ", 1)[0]
    assert yaml.safe_load(shown) == {"systemone": {"reading": "call"}}  # what a real init writes, byte for byte
    (tmp_path / "thresholds.yaml").unlink()
    assert init(tmp_path, "--model", "systemone", "--version", "my-model-1").returncode == 0
    assert (tmp_path / "thresholds.yaml").read_text() == shown.rstrip("\n") + "\n"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--model", "gpt"], "error: --model gpt: init sets up the built-in adapters (jev, systemone, semif)"),
        (["--model", "systemone"], "error: --model systemone needs --version NAME"),
        (["--version", "../x"], "error: --version '../x': use letters, digits and . _ + - only"),
        (["--dir", "nowhere"], "error: --dir nowhere: no such directory"),
    ],
)
def test_bad_options_write_nothing(tmp_path: Path, args: list[str], expected: str) -> None:
    done = init(tmp_path, *args)
    assert done.returncode == 4 and done.stderr.startswith(expected), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not any(tmp_path.iterdir())


def test_the_jev_thresholds_are_the_shipped_ones(tmp_path: Path) -> None:
    init(tmp_path)
    written = (tmp_path / "thresholds.yaml").read_text(encoding="utf-8")
    shipped = (REPO / "thresholds.yaml").read_text(encoding="utf-8")
    assert list(yaml.safe_load(written)) == ["jev"]
    for version in (None, "jev-1.13.0", "jev-1.14.0"):
        mine, theirs = (parse_thresholds(text, "t", "jev", version) for text in (written, shipped))
        assert [(g.name, g.limit) for g in mine.gates] == [(g.name, g.limit) for g in theirs.gates]
        assert (mine.regression, mine.decisions) == (theirs.regression, theirs.decisions)
    assert "#   python -m pytest_sys1cal thresholds sys1cal-report.json --update --version\n" in written


def test_another_model_gets_its_own_section_only_until_thresholds_update_writes_its_gates(tmp_path: Path) -> None:
    """Issue 24: init for a model that is not jev writes that model's section only (no jev floors "so the file is
    not empty"); it has no gates, and the command the file names writes them in place from a report."""
    done = init(tmp_path, "--model", "systemone", "--version", "typed-gguf-smollm2-135m")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "thresholds.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(text) == {"systemone": {"reading": "call"}} and "jev" not in text.replace("--sys1cal", "")
    assert "# systemone: no gates yet, so a run of it says so and gates nothing." in text
    empty = parse_thresholds(text, "t", "systemone", "typed-gguf-smollm2-135m")
    assert (empty.layers, empty.gates, empty.notice) == (("systemone",), (), None)
    report = REPO / "tests" / "golden" / "typed-gguf-report.json"
    update = [sys.executable, "-m", "pytest_sys1cal", "thresholds", str(report), "--update"]
    written = subprocess.run(update, cwd=tmp_path, capture_output=True, text=True)
    assert written.returncode == 0, written.stderr
    assert written.stdout.startswith("--- thresholds.yaml (before)\n+++ thresholds.yaml (after)\n")
    after = (tmp_path / "thresholds.yaml").read_text(encoding="utf-8")
    gates = parse_thresholds(after, "t", "systemone", "typed-gguf-smollm2-135m")
    assert len(gates.gates) >= 18 and gates.notice is None and list(yaml.safe_load(after)) == ["systemone"]
    assert "no gates yet" not in after  # init's note is replaced by the gates' own header
    assert after.startswith(text.split("\n\n", 1)[0])  # the file's header stays as it was


def test_gitattributes_mark_cassettes_generated_but_not_manifests(tmp_path: Path) -> None:
    init(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    cassette, manifest = "cassettes/jev/v1/bayes/x.json", "cassettes/jev/v1/manifest.json"
    attrs = subprocess.run(
        ["git", "check-attr", "linguist-generated", "diff", "--", cassette, manifest, "thresholds.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert attrs == [
        f"{cassette}: linguist-generated: true",
        f"{cassette}: diff: unset",
        f"{manifest}: linguist-generated: false",
        f"{manifest}: diff: set",
        "thresholds.yaml: linguist-generated: unspecified",
        "thresholds.yaml: diff: unspecified",
    ]


def test_gitattributes_keep_manifest_diffs_visible_and_cassettes_collapsed(tmp_path: Path) -> None:
    """What a pull request shows, with real git: a change to a manifest is a text diff; a cassette's is not."""
    init(tmp_path)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    folder = tmp_path / "cassettes" / "jev" / "v1"
    (folder / "bayes").mkdir(parents=True)
    (folder / "manifest.json").write_text('{"repeats": 10}\n')
    (folder / "bayes" / "x.json").write_text('{"answer": 0.1}\n')
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "one"], cwd=tmp_path, check=True)
    (folder / "manifest.json").write_text('{"repeats": 3}\n')
    (folder / "bayes" / "x.json").write_text('{"answer": 0.9}\n')
    diff = subprocess.run(["git", "diff"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert '-{"repeats": 10}\n+{"repeats": 3}' in diff
    assert "Binary files a/cassettes/jev/v1/bayes/x.json and b/cassettes/jev/v1/bayes/x.json differ" in diff
    assert "0.9" not in diff


def test_the_ini_snippet_is_read_by_pytest(pytester: pytest.Pytester, tmp_path: Path) -> None:
    printed = init(tmp_path, "--model", "semif", "--version", "my-gguf").stdout
    snippet = "\n".join(line[4:] for line in printed.splitlines() if line.startswith("    "))
    assert snippet.startswith("[tool.pytest.ini_options]\n")
    (pytester.path / "pyproject.toml").write_text(snippet + "\n", encoding="utf-8")
    config = pytester.parseconfig()
    assert (config.getini("sys1cal_model"), config.getini("sys1cal_model_version")) == ("semif", "my-gguf")


# ========================================================================================= the workflow


def workflow(root: Path) -> dict[str, Any]:
    return yaml.safe_load((root / WORKFLOW).read_text(encoding="utf-8"))


def steps_named(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step.get("name", step.get("uses", "")): step for step in job["steps"]}


def test_the_workflow_replays_on_push_and_records_only_by_hand(tmp_path: Path) -> None:
    init(tmp_path)
    flow = workflow(tmp_path)
    triggers = flow[True]  # YAML 1.1 reads the key `on` as true
    assert set(triggers) == {"push", "pull_request", "workflow_dispatch"}
    assert set(triggers["workflow_dispatch"]["inputs"]) == {"version", "max_cost", "model_id"}
    assert flow["permissions"] == {"contents": "read"}
    # The model and the version gated come from the ini snippet alone; the workflow names the baseline (none yet).
    assert flow["env"] == {
        "BASELINE_VERSION": "",
        "MAX_COST_CEILING": "20",
        "SYS1CAL_INSTALL": f"pytest-sys1cal[html]=={__version__}",  # an editable checkout: nothing CI could fetch
    }
    replay, record = flow["jobs"]["replay"], flow["jobs"]["record"]
    assert replay["if"] == "github.event_name != 'workflow_dispatch'"
    assert record["if"] == "github.event_name == 'workflow_dispatch'"
    assert "TYPESAFE_API_KEY" not in json.dumps(replay)
    # The key is given to the one step that records, not to the job (pip and every action would see it).
    steps = steps_named(record)
    assert [name for name, step in steps.items() if "TYPESAFE_API_KEY" in json.dumps(step)] == ["Record, then gate"]
    assert steps["Record, then gate"]["env"]["TYPESAFE_API_KEY"] == "${{ secrets.TYPESAFE_API_KEY }}"
    assert "TYPESAFE_API_KEY" not in json.dumps(record.get("env", {}))
    for job, artifacts in ((replay, ["sys1cal-reports"]), (record, ["sys1cal-cassettes-", "sys1cal-reports"])):
        uploads = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
        assert [s["with"]["name"].split("$")[0] for s in uploads] == artifacts
        assert all(s["if"].startswith("${{ !cancelled()") for s in uploads)
    installs = [s["run"] for s in replay["steps"] + record["steps"] if "pip install" in s.get("run", "")]
    assert [shlex.split(run)[-1] for run in installs] == ["$SYS1CAL_INSTALL"] * 2  # one variable: the source
    record_run = " ".join(s.get("run", "") for s in record["steps"])
    assert "--sys1cal-record-mode=once" in record_run and '"--sys1cal-max-cost=$MAX_COST"' in record_run
    assert "--sys1cal-record-mode" not in " ".join(s.get("run", "") for s in replay["steps"])


def test_other_models_read_their_own_key_and_server(tmp_path: Path) -> None:
    init(tmp_path, "--model", "systemone", "--version", "my-server-1")
    flow = workflow(tmp_path)
    assert set(flow["env"]) == {"BASELINE_VERSION", "MAX_COST_CEILING", "SYS1CAL_INSTALL"}
    record = flow["jobs"]["record"]
    assert record["env"] == {
        "VERSION": "${{ inputs.version }}",
        "MAX_COST": "${{ inputs.max_cost }}",
        "MODEL_ID": "${{ inputs.model_id }}",
    }
    assert steps_named(record)["Record, then gate"]["env"] == {
        "SYS1CAL_API_KEY": "${{ secrets.SYS1CAL_API_KEY }}",
        "SYS1CAL_BASE_URL": "${{ vars.SYS1CAL_BASE_URL }}",
    }


# ------------------------------------------------------------- every pytest command, parsed and run as printed

CONTEXTS = {"inputs": {"version": "jev-1.14.0", "max_cost": "5", "model_id": ""}, "secrets": {}, "vars": {}}


def fill(value: Any, contexts: dict[str, dict[str, str]]) -> str:
    """`value` with every ${{ context.name }} filled from `contexts`."""
    return re.sub(r"\$\{\{\s*(\w+)\.(\w+)\s*\}\}", lambda m: contexts[m[1]].get(m[2], ""), str(value))


def job_env(flow: dict[str, Any], job: str, contexts: dict[str, dict[str, str]]) -> dict[str, str]:
    """The environment GitHub gives a job's steps: the workflow's env, then the job's, with ${{ x.y }} filled."""
    return {key: fill(value, contexts) for key, value in {**flow["env"], **flow["jobs"][job].get("env", {})}.items()}


def pytest_argvs(script: str, env: dict[str, str], github_env: Path) -> list[list[str]]:
    """Run a step's script in bash as GitHub would (bash -eo pipefail), with `pytest` standing in for a function
    that records its arguments exactly as the shell passed them; lines writing to $GITHUB_ENV run for real."""
    calls = github_env.parent / "calls"
    calls.unlink(missing_ok=True)
    stub = 'pytest() { printf "%s\\0" "$@" >> "$SYS1CAL_CALLS"; printf "\\n" >> "$SYS1CAL_CALLS"; }\n'
    full_env = {"PATH": os.environ["PATH"], **env, "GITHUB_ENV": str(github_env), "SYS1CAL_CALLS": str(calls)}
    subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", stub + script], env=full_env, check=True)
    if not calls.exists():
        return []
    return [[arg for arg in line.split("\0") if arg] for line in calls.read_text().split("\0\n") if line]


def github_env_values(github_env: Path) -> dict[str, str]:
    if not github_env.exists():
        return {}
    return dict(line.split("=", 1) for line in github_env.read_text().splitlines() if line)


def step_commands(
    flow: dict[str, Any], job: str, env: dict[str, str], tmp: Path, contexts: dict[str, dict[str, str]] | None = None
) -> list[tuple[str, list[str]]]:
    """(step name, argv) of every pytest call of a job, every step run (conditions aside), in order, each in its
    job's environment plus its own step's `env` (filled from `contexts`); steps that only set $GITHUB_ENV for
    later ones run too."""
    github_env, out = tmp / f"github_env_{job}", []
    github_env.unlink(missing_ok=True)
    for step in flow["jobs"][job]["steps"]:
        run = step.get("run", "")
        if ("pytest " in run or "GITHUB_ENV" in run) and "pip install" not in run:
            own = {key: fill(value, contexts or CONTEXTS) for key, value in (step.get("env") or {}).items()}
            out += [
                (step["name"], argv)
                for argv in pytest_argvs(step["run"], {**env, **own, **github_env_values(github_env)}, github_env)
            ]
    return out


def check_workflow_commands(pytester: pytest.Pytester, flow: dict[str, Any], tmp: Path) -> int:
    """Parse every pytest command of the workflow with pytest's parser and the plugin's options; return how many."""
    count = 0
    for job in flow["jobs"]:
        for _name, argv in step_commands(flow, job, job_env(flow, job, CONTEXTS), tmp):
            assert argv[0] == "--sys1cal"
            config = pytester.parseconfig(*argv)  # raises pytest.UsageError on an unknown flag or a bad value
            # The model and the version gated are the ini's (one place for local runs and CI); only a recording
            # names the version it records.
            assert config.getoption("sys1cal_model") is None
            assert (config.getoption("sys1cal_model_version") is None) == (job == "replay")
            count += 1
    return count


def test_every_pytest_command_in_the_workflow_is_one_the_plugin_accepts(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    init(tmp_path)
    flow = workflow(tmp_path)
    assert check_workflow_commands(pytester, flow, tmp_path) == 2  # replay and record: one pytest call each
    replay = step_commands(flow, "replay", job_env(flow, "replay", CONTEXTS), tmp_path)
    main = pytester.parseconfig(*replay[-1][1])
    assert main.getoption("xmlpath") == "sys1cal-junit.xml"
    assert (main.getoption("sys1cal_report"), main.getoption("sys1cal_html")) == (
        "sys1cal-report.json",
        "sys1cal-report.html",
    )
    assert main.getoption("sys1cal_markdown") == "sys1cal-comment.markdown"
    assert main.getoption("sys1cal_baseline") is None  # BASELINE_VERSION is empty until there are two versions
    flow["env"]["BASELINE_VERSION"] = "jev-1.13.0"  # what a user sets when gating a new version
    compared = step_commands(flow, "replay", job_env(flow, "replay", CONTEXTS), tmp_path)[-1][1]
    assert pytester.parseconfig(*compared).getoption("sys1cal_baseline") == "jev-1.13.0"
    record = step_commands(flow, "record", job_env(flow, "record", CONTEXTS), tmp_path)[-1][1]
    recorded = pytester.parseconfig(*record)
    assert (recorded.getoption("sys1cal_record_mode"), recorded.getoption("sys1cal_max_cost")) == ("once", 5.0)
    assert recorded.getoption("sys1cal_model_version") == "jev-1.14.0"


@pytest.mark.parametrize(
    ("typo", "fixed"),
    [("--sys1cal-reprot=", "--sys1cal-report="), ("--sys1cal-record-mode=onse", "--sys1cal-record-mode=once")],
)
def test_a_typo_in_a_workflow_command_is_caught(
    pytester: pytest.Pytester, tmp_path: Path, typo: str, fixed: str
) -> None:
    init(tmp_path)
    text = (tmp_path / WORKFLOW).read_text(encoding="utf-8")
    assert fixed in text
    broken = yaml.safe_load(text.replace(fixed, typo, 1))
    with pytest.raises(pytest.UsageError, match=re.escape(typo.split("=")[0])):
        check_workflow_commands(pytester, broken, tmp_path)


@pytest.fixture(scope="module")
def matplotlib_loaded() -> None:
    """The workflow writes the HTML report. pytester's in-process runs drop the modules first imported inside
    them (and matplotlib cannot be imported twice): load the figure stack once, before the nested runs."""
    pytest.importorskip("matplotlib", reason="the workflow's HTML report needs the html extra")
    import pytest_sys1cal.report.figures_groups  # noqa: F401


def run_steps(
    pytester: pytest.Pytester,
    flow: dict[str, Any],
    job: str,
    contexts: dict[str, dict[str, str]],
    *extra: str,
    environ: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run a job's pytest commands for real, as printed (plus `extra`), in the environment GitHub gives each step
    (the workflow's, the job's and the step's own env, filled from `contexts`, plus `environ`); the result of each
    step."""
    results = {}
    env = {**job_env(flow, job, contexts), **(environ or {})}
    steps = {step.get("name"): step for step in flow["jobs"][job]["steps"]}
    for name, argv in step_commands(flow, job, env, pytester.path, contexts):
        own = {key: fill(value, contexts) for key, value in (steps[name].get("env") or {}).items()}
        with pytest.MonkeyPatch.context() as patch:
            for key, value in {**env, **own}.items():
                patch.setenv(key, value)
            results[name] = run(pytester, *argv, *extra)
    return results


def add_ini_snippet(pytester: pytest.Pytester, version: str = "jev-1.13.0", *extra: str) -> None:
    """The [tool.pytest.ini_options] snippet init prints (for `version`), added to pyproject.toml as a user does."""
    snippet = ini_snippet(Project(model="jev", version=version, plugin_version=__version__))
    pytester.makepyprojecttoml("\n".join([snippet.rstrip("\n"), *extra]) + "\n")


@pytest.mark.usefixtures("matplotlib_loaded")
def test_the_replay_job_runs_as_printed(pytester: pytest.Pytester) -> None:
    assert init(pytester.path).returncode == 0
    add_ini_snippet(pytester)
    shutil.copytree(JEV, pytester.path / "cassettes" / "jev" / "jev-1.13.0")
    flow = workflow(pytester.path)
    result = run_steps(pytester, flow, "replay", CONTEXTS)["Replay and gate"]
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    for name in ("sys1cal-junit.xml", "sys1cal-report.json", "sys1cal-report.html", "sys1cal-comment.markdown"):
        assert (pytester.path / name).is_file(), name
    report = json.loads((pytester.path / "sys1cal-report.json").read_text())
    assert report["model"]["version"] == "jev-1.13.0"  # read from the ini snippet: the one place that says it
    assert all(g["verdict"] == "passed" for g in report["gates"]) and "comparison" not in report
    comment = (pytester.path / "sys1cal-comment.markdown").read_text()
    assert comment.startswith(f"{MARKER}\n### ✅ Sys1Cal calibration: jev jev-1.13.0 — every gate in force passed")


@pytest.mark.usefixtures("matplotlib_loaded")
def test_the_replay_job_runs_the_upgrade_gate_when_the_version_moved(pytester: pytest.Pytester) -> None:
    assert init(pytester.path).returncode == 0
    add_ini_snippet(pytester, "jev-1.14.0")  # what a user edits once the new recording is committed ...
    shutil.copytree(JEV, pytester.path / "cassettes" / "jev" / "jev-1.13.0")
    degrade(JEV, pytester.path / "cassettes", "jev-1.14.0")
    flow = workflow(pytester.path)
    flow["env"]["BASELINE_VERSION"] = "jev-1.13.0"  # ... with the version it replaces, in the same pull request
    results = run_steps(pytester, flow, "replay", CONTEXTS)
    moved = results["Replay and gate"]
    assert moved.ret == pytest.ExitCode.TESTS_FAILED
    gates = {g["name"]: g["verdict"] for g in json.loads((pytester.path / "sys1cal-report.json").read_text())["gates"]}
    assert gates["regression.noul.mean_ovl"] == "FAILED" and gates["noul.min_mean_ovl"] == "FAILED"
    comment = (pytester.path / "sys1cal-comment.markdown").read_text()
    assert comment.startswith(f"{MARKER}\n### ❌ Sys1Cal upgrade jev-1.13.0 → jev-1.14.0, 10-call mean: FAILED\n")


@pytest.mark.usefixtures("matplotlib_loaded")
def test_the_record_job_runs_as_printed_against_a_jev_wire_server(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert init(pytester.path).returncode == 0
    shutil.copytree(JEV, pytester.path / "cassettes" / "jev" / "jev-1.13.0")
    add_ini_snippet(pytester, "jev-1.13.0", 'sys1cal_rate = "0"')  # the mock needs no rate limit
    monkeypatch.setattr(jevcompat, "ACCEPTED_MODELS", jevcompat.ACCEPTED_MODELS | {"jev-1.14.0"})
    flow = workflow(pytester.path)
    flow["env"]["BASELINE_VERSION"] = "jev-1.13.0"  # the version run today: the recording is compared with it
    with jevcompat_mock(jevcompat.MockConfig()) as mock:
        contexts = {**CONTEXTS, "secrets": {"TYPESAFE_API_KEY": "sk-test"}}
        # One family (35 renderings, 350 requests) rather than 3,650 requests: the commands are the same.
        results = run_steps(
            pytester,
            flow,
            "record",
            contexts,
            "-k",
            "bayes and not sequential",
            environ={"TYPESAFE_BASE_URL": mock.url},
        )
    recorded = results["Record, then gate"]
    recorded.stdout.fnmatch_lines(["*recording 35 of 35 renderings*", "Upgrade comparison against the baseline*"])
    # The mock's answers are not probabilities of anything: the upgrade gate fails, the cassettes are there to upload.
    assert recorded.ret == pytest.ExitCode.TESTS_FAILED, recorded.stdout.str()[-2000:]
    assert "regression.noul.mean_ovl" in recorded.stdout.str()
    folder = pytester.path / "cassettes" / "jev" / "jev-1.14.0"
    assert len(list(folder.glob("*/*.json"))) == 35 and (folder / "manifest.json").is_file()
    for name in ("sys1cal-junit.xml", "sys1cal-report.json", "sys1cal-report.html"):
        assert (pytester.path / name).is_file(), name
    upload = next(s for s in flow["jobs"]["record"]["steps"] if s.get("name") == "Upload the cassettes")
    pattern = upload["with"]["path"].replace("${{ env.VERSION }}", "jev-1.14.0")
    assert [p.relative_to(pytester.path) for p in pytester.path.glob(pattern)] == [Path("cassettes/jev/jev-1.14.0")]
    assert "sk-test" not in "".join(p.read_text() for p in folder.rglob("*.json"))
