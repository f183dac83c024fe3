"""The files `python -m pytest_sys1cal init` writes into a project, as text: a starter thresholds.yaml, a GitHub
Actions workflow that replays on every push and pull request and records only when asked, and .gitattributes
lines for the cassettes; and the ini snippet and next steps it prints. What each file is for: docs/setup.md."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..bundled import REFERENCE_MODEL, model_section, preamble, shipped_thresholds
from ..report.pr_comment import MARKER

WORKFLOW = ".github/workflows/sys1cal.yml"
# Reports each CI run writes, uploaded as artifacts (the job summary links the HTML one; the comment job posts
# the Markdown one on the pull request).
JUNIT, REPORT, HTML = "sys1cal-junit.xml", "sys1cal-report.json", "sys1cal-report.html"
COMMENT = "sys1cal-comment.markdown"
# Every action the workflows use, pinned by commit (a moved tag cannot change what runs), the tag in a comment. The
# commits of these tags were cross-checked against several public workflows pinning them (docs/setup.md says how
# to verify them). The templates name the tag; pin_actions writes the commit.
ACTIONS = {
    "actions/checkout@v5": ("08c6903cd8c0fde910a37f88322edcfb5dd907a8", "v5.0.0"),
    "actions/setup-python@v6": ("e797f83bcb11b83ae66e0230d6156d7c80228e7c", "v6.0.0"),
    "actions/upload-artifact@v6": ("b7c566a772e6b6bfb58ed0dc250532a479d7789f", "v6.0.0"),
    "actions/download-artifact@v7": ("37930b1c2abaa49bbe596cd826c3c89aef350131", "v7.0.0"),
}
ENVIRONMENT = "sys1cal-record"  # the GitHub environment the record job runs in: its secret, its reviewers, its branch
MAX_COST_CEILING = 20  # dollars: the workflow refuses a larger max_cost input
# The step that stops a job whose project has not set the gated version (the ini snippet init prints): without
# it `pytest --sys1cal` would replay the bundled jev reference and gate nothing of the project's.
CHECK_INI = """\
      - name: Check that the project names the version it gates
        run: |
          if ! grep -Eqs '^[[:space:]]*sys1cal_model_version[[:space:]]*=' pyproject.toml pytest.ini tox.ini setup.cfg; then
            echo "::error::no sys1cal_model_version in pyproject.toml, pytest.ini, tox.ini or setup.cfg: add the snippet that init printed"
            exit 1
          fi"""


@dataclass(frozen=True)
class Project:
    """What the files depend on: the model and version the project gates, how its adapter is reached."""

    model: str
    version: str
    plugin_version: str
    model_id: str | None = None  # the id the server answers as, when it is not the version (--model-id)
    key_env: str | None = None  # the environment variable the adapter reads the API key from
    key_required: bool = False  # recording without the key is refused (jev)
    base_url_env: str | None = None  # set in CI when the adapter's default server is on the local machine
    local_server: bool = False
    shards: int = 0  # init --shards N: the recording as a matrix of N shards and a merge (workflow_shards.py)

    @property
    def is_reference(self) -> bool:
        return self.model == REFERENCE_MODEL


def files(project: Project) -> dict[str, str]:
    """Path (relative to the project) → text, in the order they are written and listed."""
    return {"thresholds.yaml": thresholds_file(project), WORKFLOW: workflow(project), ".gitattributes": GITATTRIBUTES}


def thresholds_file(project: Project) -> str:
    """For jev, the section pytest-sys1cal ships (tuned on the bundled reference); for any other model, that
    model's section only, empty until `thresholds --update` writes its gates from a run of the version the team
    trusts: never another model's floors (docs/setup.md)."""
    head = [
        "thresholds.yaml of this project, read by pytest-sys1cal (written by `python -m pytest_sys1cal init`).",
        "A mistake in it stops every run with the file, line and fix. The schema: `python -m pytest_sys1cal docs "
        "thresholds`;",
        "how gates are written and kept up to date: `python -m pytest_sys1cal docs setup`.",
        "",
    ]
    write = f"python -m pytest_sys1cal thresholds {REPORT} --update"
    if project.is_reference:
        shipped = shipped_thresholds()
        head += [
            "The jev section below is the one pytest-sys1cal ships, tuned on the bundled reference cassettes",
            "(jev-1.13.0, reconstructed from the Sys1Cal-v1 paper's per-item outputs); its gates apply to every jev",
            "version without a block of its own. When you record a new version, give it a block of its own, computed",
            "from the report of a full run by the same rule (rewritten in place, with the change printed as a diff):",
            f"  pytest --sys1cal --sys1cal-model-version=NEW --sys1cal-report={REPORT}",
            f"  {write} --version",
        ]
        header = "".join(f"# {line}\n" if line else "#\n" for line in head)
        return f"{header}#\n{preamble(shipped)}{model_section(shipped, REFERENCE_MODEL)}"
    header = "".join(f"# {line}\n" if line else "#\n" for line in head[:-1])
    return f"{header}\n{no_gates_yet(project.model, project.version, project.model_id)}"


