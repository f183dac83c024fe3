"""Issue 37's first two bullets end to end, in pytester against the jevcompat mock serving one model id, `prod`,
whatever version it runs (its answers a hash of the question plus logit noise σ drawn afresh per call, one
request in flight so each recording meets the same noise stream; 6 calls a rendering): a team trusts v1 (σ 3),
records it under
`--sys1cal-model-id=prod`, writes its gates (per call, as `init` set it up), and then

- v3, noisier (σ 6), better only as a 6-call mean, FAILS per call, and the verdict says which reading decided,
  with a notice that the 6-call-mean reading would have passed it;
- v2, deterministic, better on every call, passes per call where the 6-call mean would have FAILED it;
- each version was recorded under `prod` and says so (manifest, report, verdict `prod (v1) → prod (v3)`); the
  replay sends the recorded id by itself, and a run naming another id is refused in one line.

A fresh 20-problem dataset keeps it to seconds (at 20 the per-call Score comparison of v3 is inconclusive, Noul and
Choice FAILED; nothing here reads Score); bench/per_call_readings.py records the bundled 92 problems."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jevcompat.mock as jevcompat
import pytest
import yaml

from tests.loopback import jevcompat_mock
from tests.runs import sys1cal


@pytest.fixture
def prod(monkeypatch: pytest.MonkeyPatch):
    """The mock, serving and listing the one model id `prod`; its noise set per recording."""
    monkeypatch.setattr(jevcompat, "ACCEPTED_MODELS", {"prod"})
    monkeypatch.setattr(
        jevcompat, "MODELS", [{"name": "prod", "description": "a team's server", "release_date": "2026-10-01"}]
    )
    with jevcompat_mock(jevcompat.MockConfig()) as running:
        yield running


def command(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_sys1cal", *args], cwd=cwd, capture_output=True, text=True)


def line_starting(result: pytest.RunResult, start: str) -> str:
    return next(line for line in result.stdout.lines if line.startswith(start))


def test_a_noisier_candidate_fails_per_call_and_a_deterministic_one_passes(pytester: pytest.Pytester, prod) -> None:
    root = pytester.path
    assert command("generate", "--seed", "3", "--problems", "20", "--out", "fresh.jsonl", cwd=root).returncode == 0
    init = command("init", "--model", "systemone", "--version", "v1", "--model-id", "prod", cwd=root)
    assert init.returncode == 0 and 'sys1cal_model_id = "prod"' in init.stdout
    assert yaml.safe_load((root / "thresholds.yaml").read_text()) == {"systemone": {"reading": "call"}}
    common = ("--sys1cal-model=systemone", f"--sys1cal-base-url={prod.url}", "--sys1cal-dataset=fresh.jsonl")
    common += ("--sys1cal-rate=0", "--sys1cal-concurrency=1", "--sys1cal-repeats=6")

    def record(version: str, noise: float, *more: str) -> pytest.RunResult:
        prod.server.RequestHandlerClass.cfg.noise = noise
        prod.server.RequestHandlerClass.cfg.rng.seed(0)
        return sys1cal(pytester, *common, f"--sys1cal-model-version={version}",
                                  "--sys1cal-model-id=prod", "--sys1cal-record-mode=once",
                                  f"--sys1cal-report={version}.json", *more)  # fmt: skip

    first = record("v1", 3.0)
    assert first.ret == pytest.ExitCode.OK, first.stdout.str()[-3000:]
    assert json.loads((root / "cassettes/systemone/v1/manifest.json").read_text())["model_id"] == "prod"
    v1 = json.loads((root / "v1.json").read_text())
    assert v1["model"]["model_id"] == "prod" and v1["calls"]["measured"]
    assert (
        "notice: the server reported model jevcompat-mock-0.1, not the pinned prod: these answers are filed under v1"
        in first.stdout.lines
    )
    call, mean = v1["primitives"]["noul"]["per_call"]["mean_ovl"], v1["primitives"]["noul"]["mean_ovl"]
    assert call < mean - 0.05  # the 10-call mean hedged toward 0.5
    written = command("thresholds", "v1.json", "--update", cwd=root)
    assert written.returncode == 0, written.stderr
    gates = yaml.safe_load((root / "thresholds.yaml").read_text())["systemone"]
    assert gates["reading"] == "call" and gates["noul"]["min_mean_ovl"] <= call < gates["noul"]["min_mean_ovl"] + 0.05

    # The replay sends the id v1 was recorded under, with no id given; another id is refused before anything runs.
    replay = sys1cal(pytester, *common, "--sys1cal-model-version=v1")
    assert replay.ret == pytest.ExitCode.OK, replay.stdout.str()[-3000:]
    other = sys1cal(pytester, *common, "--sys1cal-model-version=v1", "--sys1cal-model-id=staging")
    assert other.ret == pytest.ExitCode.USAGE_ERROR
    refused = [line for line in other.stderr.lines if "recorded under the model id 'prod'" in line]
    assert refused == [
        f"ERROR: {root / 'cassettes/systemone/v1/manifest.json'}: v1 was recorded under the model id 'prod' (its "
        "model_id), and this run sends 'staging' (--sys1cal-model-id or the ini key sys1cal_model_id); its cassettes "
        "hold the answers to 'prod', so drop the id for this version (its manifest's is used), or record another "
        "version under 'staging' (re-recording this one whole: --sys1cal-record-mode=all)"
    ]

    noisier = record("v3", 6.0, "--sys1cal-baseline=v1")
    assert noisier.ret == pytest.ExitCode.TESTS_FAILED
    verdict = line_starting(noisier, "upgrade ")
    assert verdict.startswith("upgrade prod (v1) → prod (v3), per call: FAILED (Noul Δ −")
    report = json.loads((root / "v3.json").read_text())
    comparison = report["comparison"]
    assert (comparison["reading"], comparison["reading_label"]) == ("call", "per call")
    assert comparison["other_reading"]["label"] == "6-call mean" and comparison["other_reading"]["verdict"] == "passed"
    assert (
        comparison["primitives"]["noul"]["difference"]
        < 0
        < comparison["other_reading"]["primitives"]["noul"]["difference"]
    )
    said = [n for n in report["notices"] if n.startswith("the two readings disagree")]
    assert len(said) == 1 and "per call, the reading that decides, the upgrade FAILED" in said[0]
    assert "read as 6-call means it would be passed" in said[0]
    assert {g["metric"] for g in report["gates"] if g["name"] == "regression.noul.mean_ovl"} == {
        "primitives.noul.per_call.mean_ovl (new − baseline, paired)"
    }

    deterministic = record("v2", 0.0, "--sys1cal-baseline=v1")
    verdict = line_starting(deterministic, "upgrade ")
    assert verdict.startswith("upgrade prod (v1) → prod (v2), per call: passed (Noul Δ +"), verdict
    other_reading = json.loads((root / "v2.json").read_text())["comparison"]["other_reading"]
    assert other_reading["verdict"] == "FAILED"  # as 6-call means, the noisy v1's hedged answers would win
