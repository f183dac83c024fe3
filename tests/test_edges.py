"""The gate at its edges, as a user meets it (issue 11): damaged and missing inputs are one clear error,
nothing unmeasured passes, the advice is safe to follow, and the documented upgrade flow works as printed
(docs/thresholds.md).

Each case is a real pytest run (pytester) on real files; recording goes to a loopback /v1/systemone
server or to the jevcompat mock on 127.0.0.1. Every case checks the exit status, that the message names
the file or field and the fix, that no traceback is shown, and that nothing was written or lost."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import jevcompat.mock as jevcompat
import pytest

from pytest_sys1cal.dataset import load_dataset
from tests.loopback import Behaviour, LoopbackServer, jevcompat_mock
from tests.runs import REPO, run, sys1cal

JEV = REPO / "cassettes" / "jev" / "jev-1.13.0"
SEMIF = REPO / "cassettes" / "semif" / "smollm2-135m-instruct-q4_1"
SUBSET = "frequency__seed_000042"  # six renderings of one latent problem


def output(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


def assert_clean(result: pytest.RunResult) -> None:
    text = output(result)
    assert "Traceback" not in text and "INTERNALERROR" not in text, text[-3000:]


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def jev_copy(tmp_path: Path) -> Path:
    root = tmp_path / "cassettes"
    shutil.copytree(JEV, root / "jev" / "jev-1.13.0")
    return root


@pytest.fixture
def semif_copy(tmp_path: Path) -> Path:
    root = tmp_path / "cassettes"
    shutil.copytree(SEMIF, root / "semif" / SEMIF.name)
    return root


def edit_manifest(folder: Path, **changes: object) -> Path:
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    for key, value in changes.items():
        if value is _DELETE:
            del manifest[key]
        else:
            manifest[key] = value
    path.write_text(json.dumps(manifest, indent=2))
    return path


_DELETE = object()


# ============================================================================================ manifests


@pytest.mark.parametrize("repeats", [-1, 0, "ten", 1.5, None, _DELETE])
def test_a_manifest_with_bad_repeats_is_one_usage_error(pytester: pytest.Pytester, semif_copy: Path, repeats) -> None:
    path = edit_manifest(semif_copy / "semif" / SEMIF.name, repeats=repeats)
    result = sys1cal(pytester, "--model=semif", f"--sys1cal-cassettes={semif_copy}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert re.search(rf"{re.escape(str(path))}(:\d+)?: field 'repeats': ", output(result)), output(result)
    assert "restore it from version control" in output(result)
    assert "passed" not in result.stdout.str()
    assert_clean(result)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"questions": ["noul", "choise"]}, "field 'questions': "),
        ({"source": "guessed"}, "field 'source': \"guessed\" is not one of recorded, reconstructed, mixed"),
        ({"repeat": 1}, "field 'repeat': unknown field (did you mean 'repeats'?)"),
        (
            {"written_by": "9.0"},
            "field 'written_by': unknown field (a newer pytest-sys1cal may have written it: upgrade)",
        ),
        ({"model": "jev"}, "field 'model': 'jev' does not match the folder, which holds model 'semif'"),
        ({"dataset": {"name": "x", "sha256": "nope"}}, "field 'dataset': "),
    ],
)
def test_a_manifest_with_wrong_fields_names_the_field(
    pytester: pytest.Pytester, semif_copy: Path, changes: dict, message: str
) -> None:
    edit_manifest(semif_copy / "semif" / SEMIF.name, **changes)
    result = sys1cal(pytester, "--model=semif", f"--sys1cal-cassettes={semif_copy}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in output(result), output(result)
    assert_clean(result)


def test_cassettes_without_a_manifest_are_one_usage_error(pytester: pytest.Pytester, semif_copy: Path) -> None:
    (semif_copy / "semif" / SEMIF.name / "manifest.json").unlink()
    before = snapshot(semif_copy)
    result = sys1cal(pytester, "--model=semif", f"--sys1cal-cassettes={semif_copy}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "manifest.json: missing; the folder holds 365 cassettes but no manifest" in output(result)
    assert len(output(result).splitlines()) < 10
    assert snapshot(semif_copy) == before
    assert_clean(result)


@pytest.mark.parametrize(
    "args",
    [
        ["--model=jev", "--sys1cal-cassettes={root}-typo"],
        ["--model=jev", "--sys1cal-model-version=jev-1.31.0", "--sys1cal-cassettes={root}"],
        ["--model=systemone", "--sys1cal-cassettes={root}"],
    ],
)
def test_replay_with_no_cassettes_for_this_model_is_one_usage_error(
    pytester: pytest.Pytester, jev_copy: Path, args: list[str]
) -> None:
    result = sys1cal(pytester, *(arg.format(root=jev_copy) for arg in args))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = output(result)
    assert "no cassettes for" in text and "Cassette folders under" in text, text
    if "typo" not in " ".join(args):
        assert "jev/jev-1.13.0" in text  # what does exist is listed
    assert "new_episodes" not in text and len(text.splitlines()) < 10
    assert_clean(result)


# ============================================================================================ cassettes


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],
        lambda text: "",
        lambda text: "{}",
        lambda text: '{"interactions": [{"request": {}}]}',
        lambda text: json.dumps({"interactions": [{**json.loads(text)["interactions"][0], "response": {}}]}),
    ],
    ids=["truncated", "empty-file", "empty-object", "no-request", "no-response"],
)
def test_a_damaged_cassette_fails_its_item_in_one_line_and_counts_everywhere(
    pytester: pytest.Pytester, jev_copy: Path, tmp_path: Path, damage
) -> None:
    damaged = jev_copy / "jev" / "jev-1.13.0" / "frequency" / f"{SUBSET}__repr_prose.json"
    damaged.write_text(damage(damaged.read_text()))
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    result = sys1cal(
        pytester, f"--sys1cal-cassettes={jev_copy}", "-k", SUBSET, f"--sys1cal-report={report}", f"--junitxml={junit}"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=5, failed=1)
    line = next(line for line in result.stdout.lines if "not a readable cassette" in line)
    assert str(damaged) in line and "restore it from version control (git checkout -- " in line
    assert json.loads(report.read_text())["counts"]["failed"] == 1
    assert junit.read_text().count("<failure") == 1
    result.stdout.fnmatch_lines(["*1 rendering(s) failed and are left out of every table below*"])
    assert_clean(result)


def test_each_answer_comes_from_its_own_cassette_as_it_is_now(
    pytester: pytest.Pytester, jev_copy: Path, tmp_path: Path
) -> None:
    """Replay reads and checks the rendering's cassette every run (nothing derived from it stands in): an edited
    answer is refused against the manifest's digest, naming the file and the fix, and an edited recorded request
    no longer answers the question."""
    folder = jev_copy / "jev" / "jev-1.13.0" / "frequency"
    answered, asked = folder / f"{SUBSET}__repr_prose.json", folder / f"{SUBSET}__repr_table.json"
    cassette = json.loads(answered.read_text())
    body = json.loads(cassette["interactions"][0]["response"]["body"]["string"])
    body["answers"]["noul"]["noul"] = 0.123456789
    cassette["interactions"][0]["response"]["body"]["string"] = json.dumps(body)
    answered.write_text(json.dumps(cassette))
    cassette = json.loads(asked.read_text())
    request = cassette["interactions"][0]["request"]
    request["body"] = request["body"].replace("Proposition:", "Proposition (edited):", 1)
    asked.write_text(json.dumps(cassette))
    report = tmp_path / "report.json"
    result = sys1cal(pytester, f"--sys1cal-cassettes={jev_copy}", "-k", SUBSET, f"--sys1cal-report={report}")
    result.assert_outcomes(passed=4, failed=2)
    edited = next(line for line in result.stdout.lines if "its answers are not the ones recorded" in line)
    assert str(answered) in edited and "git checkout -- " in edited, edited
    line = next(line for line in result.stdout.lines if "holds no unplayed recording of this request" in line)
    assert str(asked) in line and "body" in line, line
    assert json.loads(report.read_text())["counts"]["failed"] == 2
    assert_clean(result)


def test_a_deleted_cassette_fails_like_a_damaged_one_and_gates_are_not_applied(
    pytester: pytest.Pytester, jev_copy: Path, tmp_path: Path
) -> None:
    (jev_copy / "jev" / "jev-1.13.0" / "bayes" / "bayes__seed_000042__repr_prose.json").unlink()
    report = tmp_path / "report.json"
    result = sys1cal(
        pytester, f"--sys1cal-cassettes={jev_copy}", f"--sys1cal-thresholds={REPO / 'thresholds.yaml'}",
        f"--sys1cal-report={report}",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    data = json.loads(report.read_text())
    assert data["counts"]["failed"] == 1
    assert {gate["verdict"] for gate in data["gates"]} == {"not applicable"}
    assert all(gate["observed"] is None for gate in data["gates"])


# ============================================================================================ nothing unmeasured passes


def test_a_configured_gate_that_cannot_be_measured_fails_a_full_run(pytester: pytest.Pytester, tmp_path: Path) -> None:
    thresholds = tmp_path / "thresholds.yaml"
    thresholds.write_text("jev:\n  choice:\n    min_mean_ovl: 0.7\n    max_swap_shift: 0.05\n")
    report = tmp_path / "report.json"
    result = sys1cal(
        pytester, f"--sys1cal-cassettes={REPO / 'cassettes'}", f"--sys1cal-thresholds={thresholds}",
        f"--sys1cal-report={report}",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    gates = {gate["name"]: gate for gate in json.loads(report.read_text())["gates"]}
    assert gates["choice.min_mean_ovl"]["verdict"] == "passed"
    swap = gates["choice.max_swap_shift"]
    assert (swap["verdict"], swap["passed"]) == ("FAILED", False)
    assert "no rendering was asked the swapped Choice" in swap["explanation"]
    assert "must be measured to pass" in swap["explanation"]
    result.stdout.fnmatch_lines(["*1 failed, 365 passed*"])


def test_on_part_of_the_dataset_gates_are_not_applicable_and_show_no_value(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    result = sys1cal(
        pytester, f"--sys1cal-cassettes={REPO / 'cassettes'}", f"--sys1cal-thresholds={REPO / 'thresholds.yaml'}",
        "-k", SUBSET,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK
    rows = [line for line in result.stdout.lines if line.startswith("noul.min_mean_ovl")]
    assert rows and re.fullmatch(r"noul\.min_mean_ovl\s+—\s+0\.9000\s+not applicable", rows[0]), rows
    result.stdout.fnmatch_lines(["*only 6 of 365 renderings were selected; threshold gates describe the whole*"])


# ============================================================================================ advice


def record_subset(pytester: pytest.Pytester, root: Path, url: str) -> pytest.RunResult:
    return sys1cal(
        pytester, "--model=systemone", f"--sys1cal-base-url={url}", f"--sys1cal-cassettes={root}",
        "--sys1cal-record-mode=once", "--sys1cal-repeats=1", "-k", SUBSET,
    )  # fmt: skip


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    with LoopbackServer.for_renderings(load_dataset("sys1cal-v1").renderings, Behaviour(bias=0.2)) as server:
        yield server


def test_the_printed_record_command_carries_the_runs_options_and_works_as_printed(
    pytester: pytest.Pytester, tmp_path: Path, loopback: LoopbackServer
) -> None:
    root = tmp_path / "recorded"
    assert record_subset(pytester, root, loopback.url).ret == pytest.ExitCode.OK
    missing = root / "systemone" / "jev-latest" / "frequency" / f"{SUBSET}__repr_prose.json"
    missing.unlink()
    result = sys1cal(
        pytester, "--model=systemone", f"--sys1cal-base-url={loopback.url}", f"--sys1cal-cassettes={root}", "-k", SUBSET
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    line = next(line for line in result.stdout.lines if "record it with: " in line)
    command = shlex.split(line.split("record it with: ", 1)[1])
    for option in (
        "--sys1cal-model=systemone",
        "--sys1cal-model-version=jev-latest",
        "--sys1cal-dataset=sys1cal-v1",
        f"--sys1cal-cassettes={root}",
        f"--sys1cal-base-url={loopback.url}",
        "--sys1cal-record-mode=once",
    ):
        assert option in command, (option, command)
    # Followed as printed, it records exactly the missing cassette, and replay passes again.
    assert command[0] == "pytest"
    assert run(pytester, *command[1:]).ret == pytest.ExitCode.OK
    assert missing.is_file()
    assert sys1cal(pytester, "--model=systemone", f"--sys1cal-cassettes={root}", "-k", SUBSET).ret == 0


def test_advice_never_records_into_a_reconstructed_set(pytester: pytest.Pytester, jev_copy: Path) -> None:
    (jev_copy / "jev" / "jev-1.13.0" / "frequency" / f"{SUBSET}__repr_prose.json").unlink()
    result = sys1cal(pytester, f"--sys1cal-cassettes={jev_copy}", "-k", SUBSET)
    text = output(result)
    assert "new_episodes" not in text and "record-mode=all" not in text
    assert f"--sys1cal-cassettes={jev_copy.parent / 'cassettes-recorded'}" in text


def test_recording_into_a_reconstructed_set_is_refused_with_the_command_that_records_elsewhere(
    pytester: pytest.Pytester, jev_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test")
    before = snapshot(jev_copy)
    result = sys1cal(pytester, f"--sys1cal-cassettes={jev_copy}", "--sys1cal-record-mode=once")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = output(result)
    assert "holds cassettes reconstructed from published outputs" in text
    assert f"--sys1cal-cassettes={jev_copy.parent / 'cassettes-recorded'}" in text
    assert snapshot(jev_copy) == before
    assert_clean(result)


# ============================================================================================ recording


def test_a_missing_api_key_is_a_usage_error_before_anything_is_priced_or_written(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    root = tmp_path / "fresh"
    result = sys1cal(pytester, f"--sys1cal-cassettes={root}", "--sys1cal-record-mode=once", "-k", SUBSET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "TYPESAFE_API_KEY is not set" in output(result) and "Nothing was sent" in output(result)
    assert "input tokens" not in output(result) and not root.exists()
    assert_clean(result)


@pytest.mark.parametrize("server", ["closed-port", "unauthorised"])
def test_a_recording_that_saved_nothing_leaves_nothing_behind(
    pytester: pytest.Pytester, tmp_path: Path, server: str
) -> None:
    root = tmp_path / "fresh"
    with jevcompat_mock(jevcompat.MockConfig(key="the-right-key")) as mock:
        url = mock.url if server == "unauthorised" else "http://127.0.0.1:9"
        result = record_subset(pytester, root, url)
    assert result.ret != pytest.ExitCode.OK
    assert not root.exists() or not any(root.rglob("*")), sorted(root.rglob("*"))
    assert "recorded nothing" in output(result) or "cannot connect" in output(result)
    assert "recorded 0 requests in 0.00 s" not in output(result)


def test_a_server_reporting_another_model_is_said_out_loud(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    report = tmp_path / "report.json"
    with jevcompat_mock(jevcompat.MockConfig()) as mock:
        result = record_subset(pytester, tmp_path / "c", mock.url)
        assert result.ret == pytest.ExitCode.OK
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    replay = sys1cal(
        pytester, "--model=systemone", f"--sys1cal-cassettes={tmp_path / 'c'}", "-k", SUBSET,
        f"--sys1cal-report={report}",
    )  # fmt: skip
    said = "the server reported model jevcompat-mock-0.1, not the pinned jev-latest"
    replay.stdout.fnmatch_lines([f"notice: {said}*"])
    assert any(said in notice for notice in json.loads(report.read_text())["notices"])
    assert said in summary.read_text()


# ============================================================================================ thresholds and baselines


def test_an_empty_thresholds_file_is_a_usage_error(pytester: pytest.Pytester, tmp_path: Path) -> None:
    empty = tmp_path / "thresholds.yaml"
    empty.write_text("# gates to come\n")
    result = sys1cal(pytester, f"--sys1cal-cassettes={REPO / 'cassettes'}", f"--sys1cal-thresholds={empty}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{empty}: the file is empty (or only comments), so it would gate nothing" in output(result)
    assert_clean(result)


def test_a_thresholds_file_without_this_model_says_the_run_gates_nothing(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    thresholds = tmp_path / "thresholds.yaml"
    thresholds.write_text("semif:\n  noul: {min_mean_ovl: 0.5}\n")
    report = tmp_path / "report.json"
    result = sys1cal(
        pytester, f"--sys1cal-cassettes={REPO / 'cassettes'}", f"--sys1cal-thresholds={thresholds}",
        f"--sys1cal-report={report}", "-k", SUBSET,
    )  # fmt: skip
    result.stdout.fnmatch_lines(["notice: *no section for model 'jev'*: this run gates nothing. *--update*"])
    assert any("this run gates nothing" in notice for notice in json.loads(report.read_text())["notices"])


def baseline_of(pytester: pytest.Pytester, tmp_path: Path, *args: str) -> Path:
    path = tmp_path / "baseline.json"
    result = sys1cal(pytester, f"--sys1cal-cassettes={REPO / 'cassettes'}", f"--sys1cal-report={path}", *args)
    assert result.ret == pytest.ExitCode.OK
    return path


def test_a_baseline_covering_part_of_the_run_is_said_out_loud(pytester: pytest.Pytester, tmp_path: Path) -> None:
    baseline = baseline_of(pytester, tmp_path, "-k", SUBSET)
    result = sys1cal(pytester, f"--sys1cal-cassettes={REPO / 'cassettes'}", f"--sys1cal-baseline={baseline}")
    result.stdout.fnmatch_lines(["notice: the baseline * lacks 359 of the renderings this run measured*"])


@pytest.mark.parametrize(("key", "value"), [("p_noul", "abc"), ("p_star", 1.5), ("repeats", 0)])
def test_a_baseline_with_unusable_values_is_refused(
    pytester: pytest.Pytester, tmp_path: Path, key: str, value: object
) -> None:
    baseline = baseline_of(pytester, tmp_path, "-k", SUBSET)
    data = json.loads(baseline.read_text())
    data["items"][2][key] = value
    baseline.write_text(json.dumps(data))
    result = sys1cal(pytester, f"--sys1cal-cassettes={REPO / 'cassettes'}", f"--sys1cal-baseline={baseline}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"items[2] ({data['items'][2]['instance_id']}): {key} is" in output(result)
    assert "refused rather than compared on what is left" in output(result)
    assert_clean(result)


# ============================================================================================ small ones


def test_files_are_written_with_the_users_umask(
    pytester: pytest.Pytester, tmp_path: Path, loopback: LoopbackServer
) -> None:
    old = os.umask(0o027)
    try:
        root, report = tmp_path / "c", tmp_path / "report.json"
        assert record_subset(pytester, root, loopback.url).ret == pytest.ExitCode.OK
        sys1cal(
            pytester, "--model=systemone", f"--sys1cal-cassettes={root}", f"--sys1cal-report={report}", "-k", SUBSET
        )
    finally:
        os.umask(old)
    manifest = root / "systemone" / "jev-latest" / "manifest.json"
    cassette = next((root / "systemone" / "jev-latest").rglob(f"{SUBSET}*.json"))
    for path in (manifest, cassette, report):
        assert stat.S_IMODE(path.stat().st_mode) == 0o640, path


def test_junit_skips_name_the_line_that_configures_the_gate(pytester: pytest.Pytester, tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    sys1cal(
        pytester, f"--sys1cal-cassettes={REPO / 'cassettes'}", f"--sys1cal-thresholds={REPO / 'thresholds.yaml'}",
        "-k", SUBSET, f"--junitxml={junit}",
    )  # fmt: skip
    text = junit.read_text()
    line = next(
        n
        for n, row in enumerate((REPO / "thresholds.yaml").read_text().splitlines(), 1)
        if "min_mean_ovl: 0.90 " in row
    )
    assert f"thresholds.yaml:{line}: not applicable: only 6 of 365" in text
    assert "thresholds.yaml:0:" not in text


def test_a_broken_dataset_line_reads_as_one_sentence(pytester: pytest.Pytester, tmp_path: Path) -> None:
    dataset = tmp_path / "broken.jsonl"
    dataset.write_text('{"instance_id": "x\n')
    result = sys1cal(pytester, f"--sys1cal-dataset={dataset}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{dataset}:1: not valid JSON (Unterminated string starting at column 17)" in output(result)
    assert "at at" not in output(result)


@pytest.mark.parametrize("args", [["--model=jev"], ["--sys1cal-model=jev"], ["--sys1cal-seed=3"]])
def test_benchmark_options_without_sys1cal_are_refused(pytester: pytest.Pytester, args: list[str]) -> None:
    pytester.makepyfile("def test_mine(): pass")
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "given without --sys1cal, so the benchmark would not run; add --sys1cal" in output(result)
    assert args[0].split("=")[0] in output(result)


# =================================================================================== the documented upgrade flow


def documented_upgrade_commands() -> list[list[list[str]]]:
    """The commands of docs/thresholds.md's "The upgrade gate", exactly as printed there: its two bash blocks
    (the version folder as the baseline, then the saved-report form)."""
    page = (REPO / "docs" / "thresholds.md").read_text()
    section = page.split("\n## The upgrade gate\n", 1)[1].split("\n## ", 1)[0]
    blocks = [part.split("```", 1)[0] for part in section.split("```bash")[1:]]
    return [
        [shlex.split(line.split("#", 1)[0]) for line in block.strip().splitlines() if line.strip()] for block in blocks
    ]


def test_the_documented_upgrade_flow_works_verbatim_against_a_jev_wire_server(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (record, by_version), (save, by_report) = documented_upgrade_commands()
    assert record[:2] == ["pytest", "--sys1cal"] and "--sys1cal-record-mode=once" in record
    assert "--sys1cal-baseline=jev-1.13.0" in by_version and "--sys1cal-baseline=baseline.json" in by_report
    # The project as a user has it: the bundled cassettes and thresholds under the rootdir. The ini only
    # lifts the rate limit, so the 3,650 requests take seconds (the commands themselves are untouched).
    shutil.copytree(REPO / "cassettes" / "jev", pytester.path / "cassettes" / "jev")
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    pytester.makeini("[pytest]\nsys1cal_rate = 0\n")
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test")
    # jevcompat serves the Jev wire but knows no jev-1.14.0; that is the version the page upgrades to.
    monkeypatch.setattr(jevcompat, "ACCEPTED_MODELS", jevcompat.ACCEPTED_MODELS | {"jev-1.14.0"})
    reference = snapshot(pytester.path / "cassettes" / "jev" / "jev-1.13.0")
    reports = {"version": tmp_path / "by-version.json", "report": tmp_path / "by-report.json"}
    with jevcompat_mock(jevcompat.MockConfig()) as mock:
        made = run(pytester, *record[1:], f"--sys1cal-base-url={mock.url}")
    made.stdout.fnmatch_lines(["*recording 365 of 365 renderings*", "*3,650 requests (10 repeats)*"])
    assert made.ret == pytest.ExitCode.TESTS_FAILED  # recorded; the mock's hashes fail the threshold floors
    assert_clean(made)
    # Replays only from here on: no server is running.
    compared = run(pytester, *by_version[1:], f"--sys1cal-report={reports['version']}")
    compared.stdout.fnmatch_lines(
        [
            "jev jev-1.14.0 (recorded cassettes, 10 repeats) on sys1cal-v1: 365 of 365 selected renderings measured*",
            "notice: the server reported model jevcompat-mock-0.1, not the pinned jev-1.14.0*",
            "Upgrade comparison against the baseline jev-1.13.0 (paired by rendering)",
            "Noul mean OVL *0.9183*",
            "*Regression margins: δ 0.02 (passes within), δ₀ 0.01 (fails beyond), α 0.05, inconclusive: fail; "
            "from thresholds.yaml, jev.regression",  # as typed from where pytest ran
        ]
    )
    # The mock's answers are hashes, not probabilities: the comparison shows the drop, and the gate fails.
    assert compared.ret == pytest.ExitCode.TESTS_FAILED
    assert "regression.noul.mean_ovl" in compared.stdout.str()
    assert_clean(compared)
    assert run(pytester, *save[1:]).ret == pytest.ExitCode.OK
    saved = run(pytester, *by_report[1:], f"--sys1cal-report={reports['report']}")
    assert saved.ret == pytest.ExitCode.TESTS_FAILED
    rows = {form: [g for g in json.loads(path.read_text())["gates"] if g["name"].startswith("regression.")]
            for form, path in reports.items()}  # fmt: skip
    assert rows["version"] == rows["report"] and len(rows["version"]) == 3  # both forms: the same Δ and verdicts
    assert snapshot(pytester.path / "cassettes" / "jev" / "jev-1.13.0") == reference
    manifest = json.loads((pytester.path / "cassettes" / "jev" / "jev-1.14.0" / "manifest.json").read_text())
    assert (manifest["repeats"], manifest["source"], manifest["server_model"]) == (10, "recorded", "jevcompat-mock-0.1")