def no_gates_yet(model: str, version: str, model_id: str | None = None) -> str:
    """A model's section with no gates yet but its reading (per call: a team's own recording keeps every call),
    under a comment saying how to write them; `thresholds --update` replaces the comment with the gates' own
    header (thresholds_update.GENERATED_MARK is in it) and keeps the reading."""
    sent = f" --sys1cal-model-id={model_id}" if model_id else ""
    record = (
        f"pytest --sys1cal --sys1cal-model={model} --sys1cal-model-version={version}{sent} --sys1cal-record-mode=once "
        f"--sys1cal-report={REPORT}"
    )
    lines = [
        f"{model}: no gates yet, so a run of it says so and gates nothing. Write them from a full run of the version",
        f"you trust ({version}), recorded with its report:",
        f"  {record}",
        f"  python -m pytest_sys1cal thresholds {REPORT} --update",
        f"They then hold every version of {model} without a block of its own, and --sys1cal-baseline={version}",
        "compares a later version with it, rendering by rendering.",
    ]
    reading = (
        "  # The gates read each answer per call, what one request to your service gets; `mean` would read each\n"
        "  # rendering's mean over its calls, the paper's protocol (python -m pytest_sys1cal docs thresholds).\n"
        "  reading: call\n"
    )
    return "".join(f"# {line}\n" for line in lines) + f"{model}:\n{reading}"


def workflow(project: Project) -> str:
    """The GitHub Actions workflow, with the project's secrets and example version filled in (the model and the
    version gated are the ini snippet's, ini_snippet; no baseline until the project has a second version)."""
    record_env = record_env_lines(project, indent="          ")
    env = ["        env:", *record_env] if record_env else []
    text = (
        WORKFLOW_TEMPLATE.replace("@BASELINE@", json.dumps(""))
        .replace("@CEILING@", str(MAX_COST_CEILING))
        .replace("@INSTALL@", json.dumps(install_source(project.plugin_version)))
        .replace("@RECORD_ENV@\n", "".join(line + "\n" for line in env))
        .replace("@EXAMPLE@", "jev-1.14.0" if project.is_reference else f"{project.model}-2")
    )
    return pin_actions(text)  # init --shards replaces its record job (workflow_shards.py)


def pin_actions(text: str) -> str:
    """Each `uses: <action>@<tag>` of ACTIONS as `uses: <action>@<commit>  # <tag>`; an action not in ACTIONS
    stops here, so that no workflow is written with a tag alone."""
    out = []
    for line in text.splitlines(keepends=True):
        head, found, ref = line.partition("uses: ")
        if found and not head.lstrip().startswith("#"):
            action = ref.strip()
            commit, tag = ACTIONS[action]
            line = f"{head}uses: {action.split('@')[0]}@{commit}  # {tag}\n"
        out.append(line)
    return "".join(out)


def record_env_lines(project: Project, indent: str) -> list[str]:
    """The recording step's environment: the key (a secret) and, for a server on the local machine by default,
    the sys1cal-record environment's variable that says where the server is."""
    lines = [f"{indent}{project.key_env}: ${{{{ secrets.{project.key_env} }}}}"] if project.key_env else []
    if project.local_server and project.base_url_env:
        lines += [
            f"{indent}# {project.model}'s default server is on the local machine: set the variable {project.base_url_env}",
            f"{indent}# of the environment sys1cal-record to the origin of the server to record from.",
            f"{indent}{project.base_url_env}: ${{{{ vars.{project.base_url_env} }}}}",
        ]
    return lines


