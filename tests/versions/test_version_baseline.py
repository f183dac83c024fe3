"""--sys1cal-baseline=VERSION: another recorded version replayed offline in the same run, compared exactly as a
saved report of it is; the refusals, each one line with exit status 4; the version folder never written.

Real pytest runs (pytester) on a copy of the bundled cassettes with a degraded version beside it
(tests/version_roots.py)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.degraded import degrade
from tests.runs import REPO, sys1cal
from tests.version_roots import NEW, OLD, edit_manifest, regression_rows, snapshot, two_versions

THRESHOLDS = REPO / "thresholds.yaml"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return two_versions(tmp_path_factory.mktemp("versions") / "cassettes")


def replay(pytester: pytest.Pytester, root: Path, *args: str) -> pytest.RunResult:
    return sys1cal(pytester, f"--sys1cal-cassettes={root}", f"--sys1cal-thresholds={THRESHOLDS}", *args)


def output(result: pytest.RunResult) -> str:
    return result.stdout.str() + result.stderr.str()


def usage_error(result: pytest.RunResult) -> str:
    """The one error line of a refused run (exit 4, no traceback)."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)[-2000:]
    text = output(result)
    assert "Traceback" not in text and "INTERNALERROR" not in text, text[-2000:]
    errors = [line for line in text.splitlines() if line.startswith("ERROR: ")]
    assert len(errors) == 1, text[-2000:]
    return errors[0]


def test_a_version_baseline_fails_the_worse_version_with_the_delta_of_a_saved_report(
    pytester: pytest.Pytester, root: Path, tmp_path: Path
) -> None:
    before = snapshot(root)
    saved = {version: tmp_path / f"{version}.json" for version in (OLD, NEW)}
    for version, path in saved.items():
        made = replay(pytester, root, f"--sys1cal-model-version={version}", f"--sys1cal-report={path}")
        assert made.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    # Both ways: the worse version against the old one, and the old one against the worse one.
    for new, old in ((NEW, OLD), (OLD, NEW)):
        by_version, by_report = tmp_path / f"{new}-v.json", tmp_path / f"{new}-r.json"
        folder = replay(pytester, root, f"--sys1cal-model-version={new}", f"--sys1cal-baseline={old}",
                         f"--sys1cal-report={by_version}")  # fmt: skip
        report = replay(pytester, root, f"--sys1cal-model-version={new}", f"--sys1cal-baseline={saved[old]}",
                         f"--sys1cal-report={by_report}")  # fmt: skip
        rows = regression_rows(by_version)
        assert rows == regression_rows(by_report)  # verdicts, Δ, bounds, details: identical
        assert len(rows) == 3 and folder.ret == report.ret
    # The done-when command: one run, the regression gates FAILED where the degraded copy is worse.
    failing = replay(pytester, root, f"--sys1cal-model-version={NEW}", f"--sys1cal-baseline={OLD}")
    assert failing.ret == pytest.ExitCode.TESTS_FAILED
    failing.stdout.fnmatch_lines(
        [
            f"Upgrade comparison against the baseline {OLD} (paired by rendering)",
            "Noul mean OVL *0.9183*0.8362*-0.0822*FAILED",
            "Choice mean OVL *0.7638*0.8023*+0.0385*passed",
            "Score mean OVL *0.8861*0.8211*-0.0651*FAILED",
            f"*Regression margins: δ 0.02 *α 0.05, inconclusive: fail; from {THRESHOLDS}, jev.regression",
        ]
    )
    verdicts = {row["name"]: row["verdict"] for row in regression_rows(tmp_path / f"{NEW}-v.json")}
    assert verdicts == {
        "regression.noul.mean_ovl": "FAILED",
        "regression.choice.mean_ovl": "passed",
        "regression.score.mean_ovl": "FAILED",
    }
    assert snapshot(root) == before  # the baseline folder is replayed, never written


def test_a_version_baseline_reads_the_same_cassettes_as_that_versions_own_run(root: Path) -> None:
    """The replay outside pytest builds the report a run of that version writes (the pinned golden report)."""
    from pytest_sys1cal.dataset import load_dataset
    from pytest_sys1cal.models import make_adapter
    from pytest_sys1cal.versions.replay import open_version, replay_folder, version_report
    from tests.reports import golden

    dataset = load_dataset("sys1cal-v1")
    adapter = make_adapter("jev", [], version=OLD, base_url=None, environ={})
    folder = open_version(root, "jev", OLD, adapter)
    rows = replay_folder(folder, dataset, adapter)
    report = version_report(folder, rows, dataset, None, seed=0, bootstrap=500, recalibration_splits=20).data
    pinned = golden("jev")
    assert report["items"] == pinned["items"]
    assert report["primitives"] == pinned["primitives"]
    assert report["uncertainty"]["test"] == pinned["uncertainty"]["test"]


def test_neither_a_file_nor_a_version_is_one_usage_error_listing_the_versions(
    pytester: pytest.Pytester, root: Path
) -> None:
    line = usage_error(replay(pytester, root, "--sys1cal-baseline=jev-1.12.0"))
    assert f"--sys1cal-baseline=jev-1.12.0: no file {pytester.path / 'jev-1.12.0'}" in line
    assert f"no recorded version 'jev-1.12.0' of model jev under {root / 'jev'}" in line
    assert f"(versions recorded there: {OLD}, {NEW})" in line
    assert "the path of a saved JSON report (--sys1cal-report), which must exist" in line


