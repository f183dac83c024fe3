"""The commands and hints the plugin prints (issue 20): they carry the server the folder was recorded from
(kept in the manifest, without credentials), the repeats, dataset and cost cap of the run, say "export" only
when the key is missing, and name the thresholds file in force. Printed commands are run as printed."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_sys1cal.errors import InputError
from pytest_sys1cal.store.manifest import read_manifest
from tests.degraded import degrade
from tests.loopback import Behaviour, LoopbackServer
from tests.recording.test_recording import subset
from tests.runs import REPO, run, sys1cal

JEV = REPO / "cassettes" / "jev" / "jev-1.13.0"


def text(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


def printed_command(result: pytest.RunResult, after: str) -> list[str]:
    """The command printed after `after` on its line (or on the next line), split as a shell would."""
    lines = result.stdout.lines
    index = next(i for i, line in enumerate(lines) if after in line)
    rest = lines[index].split(after, 1)[1].strip()
    return shlex.split(rest or lines[index + 1].strip())


@pytest.fixture
def recorded(tmp_path: Path, pytester: pytest.Pytester):
    """Six renderings recorded with two repeats from a loopback server reached through a URL with
    credentials (which the manifest must not keep); the server stays up for the test."""
    dataset, renderings = subset(tmp_path / "six.jsonl", 6)
    root = tmp_path / "cassettes"
    with LoopbackServer.for_renderings(renderings, Behaviour(bias=1.5)) as server:
        with_credentials = server.url.replace("http://", "http://ci-user:hunter2@")
        result = sys1cal(
            pytester, "--sys1cal-model=systemone", f"--sys1cal-base-url={with_credentials}",
            f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}", "--sys1cal-record-mode=once",
            "--sys1cal-repeats=2",
        )  # fmt: skip
        assert result.ret == pytest.ExitCode.OK, text(result)
        yield server, dataset, root, root / "systemone" / "jev-latest"


def test_the_manifest_keeps_the_base_url_without_credentials(recorded) -> None:
    server, _dataset, _root, folder = recorded
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["base_url"] == server.url
    assert "hunter2" not in (folder / "manifest.json").read_text() and "ci-user" not in str(manifest)


def test_advice_records_from_the_folders_server_with_the_runs_repeats_as_printed(
    pytester: pytest.Pytester, recorded
) -> None:
    server, dataset, root, folder = recorded
    missing = next(folder.glob("*/*.json"))
    missing.unlink()
    # Replayed without --sys1cal-base-url: the advice names the server the folder was recorded from, not the
    # adapter's default, and keeps the dataset and the repeats this run was given.
    result = sys1cal(
        pytester, "--sys1cal-model=systemone", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}",
        "--sys1cal-repeats=2",
    )  # fmt: skip
    result.assert_outcomes(passed=5, failed=1)
    command = printed_command(result, "record it with: ")
    for option in (
        f"--sys1cal-base-url={server.url}",
        f"--sys1cal-dataset={dataset}",
        f"--sys1cal-cassettes={root}",
        "--sys1cal-repeats=2",
        "--sys1cal-record-mode=once",
    ):
        assert option in command, (option, command)
    assert "export" not in text(result)  # systemone needs no key
    assert run(pytester, *command[1:]).ret == pytest.ExitCode.OK
    assert len(json.loads(missing.read_text())["interactions"]) == 2  # two repeats, like the others


def test_after_failed_gates_the_block_names_where_the_gates_came_from_and_no_rerecording(
    pytester: pytest.Pytester, recorded
) -> None:
    """Issue 24: a failed gate on cassettes of the right model is not fixed by re-recording them (3,650 paid
    requests on a full run): the advice names the file, the section in force and why (inherited: the version has
    no block of its own), and the comparison or the version's own gates, each command runnable as printed."""
    server, dataset, root, folder = recorded
    gates = pytester.path / "ci" / "gates.yaml"
    gates.parent.mkdir()
    gates.write_text("systemone:\n  noul: {min_mean_ovl: 0.999}\n")
    result = sys1cal(
        pytester, "--sys1cal-model=systemone", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}",
        "--sys1cal-thresholds=ci/gates.yaml",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    block = result.stdout.str().split("calibration gate FAILED", 1)[1]
    assert (
        "  These gates are ci/gates.yaml: systemone's section (line 1), inherited: jev-latest has no block of its "
        "own." in result.stdout.lines
    )
    assert "thresholds.yaml" not in block and "--sys1cal-record-mode=all" not in block and "re-record them" not in block
    assert "Otherwise this is a regression (re-recording the same model would not change the verdict)." in block
    # The version's own gates: a replay writing the report, then the thresholds command on that file.
    said = printed_command(result, "give jev-latest gates of its own: ")
    replay, update = shlex.join(said).split(", then ")
    assert run(pytester, *shlex.split(replay)[1:]).ret == pytest.ExitCode.OK  # writes the report
    assert shlex.split(update)[4:] == ["sys1cal-report.json", "--version", "--update", "--file", "ci/gates.yaml"]
    done = subprocess.run(
        [sys.executable, *shlex.split(update)[1:]], cwd=pytester.path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "+  jev-latest:" in done.stdout  # the diff of the block it wrote under systemone's section
    again = sys1cal(
        pytester, "--sys1cal-model=systemone", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}",
        "--sys1cal-thresholds=ci/gates.yaml",
    )  # fmt: skip
    assert again.ret == pytest.ExitCode.OK, text(again)
    assert server.requests == 12  # the recording's own: nothing was asked again


