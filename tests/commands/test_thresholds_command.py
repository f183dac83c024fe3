"""`python -m pytest_sys1cal thresholds REPORT.json`: the section it prints is read by the plugin's own thresholds
reader, passes on the cassettes the report came from, fails on a clearly worse model (tests/degraded.py), and
can be appended with `>>` only where that gives the file exactly the printed gates."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_sys1cal.bundled import model_section, preamble
from pytest_sys1cal.defaults import UPGRADE_RESAMPLES
from pytest_sys1cal.gates.config import parse_thresholds
from pytest_sys1cal.gates.schema import UpgradeConfig
from pytest_sys1cal.gates.thresholds_rule import CHOICE_GATES, PRIMITIVE_GATES, threshold_rule
from tests.degraded import degrade
from tests.runs import CASSETTES, GOLDEN, REPO, sys1cal


def thresholds(*args: str, cwd: Path, append_to: str | None = None) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it; with append_to, through a real shell's `>>`."""
    command = [sys.executable, "-m", "pytest_sys1cal", "thresholds", *args]
    if append_to is None:
        return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)
    line = f"{shlex.join(command)} >> {shlex.quote(append_to)}"
    return subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True, timeout=120)


def expected_gates(report: dict[str, Any]) -> dict[str, float]:
    result = threshold_rule(report["items"])
    gates = {f"{lim.primitive}.{lim.key}": lim.limit for lim in result.limits if lim.limit is not None}
    if result.uncertainty.flag:
        gates[f"uncertainty.{result.uncertainty.flag}"] = result.uncertainty.alpha
    return gates


def jev_only_file() -> str:
    """A thresholds file as `init` writes it for jev: the shipped jev section, last in the file."""
    shipped = (REPO / "thresholds.yaml").read_text(encoding="utf-8")
    return preamble(shipped) + model_section(shipped, "jev")


# ================================================================== (a) read by the plugin's own reader


