"""Evidence that cannot change silently (issue 24): the manifest records a digest of each cassette's recorded
answers, a recording writes them, and a replay refuses a cassette whose answers no longer match, in one line
that names the file and what to do. Reformatting a cassette (indentation, the line endings a checkout may
convert) is not a change; a deliberate change is a re-recording, and it updates the digest."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from jevcompat.mock import MockConfig

from pytest_sys1cal.errors import InputError
from pytest_sys1cal.redact import Redactor
from pytest_sys1cal.store.folder import CassetteFolder
from tests.loopback import jevcompat_mock
from tests.runs import CASSETTES, run, sys1cal

JEV = CASSETTES / "jev" / "jev-1.13.0"
EDITED = "compound/compound__seed_000042__repr_table.json"
REFORMATTED = "compound/compound__seed_000042__repr_prose.json"
SELECTION = ("-k", "compound__seed_000042")


def digest(path: Path) -> str:
    """The documented digest, recomputed here on its own: sha256 of the cassette's recorded responses, in
    order, as JSON with sorted keys and no spaces (docs/cassettes.md)."""
    responses = [
        interaction["response"] for interaction in json.loads(path.read_text(encoding="utf-8"))["interactions"]
    ]
    return hashlib.sha256(json.dumps(responses, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


def edit_answer(path: Path) -> None:
    """The kind of edit that must not pass unnoticed: one recorded probability changed by hand."""
    cassette = json.loads(path.read_text(encoding="utf-8"))
    body = json.loads(cassette["interactions"][0]["response"]["body"]["string"])
    body["answers"]["noul"]["noul"] = 0.5
    cassette["interactions"][0]["response"]["body"]["string"] = json.dumps(body, separators=(",", ":"))
    path.write_text(json.dumps(cassette, indent=2) + "\n", encoding="utf-8")


def test_every_bundled_folder_records_the_digest_of_each_cassette() -> None:
    folders = sorted(path.parent for path in CASSETTES.glob("*/*/manifest.json"))
    assert len(folders) == 4
    for folder in folders:
        recorded = manifest(folder)["answers"]
        on_disk = {f"{p.parent.name}/{p.name}": digest(p) for p in folder.glob("*/*.json")}
        assert len(on_disk) == 365 and recorded == on_disk, folder


def test_an_edited_answer_is_refused_naming_the_file_and_the_fix_and_a_reformat_is_not(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = tmp_path / "cassettes"
    shutil.copytree(JEV, root / "jev" / "jev-1.13.0")
    folder = root / "jev" / "jev-1.13.0"
    edit_answer(folder / EDITED)
    reformatted = folder / REFORMATTED  # re-indented, CRLF line endings: the same answers
    data = json.loads(reformatted.read_text(encoding="utf-8"))
    reformatted.write_bytes(json.dumps(data, indent=4).replace("\n", "\r\n").encode())

    result = sys1cal(pytester, f"--sys1cal-cassettes={root}", *SELECTION)
    result.assert_outcomes(passed=2, failed=1, deselected=362)
    failure = [line for line in result.stdout.lines if "answers are not the ones recorded" in line]
    assert len(failure) >= 1, result.stdout.str()
    assert str(folder / EDITED) in failure[0]
    assert f"git checkout -- {folder / EDITED}" in failure[0]  # the reconstructed set: restore it, no re-record
    assert f"manifest.json records {manifest(folder)['answers'][EDITED][:12]}" in failure[0]


def test_a_cassette_the_manifest_does_not_record_is_refused(pytester: pytest.Pytester, tmp_path: Path) -> None:
    root = tmp_path / "cassettes"
    folder = shutil.copytree(JEV, root / "jev" / "jev-1.13.0")
    recorded = manifest(folder)
    del recorded["answers"][EDITED]
    (folder / "manifest.json").write_text(json.dumps(recorded, indent=2), encoding="utf-8")
    result = sys1cal(pytester, f"--sys1cal-cassettes={root}", *SELECTION)
    result.assert_outcomes(passed=2, failed=1, deselected=362)
    result.stdout.fnmatch_lines([f"*{folder / EDITED}: not among the cassettes whose answers manifest.json records*"])


def test_a_folder_recorded_before_digests_replays_and_says_it_is_unchecked(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    root = tmp_path / "cassettes"
    folder = shutil.copytree(JEV, root / "jev" / "jev-1.13.0")
    older = manifest(folder)
    del older["answers"]
    older["source"] = "recorded"  # as a team's own recording would be (a reconstructed set is never recorded into)
    del older["reconstructed_from"]
    (folder / "manifest.json").write_text(json.dumps(older, indent=2), encoding="utf-8")
    edit_answer(folder / EDITED)
    result = sys1cal(pytester, f"--sys1cal-cassettes={root}", *SELECTION)
    result.assert_outcomes(passed=3, deselected=362)  # nothing to check the edit against: said in the header
    result.stdout.fnmatch_lines(["sys1cal: *manifest.json records no digests of its cassettes' answers*"])

    # What the notice says: a recording of the complete folder sends nothing (no key needed) and adds them.
    sealed = sys1cal(pytester, f"--sys1cal-cassettes={root}", "--sys1cal-record-mode=once")
    sealed.assert_outcomes(passed=365)
    assert manifest(folder)["answers"] == {f"{p.parent.name}/{p.name}": digest(p) for p in folder.glob("*/*.json")}
    again = sys1cal(pytester, f"--sys1cal-cassettes={root}", *SELECTION)
    again.assert_outcomes(passed=3, deselected=362)
    assert "records no digests" not in again.stdout.str()


def test_a_malformed_digest_is_refused_by_the_manifest_check(tmp_path: Path) -> None:
    folder = shutil.copytree(JEV, tmp_path / "jev" / "jev-1.13.0")
    broken = manifest(folder)
    broken["answers"][EDITED] = "not-a-digest"
    (folder / "manifest.json").write_text(json.dumps(broken, indent=2), encoding="utf-8")
    with pytest.raises(InputError, match=r"manifest\.json:\d+: field 'answers': .* is not an object"):
        CassetteFolder(tmp_path, "jev", "jev-1.13.0", "none", Redactor())


def test_a_recording_writes_the_digests_and_a_re_recording_is_the_deliberate_change(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cassettes"
    folder = root / "jev" / "jev-1.13.0"
    monkeypatch.setenv("TYPESAFE_API_KEY", "test-key-of-this-test")
    with jevcompat_mock(MockConfig(key="test-key-of-this-test")) as mock:
        record = ("--sys1cal", "--model", "jev", f"--sys1cal-base-url={mock.url}", f"--sys1cal-cassettes={root}")
        run(pytester, *record, "--sys1cal-record-mode=once", "--sys1cal-repeats=2", *SELECTION)
        written = manifest(folder)["answers"]
        assert written == {f"{p.parent.name}/{p.name}": digest(p) for p in folder.glob("*/*.json")}
        assert len(written) == 3

        edit_answer(folder / EDITED)
        edited = digest(folder / EDITED)
        replay = sys1cal(pytester, f"--sys1cal-cassettes={root}", *SELECTION)
        replay.assert_outcomes(passed=2, failed=1, deselected=362)
        # A recording that does not record the edited cassette again keeps its old digest: still refused.
        run(pytester, *record, "--sys1cal-record-mode=once", *SELECTION)
        assert manifest(folder)["answers"][EDITED] == written[EDITED]

        # The fix the failure prints for a recorded folder: re-record that rendering (mode all, its node id).
        fix = next(line for line in replay.stdout.lines if "answers are not the ones recorded" in line)
        assert "--sys1cal-record-mode=all" in fix and "jev[compound/compound__seed_000042__repr_table]" in fix
        node = "sys1cal::jev[compound/compound__seed_000042__repr_table]"
        run(pytester, *record, "--sys1cal-record-mode=all", "--sys1cal-repeats=2", node)
    after = manifest(folder)["answers"]
    assert after[EDITED] == digest(folder / EDITED) != edited  # the server's answers again, their digest with them
    assert {k: v for k, v in after.items() if k != EDITED} == {k: v for k, v in written.items() if k != EDITED}
    sys1cal(pytester, f"--sys1cal-cassettes={root}", *SELECTION).assert_outcomes(passed=3, deselected=362)
