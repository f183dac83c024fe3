"""A model id apart from the version (issue 37, bullet 2): `--sys1cal-model-id` (ini `sys1cal_model_id`) is what
is sent and pinned, the version names the folder and the reports; the manifest keeps the id a version was
recorded under and a replay sends it (a baseline version too, whatever the run names); without an id nothing
recorded moves. In pytester against the jevcompat mock serving the ids a team's server answers as."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jevcompat.mock as jevcompat
import pytest

from tests.loopback import jevcompat_mock
from tests.runs import sys1cal


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch):
    """The mock serving the ids `prod` and `canary` only, none of the versions' names."""
    monkeypatch.setattr(jevcompat, "ACCEPTED_MODELS", {"prod", "canary"})
    listed = [
        {"name": name, "description": "a team's server", "release_date": "2026-10-01"} for name in ("prod", "canary")
    ]
    monkeypatch.setattr(jevcompat, "MODELS", listed)
    with jevcompat_mock(jevcompat.MockConfig(noise=0.5)) as running:
        yield running


@pytest.fixture
def common(pytester: pytest.Pytester, served) -> tuple[str, ...]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_sys1cal", "generate", "--seed", "5", "--problems", "4", "--out", "fresh.jsonl"],
        cwd=pytester.path,
        capture_output=True,
    )
    assert done.returncode == 0
    return (
        "--sys1cal-model=systemone",
        f"--sys1cal-base-url={served.url}",
        "--sys1cal-dataset=fresh.jsonl",
        "--sys1cal-rate=0",
        "--sys1cal-repeats=2",
    )


def manifest(root: Path, version: str) -> dict:
    return json.loads((root / "cassettes" / "systemone" / version / "manifest.json").read_text())


def test_the_version_alone_is_refused_by_a_server_that_answers_as_prod_and_the_stop_names_the_id_option(
    pytester: pytest.Pytester, common: tuple[str, ...]
) -> None:
    stopped = sys1cal(pytester, *common, "--sys1cal-model-version=my-model-1", "--sys1cal-record-mode=once")
    text = stopped.stdout.str()
    assert "the server does not serve the model 'my-model-1', sent from --sys1cal-model-version" in text
    assert "it serves: prod, canary" in text and "send one of them with --sys1cal-model-id" in text


def test_an_id_is_sent_pinned_and_kept_and_the_baseline_replays_under_its_own(
    pytester: pytest.Pytester, common: tuple[str, ...]
) -> None:
    root = pytester.path
    first = sys1cal(pytester, *common, "--sys1cal-model-version=v1", "--sys1cal-model-id=canary",
                    "--sys1cal-record-mode=once")  # fmt: skip
    assert first.ret == pytest.ExitCode.OK, first.stdout.str()[-2000:]
    assert manifest(root, "v1")["model_id"] == "canary"
    # The ini says prod for the project; v1's manifest says canary, and a baseline replays under its own id.
    pytester.makeini("[pytest]\nsys1cal_model_id = prod\n")
    second = sys1cal(pytester, *common, "--sys1cal-model-version=v2", "--sys1cal-record-mode=once",
                     "--sys1cal-baseline=v1", "--sys1cal-report=v2.json")  # fmt: skip
    assert second.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), second.stdout.str()[-2000:]
    assert manifest(root, "v2")["model_id"] == "prod"
    headline = next(line for line in second.stdout.lines if line.startswith("upgrade "))
    assert headline.startswith("upgrade canary (v1) → prod (v2), 2-call mean: ")  # no thresholds file: mean
    report = json.loads((root / "v2.json").read_text())
    assert report["model"]["model_id"] == "prod" and report["model"]["version"] == "v2"
    assert report["comparison"]["baseline"]["model_id"] == "canary"
    # The replay of v1, with the project's prod in the ini, is refused: its cassettes answer canary.
    refused = sys1cal(pytester, *common, "--sys1cal-model-version=v1")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "v1 was recorded under the model id 'canary' (its model_id), and this run sends 'prod'" in refused.stderr.str()
    )


def test_without_an_id_nothing_recorded_moves_and_an_id_equal_to_the_version_is_not_written(
    pytester: pytest.Pytester, common: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = pytester.path
    monkeypatch.setattr(jevcompat, "ACCEPTED_MODELS", jevcompat.ACCEPTED_MODELS | {"v1"})
    plain = sys1cal(pytester, *common, "--sys1cal-model-version=v1", "--sys1cal-record-mode=once",
                    "--sys1cal-report=v1.json")  # fmt: skip
    assert plain.ret == pytest.ExitCode.OK, plain.stdout.str()[-2000:]
    assert "model_id" not in manifest(root, "v1")
    assert "model_id" not in json.loads((root / "v1.json").read_text())["model"]
    same = sys1cal(pytester, *common, "--sys1cal-model-version=v1", "--sys1cal-model-id=v1")
    assert same.ret == pytest.ExitCode.OK  # the version is the id: said explicitly, it is the same run
    body = json.loads(next((root / "cassettes" / "systemone" / "v1").glob("*/*.json")).read_text())
    assert json.loads(body["interactions"][0]["request"]["body"])["model"] == "v1"


@pytest.mark.parametrize("given", ["my model", "prod\nx", "x" * 201])
def test_an_id_that_cannot_be_sent_as_meant_is_a_usage_error(pytester: pytest.Pytester, given: str) -> None:
    result = sys1cal(pytester, "--model=systemone", f"--sys1cal-model-id={given}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "a model id is printable text of at most 200 characters without spaces" in result.stderr.str()