@pytest.mark.parametrize(
    ("name", "model", "version"),
    [("jev", "jev", "jev-1.13.0"), ("semif", "semif", None), ("typed-gguf", "systemone", "typed-gguf-smollm2-135m")],
)
def test_the_printed_section_is_read_by_the_plugins_reader(tmp_path: Path, name: str, model: str, version: str) -> None:
    report_path = GOLDEN / f"{name}-report.json"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    args = [str(report_path), *(["--version"] if version else [])]
    done = thresholds(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    resolved = parse_thresholds(text, "printed", model, version or report["model"]["version"])
    assert {gate.name: gate.limit for gate in resolved.gates} == expected_gates(report)
    assert resolved.layers == ((model, f"{model}[{version}]") if version else (model,))
    assert resolved.regression == UpgradeConfig()  # the defaults, and written out:
    section = yaml.safe_load(text)[model]
    regression = (section[version] if version else section)["regression"]
    assert regression == {
        "alpha": 0.05,
        "max_drop_mean_ovl": 0.02,
        "fail_drop_mean_ovl": 0.01,
        "primitives": ["noul", "choice", "score"],
        "resamples": UPGRADE_RESAMPLES,
    }
    # Each limit carries its derivation: measured value and SE.
    for line in text.splitlines():
        if line.strip().split(":")[0] in {key for key, _bound, _high in (*PRIMITIVE_GATES, *CHOICE_GATES)}:
            assert "# " in line and "·" in line and "=" in line.split("#", 1)[1], line


def test_gates_not_measured_are_left_out_with_the_reason(tmp_path: Path) -> None:
    done = thresholds(str(GOLDEN / "jev-report.json"), cwd=tmp_path)
    assert "max_swap_shift" not in yaml.safe_load(done.stdout)["jev"]["choice"]
    assert (
        "# max_swap_shift: left out, not measured: no rendering carries a swapped Choice (e.g. reconstructed "
        "cassettes)" in done.stdout
    )
    semif = thresholds(str(GOLDEN / "semif-report.json"), cwd=tmp_path).stdout
    assert "# max_first_position_bias: left out, its limit would be 0.5, which no run can fail" in semif
    assert yaml.safe_load(semif)["semif"]["uncertainty"] == {"require_lambda_zero": True, "alpha": 0.01}


# ============================================== (b) passes on its own cassettes, (c) fails on a worse model


@pytest.mark.parametrize(
    ("model", "version", "shape"),
    [("jev", "jev-1.13.0", []), ("systemone", "typed-gguf-smollm2-135m", ["--version"])],
)
def test_the_section_passes_on_the_cassettes_the_report_came_from(
    pytester: pytest.Pytester, model: str, version: str, shape: list[str]
) -> None:
    where = [f"--sys1cal-cassettes={CASSETTES}", f"--sys1cal-model={model}", f"--sys1cal-model-version={version}"]
    assert sys1cal(pytester, *where, "--sys1cal-report=first.json").ret == pytest.ExitCode.OK
    printed = thresholds("first.json", *shape, cwd=pytester.path)
    assert printed.returncode == 0, printed.stderr
    (pytester.path / "section.yaml").write_text(printed.stdout, encoding="utf-8")
    again = sys1cal(pytester, *where, "--sys1cal-thresholds=section.yaml", "--sys1cal-report=again.json")
    assert again.ret == pytest.ExitCode.OK, again.stdout.str()[-3000:]
    gates = json.loads((pytester.path / "again.json").read_text(encoding="utf-8"))["gates"]
    first = json.loads((pytester.path / "first.json").read_text(encoding="utf-8"))
    assert {gate["name"] for gate in gates} == set(expected_gates(first))
    assert all(gate["verdict"] == "passed" for gate in gates), gates


def test_the_section_fails_on_a_clearly_worse_model(pytester: pytest.Pytester, tmp_path: Path) -> None:
    printed = thresholds(str(GOLDEN / "jev-report.json"), cwd=tmp_path)
    (pytester.path / "section.yaml").write_text(printed.stdout, encoding="utf-8")
    root = tmp_path / "cassettes"
    degrade(CASSETTES / "jev" / "jev-1.13.0", root, "jev-1.14.0")
    worse = sys1cal(
        pytester,
        f"--sys1cal-cassettes={root}",
        "--sys1cal-model-version=jev-1.14.0",
        "--sys1cal-thresholds=section.yaml",
        "--sys1cal-report=worse.json",
    )
    assert worse.ret == pytest.ExitCode.TESTS_FAILED
    verdicts = {g["name"]: g["verdict"] for g in json.loads((pytester.path / "worse.json").read_text())["gates"]}
    # Answers pulled halfway to 0.5 lose mean OVL on Noul and Score and fail their floors and ceilings. Jev's
    # Choice is overconfident (the paper's point), so the same mixing brings it closer to p*: its gates pass.
    for prim in ("noul", "score"):
        for key in ("min_mean_ovl", "min_median_ovl", "max_ece", "max_brier"):
            assert verdicts[f"{prim}.{key}"] == "FAILED", (prim, key)
    worse.stdout.fnmatch_lines(["*noul.min_mean_ovl*0.8362*0.9000*FAILED*"])


def test_the_degraded_copy_is_a_valid_cassette_folder_of_its_own(tmp_path: Path) -> None:
    folder = degrade(CASSETTES / "jev" / "jev-1.13.0", tmp_path, "jev-1.14.0", weight=0.5)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert (manifest["version"], manifest["server_model"]) == ("jev-1.14.0", "jev-1.14.0")
    original = CASSETTES / "jev" / "jev-1.13.0" / "bayes" / "bayes__seed_000042__repr_counts.json"
    before = json.loads(original.read_text())["interactions"][0]
    after = json.loads((folder / "bayes" / original.name).read_text())["interactions"][0]
    assert after["request"]["body"] == before["request"]["body"].replace('"jev-1.13.0"', '"jev-1.14.0"', 1)
    old, new = (json.loads(x["response"]["body"]["string"])["answers"] for x in (before, after))
    assert new["noul"]["noul"] == pytest.approx((old["noul"]["noul"] + 0.5) / 2)
    assert new["choice"]["probabilities"]["True"] == pytest.approx((old["choice"]["probabilities"]["True"] + 0.5) / 2)
    assert new["score"]["probabilities"]["0"] == pytest.approx(old["score"]["probabilities"]["0"] / 2 + 0.05)
    assert sum(new["score"]["probabilities"].values()) == pytest.approx(1)
    assert len(list(folder.glob("*/*.json"))) == 365


# ========================================================================================== appending


def test_a_version_block_appended_with_shell_append_gives_the_printed_gates(tmp_path: Path) -> None:
    (tmp_path / "thresholds.yaml").write_text(jev_only_file(), encoding="utf-8")
    report = GOLDEN / "jev-report.json"
    done = thresholds(str(report), "--version", "jev-1.14.0", cwd=tmp_path, append_to="thresholds.yaml")
    assert done.returncode == 0, done.stderr
    assert "checked against thresholds.yaml" in done.stderr
    text = (tmp_path / "thresholds.yaml").read_text(encoding="utf-8")
    new = parse_thresholds(text, "t", "jev", "jev-1.14.0")
    # The jev section's option-swap gates are not measured on these cassettes: the block sets them to null.
    assert {g.name: g.limit for g in new.gates} == expected_gates(json.loads(report.read_text()))
    assert "max_swap_shift: null" in text
    # The jev section sets decisions and regression: the block leaves them to it.
    assert "    # decisions: as in jev's section\n    # regression: as in jev's section\n" in text
    assert new.regression == parse_thresholds(jev_only_file(), "t", "jev", None).regression
    # The rest of the file means what it meant.
    for version in ("jev-1.13.0", None):
        before = parse_thresholds(jev_only_file(), "t", "jev", version)
        after = parse_thresholds(text, "t", "jev", version)
        assert [(g.name, g.limit) for g in after.gates] == [(g.name, g.limit) for g in before.gates]


def test_a_new_file_or_one_without_the_model_takes_the_models_section(tmp_path: Path) -> None:
    report = GOLDEN / "typed-gguf-report.json"
    first = thresholds(str(report), cwd=tmp_path, append_to="thresholds.yaml")  # `>>` creates the file empty
    assert first.returncode == 0, first.stderr
    (tmp_path / "other.yaml").write_text(jev_only_file(), encoding="utf-8")
    second = thresholds(str(report), "--file", "other.yaml", cwd=tmp_path, append_to="other.yaml")
    assert second.returncode == 0, second.stderr
    for name in ("thresholds.yaml", "other.yaml"):
        parsed = parse_thresholds((tmp_path / name).read_text(), name, "systemone", "any-version")
        assert {g.name: g.limit for g in parsed.gates} == expected_gates(json.loads(report.read_text()))


def refused(tmp_path: Path, text: str, *args: str) -> str:
    """Run with `>>` onto a file holding `text`: exit 4, the file untouched, one line on stderr."""
    (tmp_path / "thresholds.yaml").write_text(text, encoding="utf-8")
    done = thresholds(str(GOLDEN / "jev-report.json"), *args, cwd=tmp_path, append_to="thresholds.yaml")
    assert done.returncode == 4
    assert (tmp_path / "thresholds.yaml").read_text(encoding="utf-8") == text
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr.strip()


def test_a_second_section_for_the_model_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, jev_only_file())
    line = jev_only_file().splitlines().index("jev:") + 1
    assert message.startswith(f"error: thresholds.yaml:{line}: jev already has a section; a second one appended")
    assert "--version" in message


