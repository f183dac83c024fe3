"""The cassette store: vcrpy-readable files, order-aware matching, scrubbing, atomic writes, record modes,
and a real record/replay round trip against the jevcompat conformance mock with a canary API key."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest
import vcr
from jevcompat.mock import MockConfig
from vcr.request import Request as VcrRequest

from pytest_sys1cal.dataset import load_dataset
from pytest_sys1cal.files import write_atomic
from pytest_sys1cal.redact import Redactor
from pytest_sys1cal.store.folder import CassetteFolder
from pytest_sys1cal.store.vcrpy_side import json_body
from tests.loopback import Behaviour, LoopbackServer, jevcompat_mock
from tests.runs import REPO, sys1cal

CANARY = "apikey_CANARY-do-not-leak-7f3e9c2b1a"


def _request(body: dict) -> VcrRequest:
    return VcrRequest("POST", "https://x/v1/systemone", json.dumps(body).encode(), {"content-type": "application/json"})


def test_replay_reads_a_cassette_whole_whatever_its_size(tmp_path: Path) -> None:
    """Replay reads cassettes through the os calls alone (store/cassette.py's read_bytes): every byte of a file
    of any size (empty, one read, several), and a missing one is FileNotFoundError, as open() would say."""
    from pytest_sys1cal.store.cassette import read_bytes

    for size in (0, 1, 8_000, (1 << 16) - 1, 1 << 16, 3 * (1 << 16) + 7):
        path = tmp_path / f"{size}.json"
        data = os.urandom(size)
        path.write_bytes(data)
        assert read_bytes(str(path)) == data
    with pytest.raises(FileNotFoundError):
        read_bytes(str(tmp_path / "missing.json"))


def test_matching_ignores_key_order_but_not_choice_option_order() -> None:
    choice = {"type": "choice", "criteria": {"False": "f", "True": "t"}}
    swapped = {"type": "choice", "criteria": {"True": "t", "False": "f"}}
    base = {"model": "m", "state": {"a": 1, "b": 2}, "questions": {"c": choice}}
    reordered = {"questions": {"c": choice}, "state": {"b": 2, "a": 1}, "model": "m"}
    json_body(_request(base), _request(reordered))  # same question: matches
    with pytest.raises(AssertionError, match="Choice option order significant"):
        json_body(_request(base), _request({**base, "questions": {"c": swapped}}))


def test_secrets_are_scrubbed_from_requests_and_responses_case_insensitively(tmp_path: Path) -> None:
    store = CassetteFolder(tmp_path, "jev", "v", "once", Redactor([CANARY]))
    request = VcrRequest(
        "POST",
        "https://x/v1/systemone",
        b"{}",
        {"AuThOrIzAtIoN": f"Bearer {CANARY}", "X-API-Key": CANARY, "Content-Type": "application/json"},
    )
    assert list(store.scrub.request(request).headers) == ["Content-Type"]
    response = {
        "status": {"code": 200, "message": "OK"},
        "headers": {
            "Set-Cookie": ["s=1"],
            "x-auth-token": ["t"],
            "X-Request-Signature": ["z"],
            "content-type": ["application/json"],
        },
        "body": {"string": f'{{"echo": "{CANARY}"}}'.encode()},
    }
    scrubbed = store.scrub.response(response)
    assert list(scrubbed["headers"]) == ["content-type"]
    assert CANARY.encode() not in scrubbed["body"]["string"]


def test_atomic_write_never_leaves_half_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "c.json"
    write_atomic(target, "old")

    def crash(src: str, dst: str) -> None:
        raise KeyboardInterrupt  # e.g. Ctrl-C between writing and renaming

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]


def test_written_files_follow_the_umask_which_writing_leaves_as_it_was(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "a.json", "{}")
        now = os.umask(0o027)  # reading the umask means setting it: set the same value back
    finally:
        os.umask(old)
    assert now == 0o027
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o640


def test_bundled_cassettes_are_readable_by_vcrpy_itself() -> None:
    path = REPO / "cassettes" / "jev" / "jev-1.13.0" / "frequency" / "frequency__seed_000042__repr_prose.json"
    recorded = json.loads(path.read_text())["interactions"][0]
    with vcr.use_cassette(str(path), serializer="json", record_mode="none", match_on=["method", "path", "body"]):
        response = httpx.post(
            recorded["request"]["uri"],
            content=recorded["request"]["body"],
            headers={"content-type": "application/json"},
        )
    assert response.status_code == 200
    # The published repeat-mean Choice P(True) of this rendering (fixtures/published-jev).
    assert response.json()["answers"]["choice"]["probabilities"]["True"] == pytest.approx(0.949)


def _cassette_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.json"))}


def test_record_with_a_canary_key_then_replay_with_the_server_stopped(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, report = tmp_path / "cassettes", tmp_path / "report.json"
    selection = ("-k", "compound__seed_000042", "-p", "no:cacheprovider")
    monkeypatch.setenv("TYPESAFE_API_KEY", CANARY)
    with jevcompat_mock(MockConfig(key=CANARY)) as mock:  # the mock refuses requests without this key
        recorded = sys1cal(pytester, "--model", "jev", f"--sys1cal-base-url={mock.url}", "--sys1cal-record-mode=once", f"--sys1cal-cassettes={root}", "--sys1cal-repeats=2", f"--sys1cal-report={report}", *selection)  # fmt: skip
    recorded.assert_outcomes(passed=3, deselected=362)
    files = _cassette_files(root)
    assert len(files) == 4  # three renderings and the manifest
    manifest = json.loads((root / "jev" / "jev-1.13.0" / "manifest.json").read_text())
    assert (manifest["source"], manifest["repeats"], manifest["server_model"]) == ("recorded", 2, "jevcompat-mock-0.1")
    assert manifest["questions"] == ["noul", "choice", "choice_swapped", "score"]
    cassette = json.loads(files["jev/jev-1.13.0/compound/compound__seed_000042__repr_table.json"])
    assert len(cassette["interactions"]) == 2  # one request per repeat, all four questions in it
    assert list(json.loads(cassette["interactions"][0]["request"]["body"])["questions"]) == [
        "noul",
        "choice",
        "choice_swapped",
        "score",
    ]

    output = recorded.stdout.str() + recorded.stderr.str()
    leaked = [name for name, data in files.items() if CANARY.encode() in data]
    assert leaked == [] and CANARY not in output and CANARY not in report.read_text()
    assert all(b"authorization" not in data.lower() for data in files.values())

    monkeypatch.delenv("TYPESAFE_API_KEY")
    replayed = sys1cal(
        pytester,
        "--model",
        "jev",
        f"--sys1cal-cassettes={root}",
        f"--sys1cal-report={tmp_path / 'again.json'}",
        *selection,
    )
    replayed.assert_outcomes(passed=3, deselected=362)
    first, second = json.loads(report.read_text()), json.loads((tmp_path / "again.json").read_text())
    assert first["items"] == second["items"]  # the same probabilities, now from disk
    assert _cassette_files(root) == files  # replay writes nothing


def test_record_modes(pytester: pytest.Pytester, tmp_path: Path) -> None:
    root = tmp_path / "cassettes"
    renderings = load_dataset("sys1cal-v1").renderings
    folder = root / "systemone" / "jev-latest" / "frequency"

    def run(url: str, mode: str, repeats: int) -> pytest.RunResult:
        return sys1cal(pytester, "--sys1cal-model=systemone", f"--sys1cal-base-url={url}", f"--sys1cal-record-mode={mode}", f"--sys1cal-cassettes={root}", f"--sys1cal-repeats={repeats}", "-k", "frequency__seed_000042")  # fmt: skip

    def interactions() -> list[int]:
        return [len(json.loads(p.read_text())["interactions"]) for p in sorted(folder.glob("*.json"))]

    with LoopbackServer.for_renderings(renderings, Behaviour(noise=0.2)) as server:
        run(server.url, "once", 2).assert_outcomes(passed=6, deselected=359)
        assert interactions() == [2] * 6 and server.requests == 12
        before = _cassette_files(root)

        # once: existing cassettes are replay-only; a third repeat is a miss that says how to record it.
        missed = run(server.url, "once", 3)
        missed.assert_outcomes(failed=6, deselected=359)
        missed.stdout.fnmatch_lines(
            [
                "*holds no unplayed recording of this request (2 recorded, 2 already played)*--sys1cal-record-mode=new_episodes*"
            ]
        )
        assert server.requests == 12 and _cassette_files(root) == before

        # new_episodes: replays what is there, records only what is missing.
        run(server.url, "new_episodes", 3).assert_outcomes(passed=6, deselected=359)
        assert interactions() == [3] * 6 and server.requests == 18

        # all: re-records everything, replacing the old interactions.
        run(server.url, "all", 2).assert_outcomes(passed=6, deselected=359)
        assert interactions() == [2] * 6 and server.requests == 30
