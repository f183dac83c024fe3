"""scripts/sequential_simulation.py: the simulation behind docs/statistics.md §7.6's tables.

The quick test runs it small, in process, and reads what it prints; the slow ones re-run the documented
configuration and check that the tables in the docs are what it prints."""

from __future__ import annotations

import importlib.util
import re
import sys

import pytest

from tests.runs import REPO

RATE = r"(\d\.\d+) ± (\d\.\d+)"
ROW = re.compile(
    rf"^\| (\S+(?: \(better\))?) \| (fixed|sequential) \| (—|{RATE}) \| (—|{RATE}) \| {RATE} \| {RATE} \| {RATE} \| ([\d.]+) ± ([\d.]+) \|$",
    re.M,
)
ADVICE = re.compile(
    r"^\| (noul|choice|score) \| (\S+) \| (\d+) of (\d+) \| "
    + RATE
    + r" \| "
    + RATE
    + r" \| (\d+) \| "
    + RATE
    + r" \| (\d+) \| (.+) \|$",
    re.M,
)
UNTIMED = re.compile(r"^\d+ s$", re.M)


def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    path = REPO / "scripts" / "sequential_simulation.py"
    spec = importlib.util.spec_from_file_location("sequential_simulation", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "sequential_simulation", module)  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", ["sequential_simulation.py", *args])
    assert module.main() == 0
    return capsys.readouterr().out


def test_a_small_run_prints_both_designs_per_cell_and_the_advice_check_seeded(monkeypatch, capsys) -> None:
    args = ("--recordings", "20", "--advice", "2", "--cells", "0,−2δ", "--seed", "3")
    out = run(monkeypatch, capsys, *args)
    assert out.startswith("20 simulated recordings per cell (seed 3): 92 latent problems, 365 renderings; 10 rounds")
    rows = ROW.findall(out)
    assert [(r[0], r[1]) for r in rows] == [
        ("0", "fixed"),
        ("0", "sequential"),
        ("−2δ", "fixed"),
        ("−2δ", "sequential"),
    ]
    for row in rows:
        cell, design, false_fail, false_pass = row[0], row[1], row[2], row[5]
        assert (false_fail == "—") == (cell == "−2δ") and (false_pass == "—") == (cell == "0")
        passed, failed, inconclusive = (float(row[k]) for k in (8, 10, 12))
        assert passed + failed + inconclusive == pytest.approx(1.0, abs=0.002)  # three verdicts over 60
        requests = float(row[14])
        assert requests == 100.0 if design == "fixed" else 0 < requests <= 100.0
    advice = ADVICE.findall(out)
    assert [(a[0], a[1]) for a in advice] == [
        (p, c) for p in ("noul", "choice", "score") for c in ("−δ₀", "−(δ₀+δ)/2", "−δ")
    ]
    assert all(int(a[2]) == 2 for a in advice)
    assert UNTIMED.sub("", run(monkeypatch, capsys, *args)) == UNTIMED.sub("", out)


def documented(heading: str) -> str:
    text = (REPO / "docs" / "statistics.md").read_text(encoding="utf-8")
    return text.split(heading, 1)[1]


@pytest.mark.slow
def test_the_documented_verdict_table_is_what_the_simulation_prints(monkeypatch, capsys) -> None:
    """Seeded, so the same numbers; another machine's floating point may move a verdict on a bound by a
    recording or two of the 2,000, and the mean requests by a tenth."""
    out = run(monkeypatch, capsys, "--advice", "0")
    docs = {(r[0], r[1]): r for r in ROW.findall(documented("### 7.6 The simulation"))}
    rows = ROW.findall(out)
    assert len(rows) == 12 and set(docs) == {(r[0], r[1]) for r in rows}
    for row in rows:
        doc = docs[(row[0], row[1])]
        for k in (3, 6):  # the family-wise error rates, where the cell has one
            if row[k - 1] != "—":
                assert abs(float(doc[k]) - float(row[k])) <= 2 / 2000 + 1e-9, (row, doc)
        for k in (8, 10, 12):  # P(passed), P(FAILED), P(inconclusive), over 3 × 2,000 verdicts, to 3 decimals
            assert abs(float(doc[k]) - float(row[k])) <= 0.0015, (row, doc)
        assert abs(float(doc[14]) - float(row[14])) <= 0.15, (row, doc)


@pytest.mark.slow
def test_the_documented_advice_table_is_what_the_simulation_prints(monkeypatch, capsys) -> None:
    out = run(monkeypatch, capsys, "--recordings", "0")
    docs = {(a[0], a[1]): a for a in ADVICE.findall(documented("### 7.6 The simulation"))}
    rows = ADVICE.findall(out)
    assert len(rows) == 9 and set(docs) == {(a[0], a[1]) for a in rows}
    for row in rows:
        doc = docs[(row[0], row[1])]
        for k in (4, 6, 9):  # decided by the advice, its heading, decided by the worst-case size
            assert abs(float(doc[k]) - float(row[k])) <= 2 / int(row[2]) + 1e-9, (row, doc)
        assert abs(int(doc[8]) - int(row[8])) <= 2 and abs(int(doc[11]) - int(row[11])) <= 2
