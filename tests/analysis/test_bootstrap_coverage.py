"""scripts/bootstrap_coverage.py: the simulation behind docs/statistics.md §2.2's bootstrap table.

The quick test runs it small, in process, and reads what it prints; the slow one re-runs the documented
configuration and checks that the table in the docs is what it prints."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^(u_max|lambda)\s+(refits started .+?)\s+(0\.\d+)\s+([01]\.\d+)\s+(0\.\d+)$", re.M)
SHIFT = re.compile(r"(\d+) of (\d+) moved at all; .* median (\S+), largest (\S+)")


def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    spec = importlib.util.spec_from_file_location("bootstrap_coverage", REPO / "scripts" / "bootstrap_coverage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", ["bootstrap_coverage.py", *args])
    assert module.main() == 0
    return capsys.readouterr().out


def test_a_small_run_prints_coverage_with_its_error_and_shifts_within_the_mc_error(monkeypatch, capsys):
    args = ("--datasets", "3", "--problems", "500", "--per", "2", "--resamples", "100", "--seed", "4")
    out = run(monkeypatch, capsys, *args)
    assert out.startswith("3 simulated datasets (of 3; seed 4): 500 latent problems × 2 renderings")
    rows = ROW.findall(out)
    assert [(q, m.startswith("refits started at")) for q, m, *_ in rows] == [
        ("u_max", True),
        ("u_max", False),
        ("lambda", True),
        ("lambda", False),
    ]
    for _, _, nominal, achieved, se in rows:
        p = float(achieved)
        assert float(nominal) == 0.95
        assert round(p * 3, 2) in (0, 1, 2, 3)  # a share of the 3 datasets
        assert float(se) == pytest.approx((p * (1 - p) / 3) ** 0.5, abs=0.001)
    moved, endpoints, _, largest = SHIFT.search(out).groups()
    assert int(endpoints) == 3 * 4 and int(moved) <= int(endpoints)
    assert float(largest) < 0.01  # the one-step start moves no endpoint by a hundredth of its MC error
    # Seeded: the same arguments print the same, but for the seconds it took.
    untimed = re.compile(r"; \d+ s$", re.M)
    assert untimed.sub("", run(monkeypatch, capsys, *args)) == untimed.sub("", out)


@pytest.mark.slow
def test_the_documented_table_is_what_the_simulation_prints(monkeypatch, capsys):
    """Within what another machine's floating point can move: a coverage count by a dataset or two (an
    interval's end that sits on the truth), the endpoint shifts far below the Monte Carlo error either way."""
    datasets = 400
    out = run(monkeypatch, capsys, "--datasets", str(datasets), "--problems", "600", "--per", "4")
    text = (REPO / "docs" / "statistics.md").read_text(encoding="utf-8")
    labels = {
        "refits started at the point fit": "point fit (before)",
        "refits started one step from it": "one step from it (now)",
    }
    rows = ROW.findall(out)
    assert len(rows) == 4
    for quantity, method, nominal, achieved, se in rows:
        name = "u_max" if quantity == "u_max" else "λ"
        documented = re.search(
            rf"^\| {re.escape(name)} \| {re.escape(labels[method])} \| (\S+) \| (\S+) \| (\S+) \|$", text, re.M
        )
        assert documented is not None, (name, method)
        assert documented.group(1) == nominal
        assert abs(float(documented.group(2)) - float(achieved)) <= 2 / datasets + 1e-9
        assert float(documented.group(3)) == pytest.approx(float(se), abs=0.002)
    moved, endpoints, _, largest = SHIFT.search(out).groups()
    sentence = re.sub(r"\s+", " ", text)
    documented = re.search(r"Of the ([\d,]+) interval endpoints, (\d+) moved at all, the largest by (\S+) of", sentence)
    assert documented is not None
    assert int(documented.group(1).replace(",", "")) == int(endpoints)
    assert float(largest) < 1e-3 and float(documented.group(3)) < 1e-3  # far inside the MC error, here as there
