"""Counts that survive pytest's other plugins (issue 25), with the real pytest-rerunfailures and pytest-timeout
(both in the test extra): a rendering is counted once however often its item ran (a rerun replaces its earlier
outcome), a rendering whose item timed out is counted as failed, and a rerun while recording asks the server
again rather than repeating the failure it met."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.field import subset
from tests.loopback import Behaviour, LoopbackServer
from tests.runs import CASSETTES, QUIET, run, sys1cal

JEV = CASSETTES / "jev" / "jev-1.13.0"
MISSING = "bayes/bayes__seed_000042__repr_counts.json"
SLOW = "bayes__seed_000042__repr_counts"


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    return {k: v for k, v in result.parseoutcomes().items() if k not in ("seconds",)}


def counts(report: Path) -> dict[str, int]:
    data = json.loads(report.read_text(encoding="utf-8"))
    assert "interrupted" not in data
    return data["counts"]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_reruns_count_each_rendering_once(pytester: pytest.Pytester, tmp_path: Path, workers: list[str]) -> None:
    """Before: "364 of 367 selected renderings measured", counts renderings 367, failed 3."""
    root = tmp_path / "cassettes"
    shutil.copytree(JEV, root / "jev" / "jev-1.13.0")
    (root / "jev" / "jev-1.13.0" / MISSING).unlink()
    report = tmp_path / "report.json"
    result = sys1cal(pytester, f"--sys1cal-cassettes={root}", f"--sys1cal-report={report}", "--reruns=2", *workers)
    assert outcomes(result) == {"passed": 364, "failed": 1, "rerun": 2}
    assert counts(report) == {"renderings": 365, "measured": 364, "failed": 1, "latent_problems": 92}
    result.stdout.fnmatch_lines(["*on sys1cal-v1: 364 of 365 selected renderings measured*"])


def test_a_rerun_while_recording_asks_the_server_again(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A server that rejects each rendering's first request (400, which is not retried): the rerun records it.
    Before: the rerun answered with the remembered failure, "0 of 18 selected renderings measured"."""
    dataset = tmp_path / "six.jsonl"
    renderings = subset(dataset, 6)
    refusal = (400, {}, b'{"detail": "not now"}')
    root, report = tmp_path / "cassettes", tmp_path / "report.json"
    with LoopbackServer.for_renderings(renderings, Behaviour(script=[refusal] * 6)) as server:
        result = sys1cal(pytester, "--sys1cal-model=systemone", f"--sys1cal-base-url={server.url}", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}", "--sys1cal-record-mode=once", "--sys1cal-repeats=1", "--sys1cal-concurrency=1", f"--sys1cal-report={report}", "--reruns=2")  # fmt: skip
        asked = server.requests
    assert outcomes(result) == {"passed": 6, "rerun": 6}
    assert asked == 12  # six refused, six asked again and answered
    assert counts(report) == {"renderings": 6, "measured": 6, "failed": 0, "latent_problems": 2}
    assert len(list(root.glob("systemone/*/*/*.json"))) == 6


def test_a_timed_out_rendering_is_counted_as_failed(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """pytest-timeout fails the item from inside its call; before, it vanished from the counts ("364 of 364")."""
    pytester.makeconftest(
        f"import time\n\ndef pytest_runtest_call(item):\n    if {SLOW!r} in item.name:\n        time.sleep(30)\n"
    )
    report = tmp_path / "report.json"
    result = sys1cal(pytester, f"--sys1cal-cassettes={CASSETTES}", f"--sys1cal-report={report}", "--timeout=1")
    result.assert_outcomes(passed=364, failed=1)
    assert counts(report) == {"renderings": 365, "measured": 364, "failed": 1, "latent_problems": 92}
    result.stdout.fnmatch_lines(
        [
            "*on sys1cal-v1: 364 of 365 selected renderings measured*",
            "1 rendering(s) failed and are left out of every table below",
        ]
    )
    result.stdout.fnmatch_lines([f"FAILED sys1cal::jev?bayes/{SLOW}? - Failed: Timeout *"])


HOOK_CONFTEST = """
from pathlib import Path

def pytest_runtest_logreport(report):
    if report.when == "call" and report.nodeid.startswith("sys1cal::"):
        with Path({log!r}).open("a") as log:
            log.write(report.nodeid + "\\n")
"""


def test_conftest_hooks_reach_the_items_as_pytest_scopes_them(pytester: pytest.Pytester) -> None:
    """The items share one hook relay, built once for the suite (pytest builds one per access, which costs a
    tenth of a replayed item when a conftest.py lies below the rootdir); which conftests' hooks reach them is
    still pytest's rule for their path, the rootdir: a conftest.py there applies, one in tests/ does not."""
    root_log, sub_log = pytester.path / "root.log", pytester.path / "sub.log"
    pytester.makeconftest(HOOK_CONFTEST.format(log=str(root_log)))
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "conftest.py").write_text(HOOK_CONFTEST.format(log=str(sub_log)), encoding="utf-8")
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    args = ("--sys1cal", "--model=jev", f"--sys1cal-cassettes={CASSETTES}", "-k", "bayes__seed_000042", *QUIET)
    result = run(pytester, *args)
    passed = result.parseoutcomes()["passed"]
    assert passed > 1
    seen = root_log.read_text().splitlines()  # each item once, by the root conftest's hook
    assert len(seen) == len(set(seen)) == passed and all(node.startswith("sys1cal::jev[") for node in seen)
    assert not sub_log.exists()

    class Items:
        def pytest_collection_finish(self, session: pytest.Session) -> None:
            self.relays = [item.ihook for item in session.items]  # kept: a freed relay's id() is reused

    items = Items()
    pytester.inline_run(*args, "--collect-only", plugins=[items])
    assert len(items.relays) == passed and all(relay is items.relays[0] for relay in items.relays)