def test_a_version_that_has_a_block_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, jev_only_file(), "--version")  # the report's version, jev-1.13.0
    assert "jev already has a block for jev-1.13.0" in message


def test_a_block_that_would_land_under_another_model_is_refused(tmp_path: Path) -> None:
    text = (REPO / "thresholds.yaml").read_text(encoding="utf-8")
    message = refused(tmp_path, text, "--version", "jev-1.14.0")
    assert "jev's section is followed by semif's" in message and "move jev's section to the end" in message


def test_a_broken_thresholds_file_is_named_not_appended_to(tmp_path: Path) -> None:
    message = refused(tmp_path, "jev:\n  choise: {min_mean_ovl: 0.7}\n", "--version", "x")
    assert message.startswith("error: thresholds.yaml:2: jev.choise: unknown key 'choise'")
    assert message.endswith("(fix thresholds.yaml first: this command only reads it)")


def test_paste_reads_no_file(tmp_path: Path) -> None:
    (tmp_path / "thresholds.yaml").write_text(jev_only_file(), encoding="utf-8")
    done = thresholds(str(GOLDEN / "jev-report.json"), "--paste", cwd=tmp_path)
    assert done.returncode == 0 and yaml.safe_load(done.stdout)["jev"]["noul"]["min_mean_ovl"] == 0.9


