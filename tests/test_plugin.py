"""The plugin as a user meets it: real pytest runs through pytester, replaying the bundled cassettes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runs import CASSETTES, REPO, sys1cal

JEV = CASSETTES / "jev" / "jev-1.13.0"


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return sys1cal(pytester, f"--sys1cal-cassettes={CASSETTES}", *args)


def test_help_lists_every_option(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--help")
    result.stdout.fnmatch_lines(
        [
            "*Sys1Cal calibration benchmark:*",
            "*--sys1cal *run the Sys1Cal benchmark*",
            "*--sys1cal-model=NAME*",
            "*--sys1cal-record-mode={none,once,new_episodes,all}*",
            "*--sys1cal-repeats=N*",
            "*--sys1cal-dataset=PATH*",
            "*--sys1cal-cassettes=DIR*",
            "*--sys1cal-thresholds=PATH*",
            "*--sys1cal-report=PATH*",
            "*--sys1cal-baseline=PATH|VERSION*",
            "*--sys1cal-seed=N*",
            "*--model=NAME*short for --sys1cal-model*",
        ]
    )


def test_one_item_per_rendering_with_stable_sorted_ids(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["365 tests collected*"])
    ids = [line for line in result.stdout.lines if line.startswith("sys1cal::")]
    assert len(ids) == 365
    assert ids == sorted(ids)
    assert ids[0] == "sys1cal::jev[bayes/bayes__seed_000042__repr_counts]"
    assert "sys1cal::jev[conditional/conditional__seed_000045__repr_table]" in ids


def test_offline_replay_passes_and_prints_the_papers_table_1(pytester: pytest.Pytester, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = run(pytester, "--model", "jev", f"--sys1cal-report={report}")
    result.assert_outcomes(passed=365)
    result.stdout.fnmatch_lines(
        [
            "sys1cal: model jev jev-1.13.0 (reconstructed cassettes, 1 repeat, each answer the mean of 10)*",
            "sys1cal: cassettes *; dataset sys1cal-v1 sha256 2f31c498debb*",
            "*Table 1*",
            "Noul *365*0.918*",
            "Choice *365*0.764*",
            "Score *365*0.886*",
        ]
    )
    data = json.loads(report.read_text())
    # Expected values: the Sys1Cal-v1 paper's Table 1 (mean OVL), recomputed from the replayed cassettes.
    assert data["primitives"]["noul"]["mean_ovl"] == pytest.approx(0.918, abs=0.001)
    assert data["primitives"]["choice"]["mean_ovl"] == pytest.approx(0.764, abs=0.001)
    assert data["primitives"]["score"]["mean_ovl"] == pytest.approx(0.886, abs=0.001)
    assert data["schema"] == "sys1cal-report/1"
    assert data["model"] == {
        "name": "jev",
        "version": "jev-1.13.0",
        "source": "reconstructed",
        "server_model": "jev-1.13.0",
    }
    assert data["dataset"]["sha256"] == "2f31c498debb39891339e018b5c747991e54085ab231cb5a0d981d1fc83b530c"
    assert (data["dataset"]["renderings"], data["dataset"]["latent_problems"], data["repeats"]) == (365, 92, 1)
    assert len(data["items"]) == 365
    item = next(i for i in data["items"] if i["instance_id"].startswith("conditional__seed_000045__repr_table"))
    assert item["p_star"] == pytest.approx(40 / 92)
    assert item["p_choice_swapped"] is None  # the paper asked no swapped Choice


@pytest.mark.parametrize(
    ("selection", "count"),
    [
        ("bayes", 95),  # bayes and sequential_bayes
        ("prose", 92),
        ("conditional__seed_000050", 5),
        ("conditional__seed_000050__repr_table__parallel_primitives", 1),  # the dataset's own id
        ("explicit_probability and ratio", 20),
    ],
)
def test_k_selects_items(pytester: pytest.Pytester, selection: str, count: int) -> None:
    result = run(pytester, "-k", selection)
    result.assert_outcomes(passed=count, deselected=365 - count)


def test_unknown_model_is_a_usage_error_listing_the_models(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--model", "gpt-17")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown model 'gpt-17'; available models: jev, *systemone*"])
    assert "Traceback" not in result.stderr.str()


def test_missing_cassette_fails_the_item_naming_file_and_command(pytester: pytest.Pytester, tmp_path: Path) -> None:
    root = tmp_path / "cassettes"
    shutil.copytree(JEV, root / "jev" / "jev-1.13.0")
    missing = root / "jev" / "jev-1.13.0" / "frequency" / "frequency__seed_000042__repr_prose.json"
    missing.unlink()
    result = sys1cal(pytester, f"--sys1cal-cassettes={root}", "-k", "frequency__seed_000042")
    result.assert_outcomes(passed=5, failed=1)
    # The folder is reconstructed: the advice never records into it, and carries the run's own options.
    result.stdout.fnmatch_lines(
        [
            f"*frequency__seed_000042__repr_prose__parallel_primitives: no cassette {missing}; this folder is "
            f"reconstructed from published outputs: restore the file from version control (git checkout -- {missing}), "
            "or export TYPESAFE_API_KEY, then record the model elsewhere with: pytest --sys1cal --sys1cal-model=jev "
            "--sys1cal-model-version=jev-1.13.0 --sys1cal-dataset=sys1cal-v1 "
            f"--sys1cal-cassettes={tmp_path / 'cassettes-recorded'} --sys1cal-base-url=https://api.typesafe.ai "
            # The rendering by its node id (fnmatch: "[[]" is a literal "[").
            "--sys1cal-record-mode=once 'sys1cal::jev[[]frequency/frequency__seed_000042__repr_prose]'",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    # The failed rendering is reported, not silently dropped from the tables.
    result.stdout.fnmatch_lines(["*1 rendering(s) failed and are left out of every table below*"])


def test_replay_opens_no_socket(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import socket

        def refuse(self, address):
            raise AssertionError(f"replay tried to connect to {address}")

        saved = (socket.socket.connect, socket.socket.connect_ex)

        def pytest_configure(config):
            socket.socket.connect = refuse
            socket.socket.connect_ex = refuse

        def pytest_unconfigure(config):
            socket.socket.connect, socket.socket.connect_ex = saved  # the run is in-process: undo it
        """
    )
    run(pytester, "-k", "compound").assert_outcomes(passed=60, deselected=305)


