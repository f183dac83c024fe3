"""The replay index (issue 27): a recording leaves, beside the manifest, a memo of what replaying each cassette
gives, and a replay takes a rendering's row from it only when the entry was derived from exactly that
cassette's bytes for exactly the run's requests, with the answers digest the manifest keeps and an index file
whose sha256 the manifest records. Anything else replays the cassette itself: the same rows, the same refusals.
Real replays through pytester of a copy of the bundled typed-gguf recording (systemone's wire)."""

from __future__ import annotations

import hashlib
import json
import shutil
from array import array
from pathlib import Path

import pytest

from pytest_sys1cal.measure import Measurer
from pytest_sys1cal.models.base import ModelAdapter
from pytest_sys1cal.models.systemone import SystemOneAdapter
from pytest_sys1cal.redact import Redactor
from pytest_sys1cal.store import replay_index
from pytest_sys1cal.store.folder import CassetteFolder
from pytest_sys1cal.store.replay_index import INDEX
from tests.field import CASSETTES, QUIET

VERSION = "typed-gguf-smollm2-135m"
MODEL = ("--sys1cal-model=systemone", f"--sys1cal-model-version={VERSION}")
SELECTION = ("-k", "compound__seed_000042")
EDITED = "compound/compound__seed_000042__repr_table.json"


@pytest.fixture
def indexed(pytester: pytest.Pytester, tmp_path: Path) -> Path:
    """A copy of the bundled recording, completed by a recording run that has nothing to send: it writes the
    index and the index's digest in the manifest."""
    root = tmp_path / "cassettes"
    folder = shutil.copytree(CASSETTES / "systemone" / VERSION, root / "systemone" / VERSION)
    assert not (folder / INDEX).exists()
    done = pytester.runpytest("--sys1cal", *MODEL, f"--sys1cal-cassettes={root}", "--sys1cal-record-mode=once", *QUIET)
    done.assert_outcomes(passed=365)
    return folder


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


def replay(pytester: pytest.Pytester, folder: Path, name: str, *extra: str) -> tuple[pytest.RunResult, list[dict]]:
    report = pytester.path / f"{name}.json"
    result = pytester.runpytest(
        "--sys1cal", *MODEL, f"--sys1cal-cassettes={folder.parent.parent}", f"--sys1cal-report={report}", *extra, *QUIET
    )
    items = json.loads(report.read_text(encoding="utf-8"))["items"] if report.exists() else []
    return result, items


def forge(folder: Path, name: str, noul: float, *, reseal: bool) -> None:
    """Edit the index entry of cassette `name` to answer Noul `noul` (the first double of its samples), and, with
    `reseal`, the manifest's digest of the index to match (a forgery the manifest's diff shows)."""
    path = folder / INDEX
    lines = path.read_text(encoding="utf-8").split("\n")
    (at,) = [i for i, line in enumerate(lines) if line.startswith(name + "\t")]
    fields = lines[at].split("\t")
    assert fields[5].startswith("noul:0,"), fields[5]
    fields[6] = array("d", [noul]).tobytes().hex() + fields[6][16:]
    lines[at] = "\t".join(fields)
    path.write_text("\n".join(lines), encoding="utf-8")
    if reseal:
        sealed = manifest(folder)
        sealed["replay_index"] = hashlib.sha256(path.read_bytes()).hexdigest()
        (folder / "manifest.json").write_text(json.dumps(sealed, indent=2), encoding="utf-8")


def noul_of(items: list[dict], name: str) -> float:
    instance = name.split("/")[1].removesuffix(".json")
    (item,) = [item for item in items if item["instance_id"] in (instance, f"{instance}__parallel_primitives")]
    return item["p_noul"]


def test_a_recording_writes_the_index_and_a_replay_from_it_gives_the_same_rows(
    pytester: pytest.Pytester, indexed: Path
) -> None:
    text = (indexed / INDEX).read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) == 1 + 365  # the stamp, then one line per cassette, sorted
    assert lines[1:] == sorted(lines[1:])
    assert manifest(indexed)["replay_index"] == hashlib.sha256(text.encode()).hexdigest()

    with_index, rows = replay(pytester, indexed, "with")
    with_index.assert_outcomes(passed=365)
    assert "replay-index.tsv is not used" not in with_index.stdout.str()
    (indexed / INDEX).unlink()
    without, plain = replay(pytester, indexed, "without")
    without.assert_outcomes(passed=365)
    assert rows == plain  # every rendering's samples, repeats and means, to the bit
    # A manifest that records an index the folder lacks (left out of a commit): said, and replayed in full.
    without.stdout.fnmatch_lines(["sys1cal: *replay-index.tsv is not used (it is missing, though manifest.json*"])