def install_source(plugin_version: str) -> str:
    """The pip requirement CI installs the plugin from: the URL this installation came from when pip recorded one
    that CI can reach too (a wheel over https, a git repository at its commit; PEP 610's direct_url.json), else
    the package name pinned to this version."""
    import importlib.metadata

    pinned = f"pytest-sys1cal[html]=={plugin_version}"
    try:
        recorded = importlib.metadata.distribution("pytest-sys1cal").read_text("direct_url.json")
        origin = json.loads(recorded) if recorded else {}
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return pinned
    url = origin.get("url") if isinstance(origin, dict) else None
    if not isinstance(url, str) or not url.startswith("https://"):
        return pinned  # installed from this machine's disk (or an editable checkout): nothing CI could fetch
    vcs = origin.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") == "git" and isinstance(vcs.get("commit_id"), str):
        return f"pytest-sys1cal[html] @ git+{url}@{vcs['commit_id']}"
    if "archive_info" in origin and url.endswith(".whl"):
        return f"pytest-sys1cal[html] @ {url}"
    return pinned


def ini_snippet(project: Project) -> str:
    sent = f"sys1cal_model_id = {json.dumps(project.model_id)}\n" if project.model_id else ""
    return (
        "[tool.pytest.ini_options]\n"
        f"sys1cal_model = {json.dumps(project.model)}\n"
        f"sys1cal_model_version = {json.dumps(project.version)}\n"
        f"{sent}"
    )


def next_steps(project: Project) -> list[str]:
    """What to do after init, in order, each step a command or a place to click."""
    needs = [f"{project.key_env} set"] if project.key_env and project.key_required else []
    needs += [f"{project.base_url_env} set to your server's origin"] if project.local_server else []
    key = f" (with {' and '.join(needs)})" if needs else ""
    secret = (
        f"to record in CI, create the environment {ENVIRONMENT} (Settings → Environments), limit its deployment "
        f"branches to the default branch, and add the environment secret {project.key_env}"
        f"{'' if project.key_required else ' if the server needs a key'}"
        + (
            f" and the environment variable {project.base_url_env}, your server's origin"
            if project.local_server
            else ""
        )
        + "; the workflow's record job reads them from there alone"
    )
    dispatch = (
        "Actions → sys1cal → Run workflow (version, dollar cap) records a version; unzip its cassettes artifact "
        f"into cassettes/{project.model}/<version>/ and commit it"
    )
    if project.shards:
        dispatch = (
            f"Actions → sys1cal → Run workflow (version, dollar cap) records a version on {project.shards} machines "
            "at once, then merges and gates it; re-run a failed shard alone (Re-run failed jobs: it resumes). Unzip "
            f"the merge job's cassettes artifact into cassettes/{project.model}/<version>/ and commit it"
        )
    if project.is_reference:
        return [
            "pytest --sys1cal    replays the bundled reference offline and gates it (no key, no network)",
            f"commit thresholds.yaml, {WORKFLOW} and .gitattributes: CI replays on every push and pull request",
            secret,
            f"{dispatch}, then, in one pull request, set sys1cal_model_version to it in pyproject.toml and "
            f"BASELINE_VERSION in {WORKFLOW} to the version it replaces: the pull request shows the upgrade verdict",
            f"gates for that version, from its {REPORT} (in the record job's sys1cal-reports artifact), written "
            f"into thresholds.yaml in place (the change printed as a diff): "
            f"python -m pytest_sys1cal thresholds {REPORT} --version --update",
        ]
    return [
        f"record {project.version}{key}: pytest --sys1cal --sys1cal-record-mode=once --sys1cal-max-cost=5 "
        f"--sys1cal-report={REPORT}, then commit cassettes/{project.model}/{project.version}/ (or record in CI: 4.)",
        f"commit thresholds.yaml, {WORKFLOW} and .gitattributes: CI replays {project.version} on every push and "
        "pull request (and fails, saying so, until its cassettes are committed)",
        f"gates for it, written into thresholds.yaml in place (the change printed as a diff): "
        f"python -m pytest_sys1cal thresholds {REPORT} --update",
        secret,
        dispatch,
    ]


