"""A manifest.json that holds one key twice is refused, naming the file, the line and the key (issue 36). A
reader keeping the last of two keys let a line added beside a cassette's original digest re-admit an edited
answer; the edit here is real (a recorded cassette's answer changed on disk), and so is the replay."""

from __future__ import annotations

import json

import pytest

from pytest_sys1cal.store.answers import answers_digest
from pytest_sys1cal.store.cassette import Recorded
from tests.field import subset, tree_hashes
from tests.loopback import LoopbackServer
from tests.runs import run


def test_a_second_digest_beside_the_original_is_refused(pytester: pytest.Pytester) -> None:
    dataset = pytester.path / "six.jsonl"
    renderings = subset(dataset, 6)
    root = pytester.path / "cassettes"
    common = ("--sys1cal", "--sys1cal-model=systemone", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}")
    with LoopbackServer.for_renderings(renderings) as server:
        made = run(
            pytester, *common, f"--sys1cal-base-url={server.url}", "--sys1cal-repeats=1", "--sys1cal-record-mode=once"
        )
    assert made.ret == pytest.ExitCode.OK
    folder = root / "systemone" / "jev-latest"
    manifest = folder / "manifest.json"
    name, digest = next(iter(json.loads(manifest.read_text())["answers"].items()))
    cassette = folder / name
    recorded = json.loads(cassette.read_text())
    body = recorded["interactions"][0]["response"]["body"]
    body["string"] = body["string"].replace('"noul": 0.', '"noul": 0.9', 1)  # Noul's answer, edited on disk
    cassette.write_text(json.dumps(recorded, indent=4))
    new_digest = answers_digest(Recorded.read(str(cassette)).responses)
    assert new_digest != digest
    lines = manifest.read_text().splitlines(keepends=True)
    (at,) = [i for i, line in enumerate(lines) if digest in line]
    lines.insert(at + 1, f'    "{name}": "{new_digest}",\n')  # beside the original: the last one would win
    manifest.write_text("".join(lines))
    before = tree_hashes(pytester.path)
    result = run(pytester, *common)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    output = result.stdout.str() + result.stderr.str()
    assert (
        f'{manifest}:{at + 2}: the key "{name}" appears twice in one object, and a JSON reader keeps one of' in output
    )
    assert "restore it from version control" in output and "Traceback" not in output
    assert tree_hashes(pytester.path) == before
