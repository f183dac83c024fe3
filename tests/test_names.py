"""Names are names, not paths (issue 25): a model version, a model's name, a dataset's family and instance id,
a baseline or trend version become parts of paths, so each is checked against one plain-name pattern
(pytest_sys1cal/names.py) before anything is read or written, and refused in one usage error (exit 4).

The version-as-path cases are real recordings (record mode all) against a loopback /v1/systemone server into a
cassette root that already holds a recorded version: every file under the project, the cassette root's
parents included, is hashed before and after, and must be byte-identical (and the server never asked)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_sys1cal.dataset import DatasetError, load_dataset
from pytest_sys1cal.names import ALLOWED, NotAName, check_name, is_plain_name
from pytest_sys1cal.redact import Redactor
from pytest_sys1cal.store.folder import CassetteFolder
from tests.field import subset, tree_hashes
from tests.loopback import LoopbackServer
from tests.runs import sys1cal

WHY = "a version names its cassette folder (<cassette root>/<model>/<version>), so it must be a plain name"
# As the issue found them: into another version's folder, outside the model's folder, outside the cassette
# root (a longer climb), into the model's folder itself; and a few more a shell or a workflow input can carry.
BAD_VERSIONS = [
    "x/../jev-1.13.0",
    "../x",
    "../../../../x",
    ".",
    "..",
    "/tmp/x",
    "jev 1.14",
    "jev-1.14\nfake",
    "v1\\..\\x",
    "-rf",
    "",
]


def record(pytester: pytest.Pytester, url: str, dataset: Path, root: Path, *args: str) -> pytest.RunResult:
    return sys1cal(pytester, "--sys1cal-model=systemone", f"--sys1cal-base-url={url}", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}", "--sys1cal-repeats=1", *args)  # fmt: skip


@pytest.fixture
def recorded(pytester: pytest.Pytester) -> Iterator[tuple[Path, Path, LoopbackServer]]:
    """A project (the pytester folder) whose cassette root, three folders down, holds version jev-1.13.0 of
    systemone recorded from a loopback server: (dataset, cassette root, the server, still running)."""
    dataset = pytester.path / "six.jsonl"
    renderings = subset(dataset, 6)
    root = pytester.path / "p" / "q" / "r" / "cassettes"
    with LoopbackServer.for_renderings(renderings) as server:
        made = record(
            pytester, server.url, dataset, root, "--sys1cal-model-version=jev-1.13.0", "--sys1cal-record-mode=once"
        )
        assert made.ret == pytest.ExitCode.OK
        assert (root / "systemone" / "jev-1.13.0" / "manifest.json").is_file()
        yield dataset, root, server


@pytest.mark.parametrize("version", BAD_VERSIONS)
def test_a_version_that_is_a_path_is_refused_and_nothing_is_touched(
    pytester: pytest.Pytester, recorded: tuple[Path, Path, LoopbackServer], version: str
) -> None:
    dataset, root, server = recorded
    before, asked = tree_hashes(pytester.path), server.requests
    result = record(
        pytester, server.url, dataset, root, f"--sys1cal-model-version={version}", "--sys1cal-record-mode=all"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.stderr.lines if line] == [
        f"ERROR: --sys1cal-model-version {version!r}: {WHY}: {ALLOWED}"
    ]
    assert tree_hashes(pytester.path) == before
    assert server.requests == asked


def test_the_ini_key_is_checked_alike(pytester: pytest.Pytester, recorded: tuple[Path, Path, LoopbackServer]) -> None:
    dataset, root, server = recorded
    pytester.makeini("[pytest]\nsys1cal_model_version = x/../jev-1.13.0\n")
    before = tree_hashes(pytester.path)
    result = record(pytester, server.url, dataset, root, "--sys1cal-record-mode=all")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--sys1cal-model-version 'x/../jev-1.13.0': {WHY}" in result.stderr.str()
    assert tree_hashes(pytester.path) == before


def test_a_model_name_that_is_a_path_is_refused(
    pytester: pytest.Pytester, recorded: tuple[Path, Path, LoopbackServer]
) -> None:
    dataset, root, server = recorded
    before = tree_hashes(pytester.path)
    result = sys1cal(pytester, "--sys1cal-model=../systemone", f"--sys1cal-cassettes={root}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--sys1cal-model '../systemone': a model names its folder under the cassette root" in result.stderr.str()
    assert tree_hashes(pytester.path) == before


ADAPTER = """
import pytest
from pytest_sys1cal.models.systemone import SystemOneAdapter