# ======================================================================================== bad input


@pytest.mark.parametrize(
    ("setup", "args", "expected"),
    [
        (None, ["missing.json"], "error: missing.json: cannot read it"),
        ("not json", ["r.json"], "error: r.json: not a JSON file"),
        ('{"schema": "x"}', ["r.json"], "error: r.json: not a sys1cal report"),
        ("partial", ["r.json"], "error: r.json: measured 5 of the dataset's 365 renderings"),
        ("full", ["r.json", "--resamples", "5"], "error: --resamples 5: too few for a standard error; give 20"),
    ],
)
def test_bad_input_is_one_line_and_exit_4(tmp_path: Path, setup: str | None, args: list[str], expected: str) -> None:
    report = json.loads((GOLDEN / "jev-report.json").read_text())
    if setup == "partial":
        report["items"] = report["items"][:5]
        report["counts"] = {**report["counts"], "measured": 5, "renderings": 5}
    if setup in ("partial", "full"):
        setup = json.dumps(report)
    if setup is not None:
        (tmp_path / "r.json").write_text(setup, encoding="utf-8")
    done = thresholds(*args, cwd=tmp_path)
    assert done.returncode == 4 and done.stdout == ""
    assert done.stderr.startswith(expected), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_fast_enough_for_a_packaging_test(tmp_path: Path) -> None:
    started = time.monotonic()
    done = thresholds(str(GOLDEN / "jev-report.json"), cwd=tmp_path)  # default resamples, a fresh interpreter
    elapsed = time.monotonic() - started
    assert done.returncode == 0
    assert elapsed < 15, f"{elapsed:.1f} s"


def test_help_lists_both_commands() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest_sys1cal", "--help"], capture_output=True, text=True)
    assert "thresholds" in done.stdout and "init" in done.stdout
    assert shutil.which("bash"), "the >> tests need bash"


# ================================================================== --update: rewritten in place, with a diff


def update(tmp_path: Path, report: str, *args: str) -> subprocess.CompletedProcess[str]:
    return thresholds(str(GOLDEN / f"{report}-report.json"), "--update", *args, cwd=tmp_path)


