"""The package as users install it (issue 18): the wheel and the sdist built from this checkout, the wheel
installed into a fresh virtualenv, and the README's "In a project, step by step" commands run as written in
an empty directory: the main job replays the bundled reference (exit 0, Table 1's 0.918 / 0.764 / 0.886),
`init` sets the project up, `thresholds` reads the report the main job wrote. The wheel is built from the
sdist (`python -m build` does that), so a build proves the sdist holds what `pip install` from it needs.

Dependencies come from the package index (pip's cache makes it quick: about 40 s in all here)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest
import yaml

from tests.loopback import jevcompat_mock
from tests.runs import REPO

# Builds the wheel and installs it in a fresh virtualenv.
pytestmark = pytest.mark.e2e

INSTALL = 'pip install "pytest-sys1cal[html]"'


def steps(heading: str = "### Jev's own upgrades") -> list[str]:
    """The commands of the first bash block under `heading` in the README's step-by-step section (the own-model
    path leads it; Jev's own upgrades follow), comments dropped."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## In a project, step by step", 1)[1].split("\n## ", 1)[0]
    if heading != "## In a project, step by step":
        section = section.split(heading, 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, f"{heading} must hold a bash block"
    return [line.split(" #")[0].strip() for line in block.group(1).splitlines() if line.split(" #")[0].strip()]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], check=True, capture_output=True)
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module")
def installed(built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv holding the built wheel (and what it depends on, from the index); its bin folder."""
    env = tmp_path_factory.mktemp("venv")
    venv.create(env, with_pip=True)
    wheel = built[0]
    pip = [str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", f"{wheel}[html]"]
    done = subprocess.run(pip, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return env / "bin"


def test_the_readme_steps_work_as_written_in_an_empty_project(installed: Path, tmp_path: Path) -> None:
    commands = steps()
    assert commands[0] == INSTALL  # the install line is the built wheel's, here
    environ = {
        **os.environ,
        "PATH": f"{installed}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(installed.parent),
    }
    environ.pop("PYTHONPATH", None)
    outputs = {}
    for command in commands[1:]:
        done = subprocess.run(shlex.split(command), cwd=tmp_path, env=environ, capture_output=True, text=True)
        assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
        outputs[command] = done.stdout
    main_job = next(out for command, out in outputs.items() if command.startswith("pytest --sys1cal"))
    assert "bundled reference cassettes" in main_job and str(tmp_path) not in main_job.split("cassettes ")[1][:40]
    table1: dict[str, list[str]] = {}  # Table 1 comes first; later tables have rows named alike
    for line in main_job.splitlines():
        if re.match(r"(Noul|Choice|Score) +365 ", line):
            table1.setdefault(line.split()[0], line.split())
    assert [table1[p][3] for p in ("Noul", "Choice", "Score")] == ["0.918", "0.764", "0.886"]
    assert "19 passed" in main_job  # the shipped gates of the reference set, every one in force
    assert {p.name for p in tmp_path.iterdir()} >= {"thresholds.yaml", ".github", ".gitattributes"}
    assert not (tmp_path / "cassettes").exists()  # the reference was replayed in place, never copied or written
    section = next(out for command, out in outputs.items() if "pytest_sys1cal thresholds" in command)
    assert yaml.safe_load(section)["jev"]["noul"]["min_mean_ovl"] == 0.9


def test_the_package_is_imported_from_the_wheel_not_the_checkout(installed: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(installed / "python"), "-c", "import pytest_sys1cal; print(pytest_sys1cal.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert not done.stdout.strip().startswith(str(REPO))


def test_the_wheel_carries_the_reference_set_and_the_sdist_what_the_wheel_is_built_from(
    built: tuple[Path, Path],
) -> None:
    wheel, sdist = built
    names = set(zipfile.ZipFile(wheel).namelist())
    reference = {n for n in names if n.startswith("pytest_sys1cal/_bundled/cassettes/jev/jev-1.13.0/")}
    assert len([n for n in reference if n.endswith(".json")]) == 365 + 1  # the cassettes and the manifest
    assert {"pytest_sys1cal/_bundled/sys1cal-v1.jsonl", "pytest_sys1cal/_bundled/thresholds.yaml"} <= names
    assert not any("semif" in n or "typed-gguf" in n for n in names if n.startswith("pytest_sys1cal/_bundled/"))
    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[1] for m in archive.getmembers() if "/" in m.name}
    assert {
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "thresholds.yaml",
        "cassettes/jev/jev-1.13.0/manifest.json",
    } <= members
    assert "fixtures/sys1cal-v1/v0.1.0_tiny_cleanvars_parallel_primitives.jsonl" in members
    # Every file the package cites (docs/…) travels with it.
    assert {f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")} <= members


OWN_MODEL = "## In a project, step by step"
TEAM_VERSIONS = ("my-model-1", "my-model-2")


def test_the_readmes_own_model_path_records_two_versions_of_prod_and_fails_the_noisier_one_per_call(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issues 24 and 37: the README's own-model block, run as written in an empty directory with the built wheel,
    against the jevcompat mock as a server whose one model id is `prod`, whatever version it runs: my-model-1 is
    served with logit noise σ 3, my-model-2 with σ 6, better only as a 10-call mean (its averages hedge toward
    0.5) and worse on every call. Each command runs verbatim; the one `export` line is the only one not run:
    its variable is set to the mock's origin instead. PYTEST_ADDOPTS lifts the client's rate limit (1,000
    requests/min would make the two recordings of 3,650 requests take 7 minutes); the commands are untouched.
    Every command passes but the last, whose upgrade gate FAILS per call and says so."""
    import jevcompat.mock as jevcompat

    commands = steps(OWN_MODEL)
    assert commands[0] == INSTALL
    assert [c.split("=")[0] for c in commands if c.startswith("export ")] == ["export SYS1CAL_BASE_URL"]
    assert sorted(set(re.findall(r"my-model-\d", " ".join(commands)))) == list(TEAM_VERSIONS)
    monkeypatch.setattr(
        jevcompat, "MODELS", [{"name": "prod", "description": "a team's server", "release_date": "2026-10-01"}]
    )
    monkeypatch.setattr(jevcompat, "ACCEPTED_MODELS", {"prod"})
    runs: list[tuple[str, subprocess.CompletedProcess[str]]] = []
    config = jevcompat.MockConfig(noise=3.0)
    with jevcompat_mock(config) as mock:
        environ = {
            **os.environ,
            "PATH": f"{installed}{os.pathsep}{os.environ['PATH']}",
            "VIRTUAL_ENV": str(installed.parent),
            "SYS1CAL_BASE_URL": mock.url,
            "PYTEST_ADDOPTS": "--sys1cal-rate=0",
        }
        environ.pop("PYTHONPATH", None)
        for command in commands[1:]:
            if command.startswith("export "):
                continue
            if "--sys1cal-model-version=my-model-2" in command:
                config.noise = 6.0  # the server now runs the candidate, still answering as prod
            done = subprocess.run(shlex.split(command), cwd=tmp_path, env=environ, capture_output=True, text=True)
            runs.append((command, done))
    init, first, update, replay, second = (done for _command, done in runs)
    for command, done in runs[:-1]:
        assert done.returncode == 0, f"{command}\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    assert second.returncode == 1, second.stdout[-4000:]  # the upgrade gate: worse per call
    assert 'sys1cal_model_id = "prod"' in init.stdout
    thresholds = yaml.safe_load((tmp_path / "thresholds.yaml").read_text())
    assert list(thresholds) == ["systemone"] and thresholds["systemone"]["reading"] == "call"  # no jev section
    # The first recording is told, in one line, that it has no gates and how to write them.
    told = [line for line in first.stdout.splitlines() if "no gates for systemone my-model-1 yet" in line]
    assert len(told) == 1 and told[0].endswith("python -m pytest_sys1cal thresholds sys1cal-report.json --update")
    shortcut = "  If my-model-1 is the version you trust, write its gates from this run's report: "
    assert shortcut + "python -m pytest_sys1cal thresholds my-model-1.json --update" in first.stdout.splitlines()
    assert "+  noul:" in update.stdout and "updated thresholds.yaml" in update.stderr
    assert "# Read per call:" in (tmp_path / "thresholds.yaml").read_text()
    for run, version in ((replay, "my-model-1"), (second, "my-model-2")):
        lines = run.stdout.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("sys1cal: model systemone"))
        header = " ".join(lines[start : start + 3])
        assert f"systemone {version} (" in header and "thresholds thresholds.yaml: systemone (" in header
        assert "jev" not in header.split("thresholds ", 1)[1]
    assert "FAILED" not in replay.stdout  # the replay, under the id its manifest keeps, passes every gate
    for version in TEAM_VERSIONS:
        manifest = json.loads((tmp_path / "cassettes" / "systemone" / version / "manifest.json").read_text())
        assert manifest["model_id"] == "prod"
    assert "my-model-2 has no block of its own and inherits them" in second.stdout
    verdict = next(line for line in second.stdout.splitlines() if line.startswith("upgrade "))
    assert verdict.startswith("upgrade prod (my-model-1) → prod (my-model-2), per call: FAILED (Noul Δ −"), verdict
    report = json.loads((tmp_path / "my-model-2.json").read_text())
    assert report["comparison"]["other_reading"]["verdict"] == "passed"  # as 10-call means it would have passed
    assert any(n.startswith("the two readings disagree: per call, the reading that decides") for n in report["notices"])
    names = {g["name"] for g in report["gates"]}
    assert {"noul.min_mean_ovl", "choice.max_swap_shift", "regression.noul.mean_ovl"} <= names
    assert len([n for n in names if not n.startswith("regression.")]) >= 19


