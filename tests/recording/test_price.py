"""A price per token a team sets for its own server (issue 24): `--sys1cal-price` (or the ini key sys1cal_price)
prices the plan and the cost cap, and the plan says which price it used; without it, Jev's list price, said so.
Recorded against a real loopback server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.loopback import LoopbackServer
from tests.recording.test_recording import record, subset
from tests.runs import sys1cal


def plan_line(result: pytest.RunResult) -> str:
    return next(line for line in result.stdout.lines if " requests (" in line and "per million input tokens" in line)


def test_the_plan_says_which_price_it_used(pytester: pytest.Pytester, tmp_path: Path) -> None:
    dataset, renderings = subset(tmp_path / "four.jsonl", 4)
    with LoopbackServer.for_renderings(renderings) as server:
        default = record(pytester, server.url, dataset, tmp_path / "a", "--sys1cal-repeats=1")
        assert default.ret == pytest.ExitCode.OK
        assert "at $0.042 per million input tokens (Jev's list price; --sys1cal-price sets your server's;" in (
            plan_line(default)
        )
        priced = record(pytester, server.url, dataset, tmp_path / "b", "--sys1cal-repeats=1", "--sys1cal-price=2.5")
        assert priced.ret == pytest.ExitCode.OK
        line = plan_line(priced)
        assert "at $2.5 per million input tokens (--sys1cal-price;" in line
        tokens = int(line.split("about ", 1)[1].split(" input tokens", 1)[0].replace(",", ""))
        assert f"≈ ${tokens * 2.5 / 1e6:.4f} at $2.5" in line
        pytester.makeini("[pytest]\nsys1cal_price = 0\n")
        free = record(pytester, server.url, dataset, tmp_path / "c", "--sys1cal-repeats=1", "--sys1cal-max-cost=0")
        assert free.ret == pytest.ExitCode.OK  # a server that charges nothing records under a cap of $0
        assert "≈ $0.0000 at $0 per million input tokens (--sys1cal-price;" in plan_line(free)


def test_the_cap_refuses_at_the_price_given(pytester: pytest.Pytester, tmp_path: Path) -> None:
    dataset, renderings = subset(tmp_path / "four.jsonl", 4)
    with LoopbackServer.for_renderings(renderings) as server:
        cheap = record(pytester, server.url, dataset, tmp_path / "a", "--sys1cal-repeats=1", "--sys1cal-max-cost=0.001")
        assert cheap.ret == pytest.ExitCode.OK  # at Jev's price 4 requests cost far less than $0.001
        before = server.requests
        dear = record(
            pytester, server.url, dataset, tmp_path / "b", "--sys1cal-repeats=1", "--sys1cal-max-cost=0.001",
            "--sys1cal-price=1000",
        )  # fmt: skip
        assert dear.ret == pytest.ExitCode.USAGE_ERROR
        dear.stderr.fnmatch_lines(
            ["*input tokens at $1000 per million, --sys1cal-price; *more than --sys1cal-max-cost*"]
        )
        assert server.requests == before  # nothing was sent


def test_a_negative_price_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = sys1cal(pytester, "--sys1cal-price=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--sys1cal-price" in result.stderr.str()