def test_cassettes_of_another_model_are_the_one_case_advised_a_rerecording(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """Answers filed under v2 that the server reported as v1, another recorded version: the cassettes are what is
    wrong, and the advice re-records them, saying how many paid requests, with the folder's repeats."""
    dataset, renderings = subset(tmp_path / "six.jsonl", 6)
    root = tmp_path / "cassettes"
    common = ["--sys1cal-model=systemone", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}"]
    with LoopbackServer.for_renderings(renderings, Behaviour(bias=1.5, model="v1")) as server:
        for version in ("v1", "v2"):
            recorded = sys1cal(
                pytester, *common, f"--sys1cal-base-url={server.url}", f"--sys1cal-model-version={version}",
                "--sys1cal-record-mode=once", "--sys1cal-repeats=2",
            )  # fmt: skip
            assert recorded.ret == pytest.ExitCode.OK, text(recorded)
        (pytester.path / "gates.yaml").write_text("systemone:\n  noul: {min_mean_ovl: 0.999}\n")
        result = sys1cal(pytester, *common, "--sys1cal-model-version=v2", "--sys1cal-thresholds=gates.yaml")
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        said = "The cassettes may be what is wrong (the server reported model v1 for answers filed under v2): "
        assert said + "re-record them (12 paid requests): " in result.stdout.str()
        command = printed_command(result, "re-record them (12 paid requests): ")
        assert "--sys1cal-repeats=2" in command and f"--sys1cal-base-url={server.url}" in command
        assert "--sys1cal-record-mode=all" in command
        before = server.requests
        # Run as printed (it names no thresholds file: this directory's, none, is in force): it re-records.
        assert run(pytester, *command[1:]).ret == pytest.ExitCode.OK
        assert server.requests - before == 6 * 2


def test_a_thresholds_file_without_this_model_is_named(pytester: pytest.Pytester, tmp_path: Path) -> None:
    gates = tmp_path / "other.yaml"
    gates.write_text("semif:\n  noul: {min_mean_ovl: 0.5}\n")
    result = sys1cal(
        pytester,
        f"--sys1cal-cassettes={REPO / 'cassettes'}",
        f"--sys1cal-thresholds={gates}",
        "-k",
        "frequency__seed_000042",
    )
    assert f"Gates: none configured for this model (see {gates})" in result.stdout.lines


@pytest.mark.parametrize("key", [None, "sk-set-in-this-shell"])
def test_export_is_said_only_when_the_key_is_missing(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str | None
) -> None:
    if key is None:
        monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    else:
        monkeypatch.setenv("TYPESAFE_API_KEY", key)
    root = tmp_path / "cassettes"
    shutil.copytree(JEV, root / "jev" / "jev-1.13.0")
    (root / "jev" / "jev-1.13.0" / "frequency" / "frequency__seed_000042__repr_prose.json").unlink()
    result = sys1cal(pytester, f"--sys1cal-cassettes={root}", "-k", "frequency__seed_000042", "--sys1cal-max-cost=0.5")
    result.assert_outcomes(passed=5, failed=1)
    said = "or export TYPESAFE_API_KEY, then record the model elsewhere with: "
    assert (said in text(result)) == (key is None)
    command = printed_command(result, "record the model elsewhere with: ")
    assert "--sys1cal-max-cost=0.5" in command  # the run's cost cap travels with the recording it advises
    assert command[-1] == "sys1cal::jev[frequency/frequency__seed_000042__repr_prose]"


@pytest.mark.parametrize(
    ("base_url", "said"),
    [
        ("http://user:pw@127.0.0.1:9", "field 'base_url': carries credentials; write it as \"http://127.0.0.1:9\""),
        ("ftp://127.0.0.1", "field 'base_url': \"ftp://127.0.0.1\" is not the http(s) URL recorded from"),
        ("", "field 'base_url': \"\" is not the http(s) URL recorded from"),
        (7, "field 'base_url': 7 is not the http(s) URL recorded from"),
    ],
)
def test_a_manifest_base_url_is_validated_and_never_echoes_credentials(
    tmp_path: Path, base_url: object, said: str
) -> None:
    manifest = json.loads((JEV / "manifest.json").read_text())
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({**manifest, "base_url": base_url}, indent=2))
    with pytest.raises(InputError) as excinfo:
        read_manifest(path, "jev", "jev-1.13.0")
    message = str(excinfo.value)
    assert message.startswith(f"{path}:") and said in message and "pw@" not in message
    assert read_manifest(JEV / "manifest.json", "jev", "jev-1.13.0") is not None


