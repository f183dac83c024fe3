"""Names a Windows or macOS checkout can hold (issue 36): a version or model named like a Windows device
(``CON``, ``aux``, ``NUL``, ``com1``, ``LPT1``, with or without an extension) or ending in a dot cannot be a
folder there, and one beside a folder whose name differs only in case is the same folder there. Each is refused
in one line before anything is read or written; the recordings run against a loopback /v1/systemone server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_sys1cal.errors import InputError
from pytest_sys1cal.names import ALLOWED, NotAName, case_twin, check_name, is_plain_name
from pytest_sys1cal.redact import Redactor
from pytest_sys1cal.store.folder import CassetteFolder
from tests.field import subset, tree_hashes
from tests.loopback import LoopbackServer
from tests.runs import sys1cal

NOT_PORTABLE = [
    "CON",
    "con",
    "aux",
    "Aux",
    "NUL",
    "nul.txt",
    "com1",
    "COM9",
    "LPT1",
    "lpt0.json",
    "prn.1.2",
    "v1.",
    "jev-1.14.",
]
STILL_NAMES = ["console", "com10", "lpt", "auxiliary", "nullable", "v1.0", "jev-1.14.0"]


@pytest.mark.parametrize("name", NOT_PORTABLE)
def test_a_name_windows_cannot_hold_is_not_a_name(name: str) -> None:
    assert not is_plain_name(name)
    with pytest.raises(NotAName, match="not a name Windows reserves"):
        check_name(name, "--sys1cal-model-version")


@pytest.mark.parametrize("name", STILL_NAMES)
def test_names_that_only_look_like_devices_stay_names(name: str) -> None:
    assert is_plain_name(name)


def test_a_case_twin_is_found_and_an_exact_name_is_not(tmp_path: Path) -> None:
    (tmp_path / "v1").mkdir()
    assert case_twin(tmp_path, "V1") == "v1"
    assert case_twin(tmp_path, "v1") is None
    assert case_twin(tmp_path, "v2") is None
    assert case_twin(tmp_path / "missing", "v1") is None


@pytest.mark.parametrize(("model", "version", "said"), [
    ("systemone", "JEV-1.13.0", "model version 'JEV-1.13.0': {root}/systemone already holds 'jev-1.13.0'"),
    ("SystemOne", "jev-1.13.0", "model 'SystemOne': {root} already holds 'systemone'"),
])  # fmt: skip
def test_a_folder_beside_its_case_twin_is_refused(tmp_path: Path, model: str, version: str, said: str) -> None:
    root = tmp_path / "cassettes"
    (root / "systemone" / "jev-1.13.0").mkdir(parents=True)
    with pytest.raises(InputError) as refused:
        CassetteFolder(root, model, version, "once", Redactor())
    text = str(refused.value)
    assert text.startswith(said.format(root=root)) and "differs only in case" in text


@pytest.fixture
def recorded(pytester: pytest.Pytester) -> Iterator[tuple[Path, Path, LoopbackServer]]:
    dataset = pytester.path / "six.jsonl"
    renderings = subset(dataset, 6)
    root = pytester.path / "cassettes"
    with LoopbackServer.for_renderings(renderings) as server:
        made = record(pytester, server.url, dataset, root, "--sys1cal-model-version=jev-1.13.0")
        assert made.ret == pytest.ExitCode.OK
        yield dataset, root, server


def record(pytester: pytest.Pytester, url: str, dataset: Path, root: Path, *args: str) -> pytest.RunResult:
    return sys1cal(pytester, "--sys1cal-model=systemone", f"--sys1cal-base-url={url}", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}", "--sys1cal-repeats=1", "--sys1cal-record-mode=once", *args)  # fmt: skip


@pytest.mark.parametrize("version", ["CON", "aux", "nul.txt", "com1", "LPT1", "v2.", "JEV-1.13.0"])
def test_recording_into_a_name_a_checkout_cannot_hold_is_refused(
    pytester: pytest.Pytester, recorded: tuple[Path, Path, LoopbackServer], version: str
) -> None:
    dataset, root, server = recorded
    before, asked = tree_hashes(pytester.path), server.requests
    result = record(pytester, server.url, dataset, root, f"--sys1cal-model-version={version}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output
    if version == "JEV-1.13.0":
        assert f"model version 'JEV-1.13.0': {root / 'systemone'} already holds 'jev-1.13.0'" in output
    else:
        assert [line for line in result.stderr.lines if line] == [
            f"ERROR: --sys1cal-model-version {version!r}: a version names its cassette folder (<cassette root>/<model>/"
            f"<version>), so it must be a plain name: {ALLOWED}"
        ]
    assert tree_hashes(pytester.path) == before and server.requests == asked