def test_update_adds_a_version_block_where_appending_was_refused(tmp_path: Path) -> None:
    """The shipped file: jev's section is followed by semif's, so `>>` refuses a jev version block; --update puts
    it at the end of jev's section, every other line as it was, and shows the change as a diff."""
    shipped = (REPO / "thresholds.yaml").read_text(encoding="utf-8")
    (tmp_path / "thresholds.yaml").write_text(shipped, encoding="utf-8")
    done = update(tmp_path, "jev", "--version", "jev-1.14.0", "--from-other-version")  # a 1.13.0 report
    assert done.returncode == 0, done.stderr
    after = (tmp_path / "thresholds.yaml").read_text(encoding="utf-8")
    added = [line[1:] for line in done.stdout.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert not [line for line in done.stdout.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert "".join(line + "\n" for line in added) in after
    assert after.replace("".join(line + "\n" for line in added), "", 1) == shipped  # nothing else moved
    assert after.index("  jev-1.14.0:") < after.index("\nsemif:")
    report = json.loads((GOLDEN / "jev-report.json").read_text())
    assert {g.name: g.limit for g in parse_thresholds(after, "t", "jev", "jev-1.14.0").gates} == expected_gates(report)
    # 19 of the shipped kinds and the optional MCB and DSC gates of every primitive (docs/thresholds.md)
    assert done.stderr.startswith("updated thresholds.yaml: 25 gates for jev jev-1.14.0 (the diff above;")
    again = update(tmp_path, "jev", "--version", "jev-1.14.0", "--from-other-version")
    assert again.returncode == 0 and again.stdout == ""
    assert "the gates of jev jev-1.14.0 are already these; nothing to change" in again.stderr
    assert (tmp_path / "thresholds.yaml").read_text(encoding="utf-8") == after


def test_update_rewrites_a_version_block_and_only_it(tmp_path: Path) -> None:
    shipped = (REPO / "thresholds.yaml").read_text(encoding="utf-8")
    (tmp_path / "thresholds.yaml").write_text(shipped, encoding="utf-8")
    done = update(tmp_path, "typed-gguf", "--version", "--min-slack", "0.02")
    assert done.returncode == 0, done.stderr
    after = (tmp_path / "thresholds.yaml").read_text(encoding="utf-8")
    report = json.loads((GOLDEN / "typed-gguf-report.json").read_text())
    expected = threshold_rule(report["items"], min_slack=0.02)
    gates = parse_thresholds(after, "t", "systemone", "typed-gguf-smollm2-135m").gates
    assert {g.name: g.limit for g in gates} == {
        f"{lim.primitive}.{lim.key}": lim.limit for lim in expected.limits if lim.limit is not None
    } | {"uncertainty.require_lambda_positive": 0.01}
    # Every other model and version reads as before, and the lines above the block are the shipped ones.
    for model, version in (("jev", None), ("jev", "jev-1.13.0"), ("semif", None), ("semif", "gemma-3-270m-q4_k_m")):
        before_gates = parse_thresholds(shipped, "t", model, version).gates
        assert [(g.name, g.limit) for g in parse_thresholds(after, "t", model, version).gates] == [
            (g.name, g.limit) for g in before_gates
        ]
    head = shipped.split("  typed-gguf-smollm2-135m:", 1)[0]
    assert after.startswith(head)
    assert "(minimum slack; 2·SE" in after.split(head, 1)[1]


def test_update_of_the_models_gates_keeps_its_settings_versions_and_comments(tmp_path: Path) -> None:
    text = jev_only_file()
    (tmp_path / "thresholds.yaml").write_text(text, encoding="utf-8")
    done = update(tmp_path, "typed-gguf", "--model", "jev", "--from-other-model")
    assert done.returncode == 0, done.stderr
    after = (tmp_path / "thresholds.yaml").read_text(encoding="utf-8")
    new = parse_thresholds(after, "t", "jev", None)
    assert {g.name: g.limit for g in new.gates} == expected_gates(
        json.loads((GOLDEN / "typed-gguf-report.json").read_text())
    )
    old = parse_thresholds(text, "t", "jev", None)
    assert (new.regression, new.decisions) == (old.regression, old.decisions)  # the team's settings stay
    for kept in (
        "  jev-1.13.0:\n    # The bundled cassettes are reconstructed from the paper's per-item outputs: no swapped Choice was asked.\n",
        "  # A version overrides the gates above for runs with --sys1cal-model-version equal to its key; keys it\n",
        "    # Upgrade gate against --sys1cal-baseline: mean OVL per primitive, paired by rendering, latent-problem\n",
        "  # Example, to be filled in from a jev-1.14.0 run:\n",
    ):
        assert kept in after, kept
    assert after.startswith(preamble((REPO / "thresholds.yaml").read_text(encoding="utf-8"))[:200])


@pytest.mark.parametrize(
    ("text", "args", "expected"),
    [
        ("jev: {noul: {min_mean_ovl: 0.5}}\n", [], "error: thresholds.yaml:1: jev's section is written in flow style"),
        ("jev:\n  choise: {min_mean_ovl: 0.7}\n", [], "error: thresholds.yaml:2: jev.choise: unknown key 'choise'"),
        ("jev: null\n", ["--paste"], "error: --update rewrites the thresholds file and --paste reads none"),
        ("jev: null\n", ["--min-slack", "-1"], "error: --min-slack -1: give a distance in [0, 1)"),
    ],
)
def test_update_refusals_write_nothing(tmp_path: Path, text: str, args: list[str], expected: str) -> None:
    (tmp_path / "thresholds.yaml").write_text(text, encoding="utf-8")
    done = update(tmp_path, "jev", *args)
    assert done.returncode == 4 and done.stdout == "", done.stderr
    assert done.stderr.startswith(expected), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert (tmp_path / "thresholds.yaml").read_text(encoding="utf-8") == text


def test_update_starts_a_file_that_does_not_exist(tmp_path: Path) -> None:
    done = update(tmp_path, "semif")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("--- thresholds.yaml (before)\n+++ thresholds.yaml (after)\n")
    assert list(yaml.safe_load((tmp_path / "thresholds.yaml").read_text())) == ["semif"]