def test_the_advice_follows_what_the_run_compared(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A regression against the baseline is called one; a version that passed its upgrade comparison but fails
    the floors it inherits is advised gates of its own; a version with its own block is shown what the rule
    gives (printed, not written) before any rewrite."""
    root = tmp_path / "cassettes"
    shutil.copytree(JEV, root / "jev" / "jev-1.13.0")
    degrade(JEV, root, "jev-1.14.0")  # clearly worse
    degrade(JEV, root, "jev-1.15.0", weight=0.001)  # as good
    gates = pytester.path / "gates.yaml"
    gates.write_text("jev:\n  noul: {min_mean_ovl: 0.95}\n")
    common = (f"--sys1cal-cassettes={root}", "--sys1cal-thresholds=gates.yaml", "--sys1cal-baseline=jev-1.13.0")

    worse = sys1cal(pytester, *common, "--sys1cal-model-version=jev-1.14.0")
    block = worse.stdout.str().split("calibration gate FAILED", 1)[1]
    assert (
        "  These gates are gates.yaml: jev's section (line 1), inherited: jev-1.14.0 has no block of its own." in block
    )
    assert "  The upgrade gate: jev-1.14.0 is shown worse than the baseline jev-1.13.0" in block
    assert "give jev-1.14.0 gates of its own" not in block and "re-record them" not in block

    good = sys1cal(pytester, *common, "--sys1cal-model-version=jev-1.15.0", "--sys1cal-report=good.json")
    assert good.ret == pytest.ExitCode.TESTS_FAILED
    verdicts = {g["name"]: g["verdict"] for g in json.loads((pytester.path / "good.json").read_text())["gates"]}
    assert verdicts["noul.min_mean_ovl"] == "FAILED" and verdicts["regression.noul.mean_ovl"] == "passed"
    said = "If jev-1.15.0 is now the version you trust, give it gates of its own (rewritten in place, the change "
    assert said in good.stdout.str()
    update = printed_command(good, "the change shown as a diff): ")
    assert update[:5] == ["python", "-m", "pytest_sys1cal", "thresholds", "good.json"]
    done = subprocess.run([sys.executable, *update[1:]], cwd=pytester.path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    again = sys1cal(pytester, *common, "--sys1cal-model-version=jev-1.15.0")
    assert again.ret == pytest.ExitCode.OK, text(again)  # its own gates, and the comparison, pass

    gates.write_text("jev:\n  noul: {min_mean_ovl: 0.9}\n  jev-1.15.0:\n    noul: {min_mean_ovl: 0.99}\n")
    own = sys1cal(pytester, f"--sys1cal-cassettes={root}", "--sys1cal-thresholds=gates.yaml",
                  "--sys1cal-model-version=jev-1.15.0")  # fmt: skip
    lines = own.stdout.str()
    assert (
        "These gates are gates.yaml: jev's section (line 1) with jev[jev-1.15.0]'s block (line 3) laid over it."
        in lines
    )
    assert (
        "jev-1.15.0 has gates of its own. What the rule would write from this run (printed, nothing written): " in lines
    )
    paste = printed_command(own, "then python")  # the thresholds command after the replay that writes the report
    assert "--paste" in " ".join(paste)


def test_the_job_summary_carries_the_advice_with_commands_as_code(
    pytester: pytest.Pytester, recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, dataset, root, folder = recorded
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    (pytester.path / "gates.yaml").write_text("systemone:\n  noul: {min_mean_ovl: 0.999}\n")
    result = sys1cal(
        pytester, "--sys1cal-model=systemone", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}",
        "--sys1cal-thresholds=gates.yaml", "--sys1cal-report=r.json",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text_md = summary.read_text(encoding="utf-8")
    what = text_md.split("**What to do**\n\n", 1)[1].splitlines()
    assert (
        what[0]
        == "- These gates are gates.yaml: systemone's section (line 1), inherited: jev-latest has no block of its own."
    )
    assert what[1].endswith(
        "if that passes, give jev-latest gates of its own: "
        "`python -m pytest_sys1cal thresholds r.json --version --update --file gates.yaml`"
    )
    # Passed gates: no advice block.
    summary.unlink()
    (pytester.path / "gates.yaml").write_text("systemone:\n  noul: {min_mean_ovl: 0.5}\n")
    passed = sys1cal(
        pytester, "--sys1cal-model=systemone", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}",
        "--sys1cal-thresholds=gates.yaml",
    )  # fmt: skip
    assert passed.ret == pytest.ExitCode.OK and "What to do" not in summary.read_text(encoding="utf-8")