GITATTRIBUTES = """\
# pytest-sys1cal: cassettes are model traffic written by the plugin. GitHub collapses them in pull requests and
# leaves them out of the language statistics, and `git diff` does not print them. The manifests stay readable and
# diffable, so a pull request shows what was recorded (the model and server, the repeats, the questions).
cassettes/** linguist-generated=true -diff
cassettes/**/manifest.json linguist-generated=false diff
"""


def merged_gitattributes(existing: str | None) -> str | None:
    """The text of .gitattributes with init's lines: the whole file when there is none, else the existing text
    with the attribute lines it lacks added at the end (after the comment); None when it has them all."""
    if existing is None:
        return GITATTRIBUTES
    have = {" ".join(line.split()) for line in existing.splitlines()}
    wanted = [line for line in GITATTRIBUTES.splitlines() if line and not line.startswith("#")]
    missing = [line for line in wanted if " ".join(line.split()) not in have]
    if not missing:
        return None
    comments = [line for line in GITATTRIBUTES.splitlines() if line.startswith("#")]
    gap = "" if not existing or existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
    return existing + gap + "\n".join([*comments, *missing]) + "\n"


WORKFLOW_TEMPLATE = (
    """\
# pytest-sys1cal (written by `python -m pytest_sys1cal init`): replay the committed cassettes offline on every
# push and pull request and gate them against thresholds.yaml; record a new model version only when asked
# (Actions → sys1cal → Run workflow), behind the GitHub environment sys1cal-record, with a dollar cap.
# The model and the version gated are read from [tool.pytest.ini_options] (sys1cal_model, sys1cal_model_version,
# and sys1cal_model_id where the server's id is not the version; the snippet init printed): the one place that
# says it, for local runs and CI alike. A replay sends the id each version folder's manifest was recorded under.
# Every run appends its gates and tables to the job summary and uploads its reports as artifacts.
# What each part is for: docs/setup.md of pytest-sys1cal.
name: sys1cal

on:
  # Every push and every pull request. To replay a pull request's branch once rather than twice, limit push
  # to your default branch (push: branches: [main]).
  push:
  pull_request:
  workflow_dispatch:
    inputs:
      version:
        description: "Model version to record into a new cassette folder (a plain name, e.g. @EXAMPLE@)"
        required: true
        type: string
      max_cost:
        description: "Dollar cap: the recording refuses to start, or stops, before spending more (at most MAX_COST_CEILING)"
        required: true
        default: "5"
        type: string
      model_id:
        description: "Model id to send, when it is not sys1cal_model_id in the ini (e.g. prod); empty: the ini's, else the version"
        required: false
        default: ""
        type: string

permissions:
  contents: read

defaults:
  run:
    shell: bash

env:
  # The version the upgrade gate compares the gated version with (--sys1cal-baseline): the one you run today.
  # Its cassettes must be committed too (or be the bundled reference jev-1.13.0); it must differ from
  # sys1cal_model_version. Empty: no upgrade gate. When you adopt a new version, change both in one pull request.
  BASELINE_VERSION: @BASELINE@
  # The largest max_cost a recording may be given, in dollars: a larger one is refused before anything runs.
  MAX_COST_CEILING: "@CEILING@"
  # Where pytest-sys1cal is installed from, as one pip requirement: the package name pinned once it is published,
  # a wheel URL ("pytest-sys1cal[html] @ https://…/pytest_sys1cal-X-py3-none-any.whl") or a git URL pinned to a
  # commit ("pytest-sys1cal[html] @ git+https://…/pytest-sys1cal@<commit>"). Pinned: another plugin version may
  # compute the tables differently; upgrade on purpose.
  SYS1CAL_INSTALL: @INSTALL@

jobs:
  replay:
    if: github.event_name != 'workflow_dispatch'
    runs-on: ubuntu-latest
    # A replay is offline and takes about a minute; a job still running after this is stuck.
    timeout-minutes: 30
    # A newer push to the same branch (or pull request) cancels the replay still running for the older one.
    concurrency:
      group: sys1cal-replay-${{ github.event_name }}-${{ github.event.pull_request.number || github.ref }}
      cancel-in-progress: true
    steps:
      - uses: actions/checkout@v5
        with:
          persist-credentials: false
      - uses: actions/setup-python@v6
        with:
          python-version: "3.12"
          cache: pip
          # Keyed on this file, which holds SYS1CAL_INSTALL: a new pin starts a new cache.
          cache-dependency-path: .github/workflows/sys1cal.yml
      - name: Install pytest-sys1cal
        run: python -m pip install "$SYS1CAL_INSTALL"
      # If your root conftest.py imports your own package, install it too (uncomment):
      # - name: Install this project
      #   run: python -m pip install -e .
@CHECK_INI@
      # The baseline version, when set, is replayed offline inside the same run (--sys1cal-baseline=VERSION).
      - name: Replay and gate
        run: |
          args=(--sys1cal --junitxml=@JUNIT@ --sys1cal-report=@REPORT@ --sys1cal-html=@HTML@ --sys1cal-markdown=@COMMENT@)
          if [[ -n "$BASELINE_VERSION" ]]; then
            args+=("--sys1cal-baseline=$BASELINE_VERSION")
          fi
          pytest "${args[@]}"
      - name: Upload the reports
        if: ${{ !cancelled() }}
        uses: actions/upload-artifact@v6
        with:
          name: sys1cal-reports
          path: |
            @JUNIT@
            @REPORT@
            @HTML@
            @COMMENT@
          if-no-files-found: ignore

  # Opt in: set the repository variable SYS1CAL_PR_COMMENT to true (Settings → Secrets and variables → Actions →
  # Variables) and every pull request gets one comment with the verdict, edited in place on each push. Only this
  # job may write, and only to pull requests; a pull request from a fork gets none (its token cannot write).
  comment:
    needs: replay
    if: ${{ !cancelled() && github.event_name == 'pull_request' && vars.SYS1CAL_PR_COMMENT == 'true' && github.event.pull_request.head.repo.full_name == github.repository }}
    runs-on: ubuntu-latest
    timeout-minutes: 5
    permissions:
      pull-requests: write
    concurrency:
      group: sys1cal-comment-${{ github.event.pull_request.number }}
      cancel-in-progress: true
    steps:
      - uses: actions/download-artifact@v7
        with:
          name: sys1cal-reports
      - name: Post the verdict, or update the comment posted before
        env:
          GH_TOKEN: ${{ github.token }}
          REPOSITORY: ${{ github.repository }}
          PULL_REQUEST: ${{ github.event.pull_request.number }}
          MARKER: "@MARKER@"
        run: |
          if [[ ! -s @COMMENT@ ]]; then
            echo "::warning::the replay wrote no @COMMENT@, so there is no verdict to post"
            exit 0
          fi
          # The earlier comment is the one this job wrote (github-actions[bot]) that starts with the hidden marker.
          previous=$(gh api --paginate "repos/$REPOSITORY/issues/$PULL_REQUEST/comments" \\
            --jq '.[] | select(.user.login == "github-actions[bot]" and (.body | startswith(env.MARKER))) | .id' | sed -n 1p)
          if [[ -n "$previous" ]]; then
            gh api --method PATCH "repos/$REPOSITORY/issues/comments/$previous" -F body=@@COMMENT@ > /dev/null
          else
            gh api --method POST "repos/$REPOSITORY/issues/$PULL_REQUEST/comments" -F body=@@COMMENT@ > /dev/null
          fi

  record:
    if: github.event_name == 'workflow_dispatch'
    runs-on: ubuntu-latest
    # Long enough for a full recording at Jev's default pace (3,650 requests at 1,000/min, under 4 minutes) with
    # retries and a slow local server; an interrupted recording resumes where it stopped. Raise it for a slower one.
    timeout-minutes: 120
    # Settings → Environments → sys1cal-record: add required reviewers to approve each recording before it runs,
    # limit its deployment branches to the default branch, and keep the API key as that environment's secret,
    # where no other job can read it (docs/setup.md, "The recording environment").
    environment: sys1cal-record
    # One recording of a version at a time: a second one would pay for the same requests.
    concurrency:
      group: sys1cal-record-${{ inputs.version }}
    env:
      VERSION: ${{ inputs.version }}
      MAX_COST: ${{ inputs.max_cost }}
      MODEL_ID: ${{ inputs.model_id }}
    steps:
      # The inputs are checked before they are used: the version must be a plain name (it names a folder), the
      # cap a number of dollars no larger than MAX_COST_CEILING.
      - name: Check the inputs
        id: inputs
        run: |
          if [[ ! "$VERSION" =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$ ]]; then
            echo "::error::the version input must be a plain name: letters, digits, '.', '_' and '-', starting with a letter or digit"
            exit 1
          fi
          if [[ ! "$MAX_COST" =~ ^[0-9]+([.][0-9]+)?$ ]]; then
            echo "::error::the max_cost input must be a number of dollars, such as 5 or 2.50"
            exit 1
          fi
          if ! awk -v cost="$MAX_COST" -v ceiling="$MAX_COST_CEILING" 'BEGIN { exit !(cost + 0 <= ceiling + 0) }'; then
            echo "::error::max_cost $MAX_COST is above MAX_COST_CEILING ($MAX_COST_CEILING dollars), set in the workflow"
            exit 1
          fi
          if [[ -n "$MODEL_ID" && ! "$MODEL_ID" =~ ^[A-Za-z0-9][A-Za-z0-9._+:/@-]{0,199}$ ]]; then
            echo "::error::the model_id input must be a model id: letters, digits and . _ + : / @ -, starting with a letter or digit"
            exit 1
          fi
      - uses: actions/checkout@v5
        with:
          persist-credentials: false
      - uses: actions/setup-python@v6
        with:
          python-version: "3.12"
          cache: pip
          cache-dependency-path: .github/workflows/sys1cal.yml
      - name: Install pytest-sys1cal
        run: python -m pip install "$SYS1CAL_INSTALL"
      # If your root conftest.py imports your own package, install it too (uncomment):
      # - name: Install this project
      #   run: python -m pip install -e .
@CHECK_INI@
      # Records what has no cassette yet (an interrupted recording resumes where it stopped), then analyses
      # and gates the new version like a replay. The key is given to this step alone.
      - name: Record, then gate
@RECORD_ENV@
        run: |
          args=(--sys1cal "--sys1cal-model-version=$VERSION" --sys1cal-record-mode=once "--sys1cal-max-cost=$MAX_COST" --junitxml=@JUNIT@ --sys1cal-report=@REPORT@ --sys1cal-html=@HTML@)
          if [[ -n "$MODEL_ID" ]]; then
            args+=("--sys1cal-model-id=$MODEL_ID")
          fi
          if [[ -n "$BASELINE_VERSION" && "$BASELINE_VERSION" != "$VERSION" ]]; then
            args+=("--sys1cal-baseline=$BASELINE_VERSION")
          fi
          pytest "${args[@]}"
      # The cassettes are uploaded, not committed: review them, unzip them into cassettes/<model>/<version>/
      # and commit them yourself (this job needs no write access). Uploaded even when a gate failed: they
      # were paid for. Artifacts expire (90 days by default).
      - name: Upload the cassettes
        if: ${{ !cancelled() && steps.inputs.outcome == 'success' }}
        uses: actions/upload-artifact@v6
        with:
          name: sys1cal-cassettes-${{ env.VERSION }}
          path: cassettes/*/${{ env.VERSION }}/
          if-no-files-found: warn
      - name: Upload the reports
        if: ${{ !cancelled() && steps.inputs.outcome == 'success' }}
        uses: actions/upload-artifact@v6
        with:
          name: sys1cal-reports
          path: |
            @JUNIT@
            @REPORT@
            @HTML@
          if-no-files-found: ignore
""".replace("@JUNIT@", JUNIT)
    .replace("@REPORT@", REPORT)
    .replace("@HTML@", HTML)
    .replace("@COMMENT@", COMMENT)
    .replace("@MARKER@", MARKER)
    .replace("@CHECK_INI@", CHECK_INI)
)
