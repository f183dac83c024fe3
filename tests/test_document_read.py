"""A saved report is checked where it is read back (document.read_report) for what the typed readers rely on,
else refused in one line naming the file; read back, its gate rows are typed once and add up as a run's do."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_sys1cal.__main__ import main
from pytest_sys1cal.document import ReportError, read_report
from pytest_sys1cal.errors import EXIT_INPUT
from pytest_sys1cal.gates.rows import GateRow, summarize
from pytest_sys1cal.run_report import Report
from tests.reports import golden

Change = Callable[[dict[str, Any]], object]
CHANGES: dict[str, tuple[Change, str]] = {
    "no model": (lambda r: r.pop("model"), "the report has no 'model' block"),
    "dataset null": (lambda r: r.update(dataset=None), "the report has no 'dataset' block"),
    "a verdict of no gate": (lambda r: r["gates"][3].update(verdict="failed"), "gates[3] is not a gate row"),
    "a row without a name": (lambda r: r["gates"][0].pop("name"), "gates[0] is not a gate row"),
}


def saved(tmp_path: Path, change: Change | None = None) -> Path:
    report = golden("jev")
    if change is not None:
        change(report)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


@pytest.mark.parametrize("case", sorted(CHANGES))
def test_a_report_lacking_what_its_readers_rely_on_is_refused_naming_the_file(tmp_path: Path, case: str) -> None:
    change, said = CHANGES[case]
    path = saved(tmp_path, change)
    with pytest.raises(ReportError) as refused:
        read_report(path)
    assert str(refused.value).startswith(f"{path}: {said}"), refused.value
    assert "\n" not in str(refused.value)


def test_the_html_command_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = saved(tmp_path, CHANGES["a verdict of no gate"][0])
    assert main(["html", str(path), "-o", str(tmp_path / "page.html")]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {path}: gates[3] is not a gate row"), err
    assert not (tmp_path / "page.html").exists()


def test_read_back_the_rows_are_typed_once_and_add_up_as_the_runs(tmp_path: Path) -> None:
    data = read_report(saved(tmp_path))
    report = Report.read_back(data)
    rows = [GateRow.from_json(gate) for gate in golden("jev")["gates"]]
    assert report.gates == summarize(rows)
    assert [gate.to_json() for gate in report.gates.rows] == data["gates"]  # nothing lost on the way
