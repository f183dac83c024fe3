"""scripts/bootstrap_coverage.py: the simulation behind docs/statistics.md §2.2's bootstrap table.

The quick test runs it small, in process, and reads what it prints, its record and a re-run of part of it. The
slow one checks the documented configuration without its 400 datasets' bootstraps (five minutes): the table
and the sentence in the docs are what the simulation prints from its record (scripts/bootstrap_coverage_400.tsv,
every dataset's intervals), and a seeded sample of the record's datasets, re-simulated, gives their lines."""

from __future__ import annotations

import importlib.util
import re
import sys

import numpy as np
import pytest

from tests.runs import REPO

ROW = re.compile(r"^(u_max|lambda)\s+(refits started .+?)\s+(0\.\d+)\s+([01]\.\d+)\s+(0\.\d+)$", re.M)
SHIFT = re.compile(r"(\d+) of (\d+) moved at all; .* median (\S+), largest (\S+)")
RECORD = REPO / "scripts" / "bootstrap_coverage_400.tsv"
DOCUMENTED = ("--datasets", "400", "--problems", "600", "--per", "4")  # docs/statistics.md's re-run command
# Re-simulated datasets of the record: this many where some interval misses its truth, this many where none does.
SAMPLE = 3


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


def test_a_record_reprints_its_run_and_its_lines_are_what_a_re_run_gives(monkeypatch, capsys, tmp_path):
    args = ("--datasets", "4", "--problems", "300", "--per", "2", "--resamples", "60", "--seed", "7")
    record = tmp_path / "run.tsv"
    out = run(monkeypatch, capsys, *args, "--record", str(record))
    assert run(monkeypatch, capsys, "--from-record", str(record)) == out  # the seconds too: the record keeps them
    header, *lines = record.read_text(encoding="utf-8").splitlines()
    assert header.startswith("# --datasets 4 --problems 300 --per 2 --resamples 60 --truth 0.6,1.5,2.0 --seed 7; ")
    assert [line.split("\t")[0] for line in lines] == ["0", "1", "2", "3"]
    # Dataset 2 alone, its predecessors simulated but not bootstrapped: the same bits.
    assert run(monkeypatch, capsys, *args, "--only", "2").splitlines() == [lines[2]]


def covered(line: list[float], truths: dict[str, float]) -> list[bool]:
    """Per quantity and method (u_max old, u_max new, λ old, λ new): whether the interval holds the truth."""
    found = []
    for q, name in enumerate(("u_max", "lambda")):
        old_low, old_high, new_low, new_high = line[1 + 6 * q : 5 + 6 * q]
        found += [old_low <= truths[name] <= old_high, new_low <= truths[name] <= new_high]
    return found


def sample(lines: list[list[float]], truths: dict[str, float]) -> list[int]:
    """A seeded choice of datasets: SAMPLE where some interval misses its truth (what coverage counts), SAMPLE
    where none does, and the last dataset (the whole stream before it simulated)."""
    rng = np.random.default_rng(35)
    missing = [int(line[0]) for line in lines if not all(covered(line, truths))]
    holding = [int(line[0]) for line in lines if all(covered(line, truths))]
    chosen = {*rng.choice(missing, SAMPLE, replace=False), *rng.choice(holding, SAMPLE, replace=False)}
    return sorted({int(k) for k in chosen} | {int(lines[-1][0])})


@pytest.mark.slow
def test_the_documented_table_is_what_the_simulation_prints(monkeypatch, capsys):
    """The docs' table is its record's summary, exactly (the same code prints a fresh run's); the record is the
    documented configuration's; and a seeded sample of its datasets, re-simulated here, gives their lines
    within what another machine's floating point can move: every endpoint within a hundredth of its Monte
    Carlo error (the doc's claim is about shifts far below one), so each coverage verdict the same unless that
    endpoint sits that close to the truth."""
    out = run(monkeypatch, capsys, "--from-record", str(RECORD))
    text = (REPO / "docs" / "statistics.md").read_text(encoding="utf-8")
    labels = {
        "refits started at the point fit": "point fit (before)",
        "refits started one step from it": "one step from it (now)",
    }
    assert out.startswith("400 simulated datasets (of 400; seed 0): 600 latent problems × 4 renderings, ")
    rows = ROW.findall(out)
    assert len(rows) == 4
    for quantity, method, nominal, achieved, se in rows:
        name = "u_max" if quantity == "u_max" else "λ"
        documented = re.search(
            rf"^\| {re.escape(name)} \| {re.escape(labels[method])} \| (\S+) \| (\S+) \| (\S+) \|$", text, re.M
        )
        assert documented is not None, (name, method)
        assert documented.groups() == (nominal, achieved, se)
    moved, endpoints, median, largest = SHIFT.search(out).groups()
    sentence = re.sub(r"\s+", " ", text)
    documented = re.search(
        r"Of the ([\d,]+) interval endpoints, (\d+) moved at all, the largest by (\S+) of .*? the median by (\S+)\.",
        sentence,
    )
    assert documented is not None
    assert (int(documented.group(1).replace(",", "")), documented.group(2)) == (int(endpoints), moved)
    assert float(documented.group(3)) == float(largest) and float(documented.group(4)) == float(median)
    assert float(largest) < 1e-3  # far inside the MC error

    header, *rows_text = RECORD.read_text(encoding="utf-8").splitlines()
    defaults = "--resamples 500 --truth 0.6,1.5,2.0 --seed 0"
    assert header.startswith(f"# {' '.join(DOCUMENTED)} {defaults}; ")
    lines = [[float(v) for v in row.split("\t")] for row in rows_text]
    # The truth λ, α, β = 0.6, 1.5, 2.0 and its u_max = λ·α^α·β^β/(α+β)^(α+β), to choose the sample by.
    truths = {"u_max": 0.6 * 1.5**1.5 * 2.0**2.0 / 3.5**3.5, "lambda": 0.6}
    chosen = sample(lines, truths)
    again = run(monkeypatch, capsys, *DOCUMENTED, "--only", ",".join(map(str, chosen))).splitlines()
    assert [int(line.split("\t")[0]) for line in again] == chosen
    for given in again:
        fresh = [float(v) for v in given.split("\t")]
        recorded = lines[int(fresh[0])]
        for q in range(2):
            errors = recorded[5 + 6 * q : 7 + 6 * q]
            assert fresh[5 + 6 * q : 7 + 6 * q] == pytest.approx(errors, rel=1e-6)
            tolerance = [0.01 * errors[0], 0.01 * errors[1]] * 2
            for got, want, allowed in zip(
                fresh[1 + 6 * q : 5 + 6 * q], recorded[1 + 6 * q : 5 + 6 * q], tolerance, strict=True
            ):
                assert abs(got - want) <= allowed, (int(fresh[0]), q, got, want)
