"""The upgrade verdict where the decision is made: real pytest runs (pytester) of a degraded copy of the bundled
Jev set (tests/degraded.py: worse on Noul and Score) and of a better copy (every answer moved towards p*)
against `jev-1.13.0`, each replayed from cassettes on disk. The first line under `sys1cal`, the job summary's
heading, the pull-request comment, the JUnit XML and the JSON report's `comparison` block all state the verdict
and name both versions and where the baseline came from; the absolute gates keep a line of their own; the
renderings that moved most are listed with a D_i recomputed here from the cassettes themselves and a node id
that re-runs the rendering."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.runs import REPO, run, sys1cal
from tests.version_roots import BETTER, JEV, NEW, OLD, better_version, two_versions

FAILED_LINE = (
    "upgrade jev-1.13.0 → jev-1.14.0, 10-call mean: FAILED (Noul Δ −0.082, Score Δ −0.065 shown worse; Choice passed)"
)
PASSED_LINE = "upgrade jev-1.13.0 → jev-1.13.1, 10-call mean: passed (Noul Δ +0.008, Choice Δ +0.024, Score Δ +0.011 shown within the margin)"
DATASET = REPO / "fixtures" / "sys1cal-v1" / "v0.1.0_tiny_cleanvars_parallel_primitives.jsonl"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """jev-1.13.0 (the bundled set), jev-1.14.0 (degraded) and jev-1.13.1 (better), side by side."""
    cassettes = two_versions(tmp_path_factory.mktemp("upgrade") / "cassettes")
    better_version(cassettes)
    return cassettes


@pytest.fixture(scope="module")
def matplotlib_loaded() -> None:
    """pytester's in-process runs drop the modules first imported inside them: load the figure stack once."""
    pytest.importorskip("matplotlib", reason="the HTML report needs the html extra: pip install 'pytest-sys1cal[html]'")
    import pytest_sys1cal.report.figure_registry  # noqa: F401


def project(pytester: pytest.Pytester, root: Path) -> None:
    """A project as CI checks it out: its thresholds file and its cassettes inside the working directory."""
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    (pytester.path / "cassettes").symlink_to(root, target_is_directory=True)


def upgrade_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, version: str, *extra: str
) -> tuple[pytest.RunResult, dict[str, Path]]:
    files = {
        "report": pytester.path / "report.json",
        "html": pytester.path / "report.html",
        "comment": pytester.path / "comment.md",
        "junit": pytester.path / "junit.xml",
        "summary": pytester.path / "summary.md",
    }
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(files["summary"]))
    result = sys1cal(
        pytester,
        "--sys1cal-cassettes=cassettes",
        "--sys1cal-thresholds=thresholds.yaml",
        f"--sys1cal-model-version={version}",
        f"--sys1cal-baseline={OLD}",
        f"--sys1cal-report={files['report']}",
        f"--sys1cal-html={files['html']}",
        f"--sys1cal-markdown={files['comment']}",
        f"--junitxml={files['junit']}",
        *extra,
    )
    return result, files


def section(result: pytest.RunResult) -> list[str]:
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r"=+ sys1cal =+", line))
    return lines[start + 1 :]


def machine_paths(text: str, *paths: Path) -> list[str]:
    return [str(path) for path in paths if str(path) in text]


def junit_properties(path: Path) -> dict[str, str]:
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    return {p.get("name", ""): p.get("value", "") for p in suite.iter("property")}


