"""The README's "Jev's own upgrades": its second block (record a new Jev version against the one run today, then
give it a block of its own) run verbatim against the jevcompat mock, which speaks the Jev wire on 127.0.0.1.

The `export` line is the only one not run as printed: the key is set to a test value instead, and the server is
named the way a user points the jev adapter elsewhere (TYPESAFE_BASE_URL), so the commands stay untouched. The
ini only lifts the client's rate limit, so the 3,650 requests take seconds. (The first block, the main job,
`init` and `thresholds --paste`, runs from the built wheel in tests/test_packaging.py.)"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys

import jevcompat.mock as jevcompat
import pytest
import yaml

from tests.loopback import jevcompat_mock
from tests.runs import REPO, run, sys1cal


def jev_upgrade_block() -> list[list[str]]:
    """The second bash block under "### Jev's own upgrades", each command split as a shell splits it."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n### Jev's own upgrades\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert len(blocks) == 2, "Jev's own upgrades holds two bash blocks: the main job's, then the upgrade's"
    return [shlex.split(line, comments=True) for line in blocks[1].splitlines() if line.strip()]


def test_the_readmes_jev_upgrade_block_works_verbatim(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    export, record, update = jev_upgrade_block()
    assert export == ["export", "TYPESAFE_API_KEY=..."]
    assert record[:2] == ["pytest", "--sys1cal"] and update[:3] == ["python", "-m", "pytest_sys1cal"]
    # The project as a user has it: the bundled cassettes and the shipped thresholds under the rootdir.
    shutil.copytree(REPO / "cassettes" / "jev" / "jev-1.13.0", pytester.path / "cassettes" / "jev" / "jev-1.13.0")
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    pytester.makeini("[pytest]\nsys1cal_rate = 0\n")
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test-readme")
    # jevcompat knows no jev-1.14.0; that is the version the README upgrades to.
    monkeypatch.setattr(jevcompat, "ACCEPTED_MODELS", jevcompat.ACCEPTED_MODELS | {"jev-1.14.0"})
    with jevcompat_mock(jevcompat.MockConfig()) as mock:
        monkeypatch.setenv("TYPESAFE_BASE_URL", mock.url)
        recorded = run(pytester, *record[1:], cheap=False)  # the README's commands as written
    text = recorded.stdout.str()
    assert "recording 365 of 365 renderings" in text and "3,650 requests (10 repeats)" in text
    assert "Upgrade comparison against the baseline jev-1.13.0" in text
    # The mock's answers are hashes, not probabilities: the upgrade gate shows the drop and fails the run.
    assert recorded.ret == pytest.ExitCode.TESTS_FAILED and "regression.noul.mean_ovl" in text
    assert "Traceback" not in text and "sk-test-readme" not in text
    assert (pytester.path / "new.json").exists() and (pytester.path / "cassettes" / "jev" / "jev-1.14.0").is_dir()

    before = (pytester.path / "thresholds.yaml").read_text(encoding="utf-8")
    done = subprocess.run(
        [sys.executable, *update[1:]], cwd=pytester.path, capture_output=True, text=True, check=False
    )  # `python` is the interpreter running these tests, as in the venv the README's install makes
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    after = yaml.safe_load((pytester.path / "thresholds.yaml").read_text(encoding="utf-8"))
    assert "jev-1.14.0" not in yaml.safe_load(before)["jev"] and "jev-1.14.0" in after["jev"]  # its own block
    assert after["jev"]["noul"] == yaml.safe_load(before)["jev"]["noul"]  # the model's section as it was

    # Its own gates hold the version they were written from: the replay, offline, passes every one.
    replay = sys1cal(pytester, "--model", "jev", "--sys1cal-model-version=jev-1.14.0", cheap=False)
    assert replay.ret == pytest.ExitCode.OK, replay.stdout.str()[-3000:]