def test_other_plugins_model_option_wins(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        def pytest_addoption(parser):
            parser.addoption("--model", dest="their_model")
        """
    )
    result = run(pytester, "--model", "theirs", "--sys1cal-model", "jev", "-k", "frequency__seed_000042")
    result.assert_outcomes(passed=6, deselected=359)


def test_without_the_flag_nothing_is_collected_or_imported(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_ordinary="""
        import sys

        def test_light():
            heavy = [m for m in ("numpy", "scipy", "httpx", "vcr") if m in sys.modules]
            assert heavy == []
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:jevcompat")
    result.assert_outcomes(passed=1)


def test_importing_the_plugin_module_imports_nothing_heavy() -> None:
    code = "import sys, pytest_sys1cal.plugin; print(sorted(m for m in ('numpy','scipy','httpx','vcr') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_xdist_gives_the_same_report(pytester: pytest.Pytester, tmp_path: Path) -> None:
    serial, parallel = tmp_path / "serial.json", tmp_path / "parallel.json"
    run(pytester, f"--sys1cal-report={serial}", "-n", "0").assert_outcomes(passed=365)
    result = run(pytester, f"--sys1cal-report={parallel}", "-n", "2")
    result.assert_outcomes(passed=365)
    assert serial.read_bytes() == parallel.read_bytes()
    assert result.stdout.str().count("Table 1:") == 1  # the summary prints once, on the controller


def test_malformed_dataset_is_a_usage_error(pytester: pytest.Pytester, tmp_path: Path) -> None:
    dataset = tmp_path / "bad.jsonl"
    dataset.write_text('{"instance_id": "x"\n')
    result = run(pytester, f"--sys1cal-dataset={dataset}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{dataset}:1: not valid JSON*"])
    assert "Traceback" not in result.stderr.str()


def test_cassettes_of_another_dataset_are_refused(pytester: pytest.Pytester, tmp_path: Path) -> None:
    source = REPO / "fixtures" / "sys1cal-v1" / "v0.1.0_tiny_cleanvars_parallel_primitives.jsonl"
    edited = tmp_path / "edited.jsonl"
    edited.write_bytes(source.read_bytes() + b"\n")  # same renderings, different bytes
    result = run(pytester, f"--sys1cal-dataset={edited}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*manifest.json: these cassettes were recorded for dataset sha256 2f31c498*"])


def test_bundled_cassettes_rebuild_byte_identically(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_jev_cassettes.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    rebuilt = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.json"))
    committed = sorted(p.relative_to(CASSETTES) for p in JEV.rglob("*.json"))
    assert rebuilt == committed and len(rebuilt) == 366
    assert all((tmp_path / p).read_bytes() == (CASSETTES / p).read_bytes() for p in rebuilt)