class Escaping(SystemOneAdapter):
    name = "escaping"
    default_version = "../../escaped"

@pytest.hookimpl(optionalhook=True)
def pytest_sys1cal_adapters():
    return {"escaping": Escaping, "../up": Escaping}
"""


@pytest.mark.parametrize(("model", "said"), [("escaping", "model version '../../escaped'"), ("../up", "'../up'")])
def test_a_registered_adapters_name_or_default_version_that_is_a_path_is_refused(
    pytester: pytest.Pytester, recorded: tuple[Path, Path, LoopbackServer], model: str, said: str
) -> None:
    dataset, root, server = recorded
    pytester.makeconftest(ADAPTER)
    before = tree_hashes(pytester.path)
    result = record(pytester, server.url, dataset, root, f"--sys1cal-model={model}", "--sys1cal-record-mode=all")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [line for line in result.stderr.lines if line]
    assert said in line and ALLOWED in line and "Traceback" not in result.stdout.str()
    assert tree_hashes(pytester.path) == before


def test_a_plain_version_still_records(pytester: pytest.Pytester, recorded: tuple[Path, Path, LoopbackServer]) -> None:
    dataset, root, server = recorded
    result = record(
        pytester, server.url, dataset, root, "--sys1cal-model-version=jev-1.14.0+rc_2", "--sys1cal-record-mode=once"
    )
    assert result.ret == pytest.ExitCode.OK
    manifest = json.loads((root / "systemone" / "jev-1.14.0+rc_2" / "manifest.json").read_text())
    assert manifest["version"] == "jev-1.14.0+rc_2"


@pytest.mark.parametrize("version", ["x/../v1", "..", "a b"])
def test_a_baseline_version_that_is_a_path_is_refused(
    pytester: pytest.Pytester, recorded: tuple[Path, Path, LoopbackServer], version: str
) -> None:
    dataset, root, _ = recorded
    before = tree_hashes(pytester.path)
    result = sys1cal(pytester, "--sys1cal-model=systemone", "--sys1cal-model-version=jev-1.13.0", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}", f"--sys1cal-baseline={version}")  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{version!r} is not a version name of model systemone" in result.stderr.str()
    assert tree_hashes(pytester.path) == before


@pytest.mark.parametrize(("key", "value"), [("family", "../../escaped"), ("instance_id", "a/../../b")])
def test_a_dataset_field_that_names_a_cassette_path_must_be_a_plain_name(tmp_path: Path, key: str, value: str) -> None:
    path = tmp_path / "d.jsonl"
    subset(path, 2)
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[1])
    record[key] = value
    if key == "instance_id":
        record["latent_instance_id"] = "a"
    lines[1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as caught:
        load_dataset(str(path))
    assert str(caught.value).startswith(f"{path}:2: field '{key}' = {value!r}: it names a cassette's folder or file")
    assert str(caught.value).endswith(ALLOWED)


def test_the_folder_itself_refuses_a_path(tmp_path: Path) -> None:
    """The store's own check, whatever called it (a baseline, trend, a plugin's adapter)."""
    with pytest.raises(NotAName, match="model version '../x'"):
        CassetteFolder(tmp_path, "jev", "../x", "all", Redactor())
    assert list(tmp_path.iterdir()) == []


def test_the_pattern() -> None:
    for name in ("jev-1.13.0", "typed-gguf-smollm2-135m", "gemma-3-270m-q4_k_m", "v1", "1.0+build.7", "a" * 128):
        assert is_plain_name(name) and check_name(name, "x") == name
    for name in (*BAD_VERSIONS, "a" * 129, "llama3:8b", "a*", "ü", ".hidden", None, 1):
        assert not is_plain_name(name)