def test_the_docs_travel_with_the_wheel_and_print_from_an_install(
    built: tuple[Path, Path], installed: Path, tmp_path: Path
) -> None:
    """Every page a message or a generated file cites can be read from an install (issue 24)."""
    names = set(zipfile.ZipFile(built[0]).namelist())
    pages = sorted((REPO / "docs").glob("*.md"))
    assert {f"pytest_sys1cal/_bundled/docs/{page.name}" for page in pages} <= names
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    assert "python -m pytest_sys1cal docs" in zipfile.ZipFile(built[0]).read(metadata).decode()  # where to read them
    python = str(installed / "python")
    listed = subprocess.run([python, "-m", "pytest_sys1cal", "docs"], cwd=tmp_path, capture_output=True, text=True)
    assert listed.returncode == 0 and listed.stdout == (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    assert all(f"]({page.name})" in listed.stdout for page in pages if page.name != "index.md"), listed.stdout
    for cited in ("setup", "docs/thresholds.md"):  # by name, or as a message cites it
        page = subprocess.run(
            [python, "-m", "pytest_sys1cal", "docs", cited], cwd=tmp_path, capture_output=True, text=True
        )
        expected = (REPO / "docs" / f"{Path(cited).stem}.md").read_text(encoding="utf-8")
        assert page.returncode == 0 and page.stdout == expected
    missing = subprocess.run(
        [python, "-m", "pytest_sys1cal", "docs", "nope"], cwd=tmp_path, capture_output=True, text=True
    )
    assert missing.returncode == 4 and missing.stderr.startswith(
        "error: no page 'nope'; the pages are: architecture, cassettes,"
    )