def test_the_index_answers_only_with_the_manifest_s_digest_of_it(pytester: pytest.Pytester, indexed: Path) -> None:
    """The entries are used (a forged entry that the manifest's digest covers is what the replay reads), and an
    index edited without the manifest is not: the replay reads the cassettes and says why."""
    _, honest = replay(pytester, indexed, "honest", *SELECTION)
    forge(indexed, EDITED, 0.125, reseal=False)
    unsealed, rows = replay(pytester, indexed, "unsealed", *SELECTION)
    unsealed.assert_outcomes(passed=3, deselected=362)
    unsealed.stdout.fnmatch_lines(["sys1cal: *replay-index.tsv is not used (it is not the one manifest.json records*"])
    assert noul_of(rows, EDITED) == noul_of(honest, EDITED) != 0.125

    forge(indexed, EDITED, 0.125, reseal=True)  # the forgery a reviewer sees in the manifest's diff
    sealed, rows = replay(pytester, indexed, "sealed", *SELECTION)
    sealed.assert_outcomes(passed=3, deselected=362)
    assert noul_of(rows, EDITED) == 0.125


def test_an_edited_cassette_is_refused_and_a_reformatted_one_replays_with_an_index(
    pytester: pytest.Pytester, indexed: Path
) -> None:
    _, honest = replay(pytester, indexed, "honest", *SELECTION)
    cassette = json.loads((indexed / EDITED).read_bytes())
    response = cassette["interactions"][0]["response"]["body"]
    body = json.loads(response["string"])
    body["answers"]["noul"].update(noul=0.5, probabilities={"yes": 0.5, "no": 0.5})  # consistent, and edited
    response["string"] = json.dumps(body, separators=(",", ":"))
    (indexed / EDITED).write_text(json.dumps(cassette, indent=2) + "\n", encoding="utf-8")
    reformatted = indexed / "compound/compound__seed_000042__repr_prose.json"
    reformatted.write_bytes(json.dumps(json.loads(reformatted.read_bytes()), indent=4).replace("\n", "\r\n").encode())
    result, rows = replay(pytester, indexed, "edited", *SELECTION)
    result.assert_outcomes(passed=2, failed=1, deselected=362)
    result.stdout.fnmatch_lines([f"*{indexed / EDITED}: its answers are not the ones recorded*"])
    name = "compound/compound__seed_000042__repr_prose.json"
    assert noul_of(rows, name) == noul_of(honest, name)


def test_an_index_of_another_stamp_is_not_used_and_the_header_says_which(
    pytester: pytest.Pytester, indexed: Path
) -> None:
    forge(indexed, EDITED, 0.125, reseal=True)
    # Two repeats asked of a one-repeat recording: the stamp differs, so not even the forged entry is read.
    result, _ = replay(pytester, indexed, "repeats", "--sys1cal-repeats=2", *SELECTION)
    result.stdout.fnmatch_lines(["sys1cal: *replay-index.tsv is not used (it was written for another repeats)*"])
    result.assert_outcomes(failed=3, deselected=362)  # the one-repeat cassettes cannot answer a second repeat


def test_a_subclass_does_not_inherit_the_promise_and_the_stamp_follows_the_code(tmp_path: Path) -> None:
    """An adapter derived from a built-in one may override `parse` with anything (tests/test_secrets.py's buggy
    adapter reads the environment): it gets no index unless its own class says so. The stamp carries a digest
    of the code that turns a cassette into a row, so an index written before a change to it is not used."""

    class Derived(SystemOneAdapter):
        name = "derived"

    class Declared(SystemOneAdapter):
        name = "declared"
        replay_index = True

    assert replay_index.stamp(Derived(None, None, {}), ("noul",), 1) is None
    stamp = replay_index.stamp(Declared(None, None, {}), ("noul",), 1)
    built_in = replay_index.stamp(SystemOneAdapter(None, None, {}), ("noul",), 1)
    assert stamp is not None and built_in is not None
    assert stamp["adapter"].endswith("Declared")
    assert stamp["code"] != built_in["code"]  # its own module (this file) is part of the code its rows depend on
    assert len(stamp["code"]) == 16 and {"plugin", "settings", "questions", "repeats"} <= stamp.keys()


def test_an_adapter_that_does_not_say_its_answers_are_pure_gets_no_index(tmp_path: Path) -> None:
    class Own(ModelAdapter):  # a third-party adapter: replay_index stays off
        name, default_version, default_base_url = "own", "v1", "http://127.0.0.1:9"

        def requests(self, rendering, question_ids):  # type: ignore[no-untyped-def]
            raise NotImplementedError

        def parse(self, question_ids, responses):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    folder = CassetteFolder(tmp_path, "own", "v1", "none", Redactor())
    measurer = Measurer(Own(None, None, {}), folder, ("noul",), 1, advice=None)  # type: ignore[arg-type]
    assert replay_index.stamp(measurer.adapter, ("noul",), 1) is None and measurer.index is None