@pytest.mark.usefixtures("matplotlib_loaded")
def test_a_worse_version_fails_the_upgrade_and_every_output_says_so_first(
    pytester: pytest.Pytester, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(pytester, root)
    result, files = upgrade_run(pytester, monkeypatch, NEW)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # as before: the exit status does not change
    lines = section(result)
    assert lines[0] == f"{FAILED_LINE} [baseline: version folder cassettes/jev/{OLD}]"
    # Under the verdict, why each primitive that failed moved (the degraded copy mixes answers with uniform: a
    # monotone change, docs/statistics.md §8.5), then the absolute gates' own line.
    assert [line.split(" — ")[0] for line in lines[1:3]] == [
        "  why: Noul: miscalibration",
        "  why: Score: miscalibration",
    ]
    assert lines[3] == "absolute gates: 10 of 21 FAILED"
    assert lines[4].startswith(f"jev {NEW} (reconstructed cassettes")
    comparison = json.loads(files["report"].read_text(encoding="utf-8"))["comparison"]
    assert comparison["headline"] == FAILED_LINE and comparison["verdict"] == "FAILED"
    assert comparison["baseline"] == {
        "model": "jev",
        "version": OLD,
        "source": "reconstructed",
        "origin": "version folder",
        "location": f"cassettes/jev/{OLD}",
    }
    assert comparison["candidate"] == {"model": "jev", "version": NEW, "source": "reconstructed"}
    assert comparison["absolute_gates"]["line"] == "absolute gates: 10 of 21 FAILED"
    assert comparison["absolute_gates"]["verdicts"] == {"FAILED": 10, "passed": 11}
    gates = {g["name"]: g for g in json.loads(files["report"].read_text(encoding="utf-8"))["gates"]}
    for prim, verdict in (("noul", "FAILED"), ("choice", "passed"), ("score", "FAILED")):
        row, details = comparison["primitives"][prim], gates[f"regression.{prim}.mean_ovl"]["details"]
        assert row["verdict"] == verdict
        for key in ("difference", "lower", "upper", "lower_level", "upper_level", "margin", "fail_margin", "n"):
            assert row[key] == details[key], (prim, key)
        assert row["lower"] < row["difference"] < row["upper"]
        assert (row["margin"], row["fail_margin"]) == (0.02, 0.01)
    # The job summary's heading, the comment, the JUnit XML and the HTML banner say it too.
    summary = files["summary"].read_text(encoding="utf-8")
    assert summary.startswith(f"### ❌ Sys1Cal {FAILED_LINE}\n\n- **Why:** Noul: miscalibration — ")
    assert "\n\n❌ **Absolute gates: 10 of 21 FAILED**" in summary.split("\n### ", 1)[0]
    comment = files["comment"].read_text(encoding="utf-8")
    assert comment.startswith("<!-- pytest-sys1cal: pull-request comment -->\n### ❌ Sys1Cal upgrade jev-1.13.0 → ")
    assert "**Noul Δ −0.082, Score Δ −0.065 shown worse; Choice passed**" in comment
    assert "❌ **Absolute gates: 10 of 21 FAILED**" in comment and "`noul.min_mean_ovl`" in comment
    assert "| Noul | 0.9183 | 0.8362 | -0.0822 | -0.0992 (97.5%) | -0.0636 (98.3%) | 0.02 / 0.01 | FAILED |" in comment
    html_text = files["html"].read_text(encoding="utf-8")
    for text in (summary, comment, html_text, files["report"].read_text(encoding="utf-8")):
        assert not machine_paths(text, pytester.path, REPO, root), text[:2000]  # no absolute thresholds path
    # One failure count at the end, in the terms of pytest's own closing line (issue 37).
    count = next(k for k, line in enumerate(lines) if line.startswith("gates: "))
    assert lines[count - 1 : count + 1] == [
        f"{FAILED_LINE} [baseline: version folder cassettes/jev/{OLD}]",
        "gates: 12 of 24 FAILED (10 of 21 absolute, 2 of 3 upgrade); pytest's closing line counts 12 failed: these "
        "gates",
    ]
    result.assert_outcomes(failed=12, passed=365)
    # docs/output.md's "The pull-request comment" quotes this comment, as this run writes it (its folded table
    # cut short).
    page = (REPO / "docs" / "output.md").read_text(encoding="utf-8")
    example = page.split("\n## The pull-request comment\n", 1)[1].split("\n## ", 1)[0]
    quoted = [line.removeprefix(">").removeprefix(" ") for line in example.splitlines() if line.startswith(">")]
    written = comment.splitlines()[1:]
    cut = quoted.index(
        "<details><summary>Renderings that moved most against jev-1.13.0: top 10 of 365 paired, lowest D first</summary>"
    )
    assert quoted[: cut + 5] == written[: cut + 5]
    assert junit_properties(files["junit"]) == {
        "sys1cal_upgrade": FAILED_LINE,
        "sys1cal_upgrade_verdict": "FAILED",
        "sys1cal_absolute_gates": "absolute gates: 10 of 21 FAILED",
    }
    html = files["html"].read_text(encoding="utf-8")
    body = html[html.index("<body>") :]
    assert body.index('class="upgrade failed"') < body.index("<h1>")  # the verdict above everything
    assert "✗ Upgrade jev-1.13.0 → jev-1.14.0, 10-call mean: FAILED</p>" in body
    assert "Absolute gates: 10 of 21 FAILED</b> " in body and '<span class="names">FAILED: noul.min_mean_ovl, ' in body


@pytest.mark.usefixtures("matplotlib_loaded")
def test_a_better_version_passes_the_upgrade_beside_its_failed_absolute_gates(
    pytester: pytest.Pytester, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(pytester, root)
    result, files = upgrade_run(pytester, monkeypatch, BETTER)
    # Two absolute gates fail (the shipped swap gates, off only for jev-1.13.0, whose cassettes lack the
    # swapped Choice): the run fails as before, but the upgrade's own verdict is passed, and said first.
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    lines = section(result)
    assert lines[:2] == [
        f"{PASSED_LINE} [baseline: version folder cassettes/jev/{OLD}]",
        "absolute gates: 2 of 21 FAILED",
    ]
    recap = lines.index(lines[0], 1)  # and repeated under the gate block, where a CI log ends, with the one count
    assert lines[recap - 1 : recap + 2] == [
        "",
        lines[0],
        "gates: 2 of 24 FAILED (2 of 21 absolute, 0 of 3 upgrade); pytest's closing line counts 2 failed: these gates",
    ]
    assert "otherwise this is a regression" in lines[recap - 2].lower()
    comparison = json.loads(files["report"].read_text(encoding="utf-8"))["comparison"]
    assert comparison["verdict"] == "passed" and comparison["headline"] == PASSED_LINE
    assert {p: row["verdict"] for p, row in comparison["primitives"].items()} == dict.fromkeys(
        ("noul", "choice", "score"), "passed"
    )
    assert all(row["lower"] > -row["margin"] for row in comparison["primitives"].values())
    summary = files["summary"].read_text(encoding="utf-8")
    assert summary.startswith(f"### ✅ Sys1Cal {PASSED_LINE}\n\n❌ **Absolute gates: 2 of 21 FAILED**")
    html = files["html"].read_text(encoding="utf-8")
    assert (
        '<div class="upgrade passed" id="upgrade-verdict"><p class="head">✓ Upgrade jev-1.13.0 → jev-1.13.1, 10-call mean: passed'
        in html
    )
    assert "FAILED: choice.max_swap_shift, choice.max_first_position_bias</span>" in html
    assert junit_properties(files["junit"])["sys1cal_upgrade_verdict"] == "passed"


def test_a_saved_report_says_what_it_was_compared_with(
    pytester: pytest.Pytester, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_sys1cal.document import read_report

    project(pytester, root)
    shutil.copy(REPO / "tests" / "golden" / "jev-report.json", pytester.path / "baseline.json")
    report = pytester.path / "report.json"
    result = sys1cal(pytester, "--sys1cal-cassettes=cassettes", "--sys1cal-thresholds=thresholds.yaml", f"--sys1cal-model-version={NEW}", "--sys1cal-baseline=baseline.json", f"--sys1cal-report={report}")  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert section(result)[0] == f"{FAILED_LINE} [baseline: saved report baseline.json]"
    read_alone = read_report(report)["comparison"]
    assert read_alone["baseline"] == {
        "model": "jev",
        "version": OLD,
        "source": "reconstructed",
        "origin": "saved report",
        "location": "baseline.json",
    }
    assert read_alone["headline"] == FAILED_LINE


def test_the_bundled_reference_as_baseline_is_named_as_such(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A project with only its new version recorded: jev-1.13.0 comes from the bundled reference cassettes."""
    from tests.degraded import degrade

    degrade(JEV, pytester.path / "cassettes", NEW)
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    report = tmp_path / "report.json"
    result = sys1cal(pytester, f"--sys1cal-model-version={NEW}", f"--sys1cal-baseline={OLD}", f"--sys1cal-report={report}")  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert section(result)[0] == f"{FAILED_LINE} [baseline: bundled reference jev/{OLD}]"
    side = json.loads(report.read_text(encoding="utf-8"))["comparison"]["baseline"]
    assert (side["origin"], side["location"]) == ("bundled reference", f"jev/{OLD}")


def test_no_baseline_no_comparison_block(pytester: pytest.Pytester, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = sys1cal(pytester, f"--sys1cal-cassettes={REPO / 'cassettes'}", f"--sys1cal-report={report}")
    assert result.ret == pytest.ExitCode.OK
    assert "comparison" not in json.loads(report.read_text(encoding="utf-8"))
    assert section(result)[0].startswith(f"jev {OLD} (reconstructed cassettes")


# ----------------------------------------------------------------- what regressed, rendering by rendering


def cassette_answers(folder: Path, family: str, short_id: str) -> dict[str, float]:
    """Noul, Choice's P(True) and Score's expectation μ_S of one rendering, read from its cassette file with
    nothing of the plugin: the mean over the recorded repeats."""
    cassette = json.loads((folder / family / f"{short_id}.json").read_text(encoding="utf-8"))
    bodies = [json.loads(i["response"]["body"]["string"])["answers"] for i in cassette["interactions"]]
    values: dict[str, list[float]] = {"noul": [], "choice": [], "score": []}
    for answers in bodies:
        values["noul"].append(answers["noul"]["noul"])
        values["choice"].append(answers["choice"]["probabilities"]["True"])
        levels = answers["score"]["probabilities"]
        values["score"].append(sum(int(j) * q for j, q in levels.items()) / 9 / sum(levels.values()))
    return {prim: sum(v) / len(v) for prim, v in values.items()}


def p_stars() -> dict[str, float]:
    lines = DATASET.read_text(encoding="utf-8").splitlines()
    return {(row := json.loads(line))["instance_id"]: row["gold_distribution"]["True"] for line in lines}


def test_the_moved_renderings_are_the_cassettes_own_differences(
    pytester: pytest.Pytester, root: Path, tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    result = sys1cal(pytester, f"--sys1cal-cassettes={root}", f"--sys1cal-thresholds={REPO / 'thresholds.yaml'}", f"--sys1cal-model-version={NEW}", f"--sys1cal-baseline={OLD}", f"--sys1cal-report={report}")  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    rows = json.loads(report.read_text(encoding="utf-8"))["comparison"]["renderings"]
    stars = p_stars()
    assert len(rows) == len(stars) == 365
    worst = []
    for row in rows:
        short = row["instance_id"].removesuffix("__parallel_primitives")
        assert row["node_id"] == f"sys1cal::jev[{row['family']}/{short}]"
        old = cassette_answers(root / "jev" / OLD, row["family"], short)
        new = cassette_answers(root / "jev" / NEW, row["family"], short)
        p = stars[row["instance_id"]]
        for prim in ("noul", "choice", "score"):
            d = (1 - abs(new[prim] - p)) - (1 - abs(old[prim] - p))
            assert row["d"][prim] == pytest.approx(d, abs=1e-9), (row["instance_id"], prim)
            assert row["baseline"][prim] == pytest.approx(old[prim], abs=1e-12)
            assert row["new"][prim] == pytest.approx(new[prim], abs=1e-12)
        worst.append(min(row["d"].values()))
    assert worst == sorted(worst) and worst[0] < -0.2  # the rendering that dropped most comes first
    # The terminal's top 5 are the JSON's first 5, each printed with its node id.
    lines = section(result)
    head = next(i for i, line in enumerate(lines) if line.startswith("Renderings that moved most against jev-1.13.0"))
    assert lines[head] == "Renderings that moved most against jev-1.13.0: top 5 of 365 paired, lowest D first"
    printed = [line.split()[0] for line in lines[head + 3 : head + 8]]
    assert printed == [row["node_id"] for row in rows[:5]]


def test_the_printed_node_id_reruns_that_rendering(pytester: pytest.Pytester, root: Path, tmp_path: Path) -> None:
    first = tmp_path / "first.json"
    whole = sys1cal(pytester, f"--sys1cal-cassettes={root}", f"--sys1cal-thresholds={REPO / 'thresholds.yaml'}", f"--sys1cal-model-version={NEW}", f"--sys1cal-baseline={OLD}", f"--sys1cal-report={first}")  # fmt: skip
    advice = next(line for line in section(whole) if "Re-run one offline with its node id" in line)
    command = advice.split("e.g. the first: ", 1)[1]
    top: dict[str, Any] = json.loads(first.read_text(encoding="utf-8"))["comparison"]["renderings"][0]
    assert command.endswith(f"'{top['node_id']}'")
    import shlex

    argv = shlex.split(command)
    assert argv[:2] == ["pytest", "--sys1cal"]
    again = tmp_path / "again.json"
    rerun = run(pytester, *argv[1:], f"--sys1cal-report={again}")
    rerun.assert_outcomes(passed=1)
    (item,) = json.loads(again.read_text(encoding="utf-8"))["items"]
    assert item["instance_id"] == top["instance_id"]
    assert (item["p_noul"], item["p_choice"], item["mu_score"]) == (
        top["new"]["noul"],
        top["new"]["choice"],
        top["new"]["score"],
    )


# ----------------------------------------------------------------- the pull-request comment's file


def test_the_comment_path_goes_through_the_output_boundary(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """--sys1cal-markdown is checked like the reports: not on the baseline it reads, nor on another output."""
    baseline = tmp_path / "baseline.json"
    shutil.copy(REPO / "tests" / "golden" / "jev-report.json", baseline)
    before = baseline.read_bytes()
    args = ("--sys1cal", f"--sys1cal-cassettes={REPO / 'cassettes'}", "-p", "no:cacheprovider")
    clash = run(pytester, *args, f"--sys1cal-baseline={baseline}", f"--sys1cal-markdown={baseline}")
    assert clash.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in clash.stderr.lines if line.startswith("ERROR:")] == [
        f"ERROR: --sys1cal-markdown {baseline}: this file is also this run's --sys1cal-baseline, which writing the "
        "report would destroy; write the report somewhere else"
    ]
    assert baseline.read_bytes() == before
    both = run(pytester, *args, f"--sys1cal-report={tmp_path / 'x'}", f"--sys1cal-markdown={tmp_path / 'x'}")
    assert both.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: --sys1cal-markdown {tmp_path / 'x'}: the same file as --sys1cal-report" in both.stderr.str()


def test_the_comment_without_a_baseline_says_the_gates_verdict(pytester: pytest.Pytester, tmp_path: Path) -> None:
    comment = tmp_path / "comment.md"
    result = sys1cal(pytester, f"--sys1cal-cassettes={REPO / 'cassettes'}", f"--sys1cal-thresholds={REPO / 'thresholds.yaml'}", f"--sys1cal-markdown={comment}")  # fmt: skip
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"Markdown comment written to {comment}"])
    assert comment.read_text(encoding="utf-8") == (
        "<!-- pytest-sys1cal: pull-request comment -->\n"
        "### ✅ Sys1Cal calibration: jev jev-1.13.0 — every gate in force passed; no upgrade comparison made\n\n"
        "**No upgrade comparison was made:** this run had no baseline, so its verdict is the thresholds file's floors "
        "and ceilings alone, not whether this version is as good as the one it replaces. To compare, set "
        "`BASELINE_VERSION` in the workflow `init` wrote (or pass `--sys1cal-baseline=VERSION`, a version folder "
        "beside this one or a saved JSON report).\n"
    )
    # The λ gate's observed value is the p-value of its test, and says so.
    result.stdout.fnmatch_lines(["uncertainty.require_lambda_positive *p = 1.0e-10 *α = 0.0100 *passed"])
