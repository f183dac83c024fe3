"""Gates as test reports, so JUnit XML (and any report plugin) lists each gate as its own test case."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

OUTCOMES = {"passed": "passed", "FAILED": "failed"}  # anything else (not measured, inconclusive) is a skip


def gate_reports(gates: Sequence[Mapping[str, Any]], source: str) -> Iterator[pytest.TestReport]:
    """For each gate a call report carrying its verdict, then the teardown report that closes it."""
    for gate in gates:
        nodeid = f"sys1cal::gates::{gate['name']}"
        location = (source, 0, f"sys1cal gate {gate['name']}")
        outcome = OUTCOMES.get(gate["verdict"], "skipped")
        explanation = gate.get("explanation") or gate["verdict"]
        longrepr: Any = None
        if outcome == "failed":
            longrepr = explanation
        elif outcome == "skipped":
            longrepr = (source, 0, f"Skipped: {gate['verdict']}: {explanation}")
        properties = [(key, gate[key]) for key in ("metric", "observed", "limit", "verdict") if key in gate]
        yield pytest.TestReport(nodeid, location, {}, outcome, longrepr, "call", user_properties=properties)
        yield pytest.TestReport(nodeid, location, {}, "passed", None, "teardown")