def test_a_version_compared_with_itself_is_a_usage_error(pytester: pytest.Pytester, root: Path) -> None:
    line = usage_error(replay(pytester, root, f"--sys1cal-model-version={OLD}", f"--sys1cal-baseline={OLD}"))
    assert f"--sys1cal-baseline={OLD} is this run's own version: a version compared with itself shows nothing" in line
    assert f"(recorded: {NEW})" in line


def test_a_file_wins_over_a_version_of_the_same_name(pytester: pytest.Pytester, root: Path) -> None:
    """An existing file is read as a saved report, even when a version has its name (here: not a report)."""
    (pytester.path / OLD).write_text("{}")
    line = usage_error(replay(pytester, root, f"--sys1cal-model-version={NEW}", f"--sys1cal-baseline={OLD}"))
    assert f"{pytester.path / OLD}: not a sys1cal report" in line


def test_a_version_folder_given_as_a_path_says_to_name_the_version(pytester: pytest.Pytester, root: Path) -> None:
    line = usage_error(
        replay(pytester, root, f"--sys1cal-model-version={NEW}", f"--sys1cal-baseline={root / 'jev' / OLD}")
    )
    assert f"{root / 'jev' / OLD} is a folder, not a saved report" in line
    assert f"(versions recorded there: {OLD}, {NEW})" in line


@pytest.fixture
def third(root: Path) -> Iterator[Path]:
    """A third version folder (jev-1.13.0 mixed a little with uniform), removed after the test."""
    folder = degrade(root / "jev" / OLD, root, "jev-1.15.0", weight=0.1)
    yield folder
    shutil.rmtree(folder)


def test_a_version_recorded_on_another_dataset_is_refused(pytester: pytest.Pytester, root: Path, third: Path) -> None:
    edit_manifest(third, dataset={"name": "fresh", "sha256": "a" * 64})
    line = usage_error(replay(pytester, root, f"--sys1cal-model-version={OLD}", "--sys1cal-baseline=jev-1.15.0"))
    assert (
        f"--sys1cal-baseline=jev-1.15.0: its cassettes ({third}) were recorded for dataset fresh sha256 {'a' * 64}"
        in line
    )
    assert "a paired comparison needs the same renderings" in line


def test_a_version_averaging_other_repeats_is_refused(pytester: pytest.Pytester, root: Path, third: Path) -> None:
    edit_manifest(third, repeats_per_answer=5)
    line = usage_error(replay(pytester, root, f"--sys1cal-model-version={OLD}", "--sys1cal-baseline=jev-1.15.0"))
    assert "--sys1cal-baseline jev-1.15.0: each of its answers averages 5 model repeat(s), this run's 10" in line


def test_a_version_that_does_not_replay_completely_is_refused(
    pytester: pytest.Pytester, root: Path, third: Path
) -> None:
    missing = next(third.glob("bayes/*.json"))
    missing.unlink()
    line = usage_error(replay(pytester, root, f"--sys1cal-model-version={OLD}", "--sys1cal-baseline=jev-1.15.0"))
    assert f"--sys1cal-baseline=jev-1.15.0: 1 of 365 renderings could not be replayed from {third}" in line
    assert f"{missing}: no cassette" in line
    assert "a baseline must replay the whole dataset" in line


def test_a_damaged_manifest_in_the_baseline_version_names_its_file(
    pytester: pytest.Pytester, root: Path, third: Path
) -> None:
    edit_manifest(third, repeats="ten")
    line = usage_error(replay(pytester, root, f"--sys1cal-model-version={OLD}", "--sys1cal-baseline=jev-1.15.0"))
    assert f"{third / 'manifest.json'}:" in line and "field 'repeats'" in line


def test_the_baseline_version_is_replayed_with_the_runs_seed(
    pytester: pytest.Pytester, root: Path, tmp_path: Path
) -> None:
    """Its report is built with this run's seed: the comparison equals that of a saved report made with it."""
    saved, by_version, by_report = tmp_path / "old-3.json", tmp_path / "v.json", tmp_path / "r.json"
    replay(pytester, root, "--sys1cal-seed=3", f"--sys1cal-report={saved}")
    replay(pytester, root, "--sys1cal-seed=3", f"--sys1cal-model-version={NEW}", f"--sys1cal-baseline={OLD}",
            f"--sys1cal-report={by_version}")  # fmt: skip
    replay(pytester, root, "--sys1cal-seed=3", f"--sys1cal-model-version={NEW}", f"--sys1cal-baseline={saved}",
            f"--sys1cal-report={by_report}")  # fmt: skip
    assert regression_rows(by_version) == regression_rows(by_report)
    assert json.loads(by_version.read_text())["gates"][-1]["details"]["seed"] == 3


def test_the_html_page_of_a_version_baseline_redraws_from_that_versions_own_report(
    pytester: pytest.Pytester, root: Path, tmp_path: Path
) -> None:
    """docs/html-report.md: the baseline's report a version replay builds is that version's --sys1cal-report."""
    pytest.importorskip("matplotlib", reason="the HTML report needs the html extra: pip install 'pytest-sys1cal[html]'")
    import pytest_sys1cal.report.figure_registry  # noqa: F401  (loaded once, outside the nested runs)
    from pytest_sys1cal.__main__ import main

    old, report, page = tmp_path / "old.json", tmp_path / "new.json", tmp_path / "new.html"
    replay(pytester, root, f"--sys1cal-report={old}")
    replay(pytester, root, f"--sys1cal-model-version={NEW}", f"--sys1cal-baseline={OLD}", f"--sys1cal-report={report}",
            f"--sys1cal-html={page}")  # fmt: skip
    assert main(["html", str(report), "--baseline", str(old), "-o", str(tmp_path / "redrawn.html")]) == 0
    assert (tmp_path / "redrawn.html").read_bytes() == page.read_bytes()
