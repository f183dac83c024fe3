"""Table 1 by family and by representation, and the upgrade comparison by family and by representation (its cells
marked where they regressed), as `Table` data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypedDict

from ..document import CallCell, CallSummary, GroupCell, ReportDocument
from ..document_upgrade import GroupDifference
from ..gates.rows import GateRow
from ..run_report import Report
from ..vocabulary import LABELS
from .table import Table, fmt

MOVED_MOST = 3  # cells named in the "moved most" note of the comparison by family
REGRESSED = "regressed"  # the mark of a cell that is a Benjamini–Hochberg discovery (analysis/cells.py)
Grouping = Literal["by_family", "by_representation"]
GROUPINGS: dict[Grouping, str] = {"by_family": "family", "by_representation": "representation"}


class Overall(TypedDict):
    """The whole dataset's Δ̂ as the upgrade gate read it, between its one-sided bounds."""

    n: int
    difference: float
    ci: list[float] | None


def several_calls(result: ReportDocument) -> bool:
    """Whether the report holds more than one call of a rendering: then the per-call reading differs from the
    repeat mean and the tables show it beside it (with one call per rendering the two are the same numbers)."""
    calls = result.get("calls")
    return bool(calls and calls["measured"] and calls["calls"] > result["counts"]["measured"])


def _breakdown_table(result: ReportDocument, key: Literal["by_family", "by_representation"], what: str) -> Table | None:
    groups = result.get(key)
    if groups is None:  # a report from before the breakdowns
        return None
    prims = list(result["primitives"])
    per_call = several_calls(result)
    stats = ("TV", "OVL", "OVL per call") if per_call else ("TV", "OVL")
    columns = [what, "n", "latent"] + [f"{LABELS.get(p, p)} {stat}" for p in prims for stat in stats]
    rows = []
    partial = []
    for name, group in groups.items():
        cells = group["primitives"]
        rows.append(
            [name, str(group["renderings"]), str(group["latent_problems"])]
            + [cell for p in prims for cell in _cells(cells[p], per_call)]
        )
        partial += [
            f"{LABELS.get(p, p)} on {name}: {cells[p]['n']} of {group['renderings']}"
            for p in prims
            if cells[p]["n"] != group["renderings"]
        ]
    counts = result["counts"]
    total = result["primitives"]
    rows.append(
        ["all", str(counts["measured"]), str(counts["latent_problems"])]
        + [
            cell
            for p in prims
            for cell in [fmt(total[p]["mean_tv"], 3), fmt(total[p]["mean_ovl"], 3)]
            + ([fmt(_call_ovl(total[p].get("per_call")), 3)] if per_call else [])
        ]
    )
    notes = [
        f"Table 1 on each {what}'s renderings: mean TV and mean OVL = 1 − mean TV to p*; n renderings, "
        f"latent problems with a rendering in the {what}. Score uses μ_S."
        + (
            " OVL per call: the mean over each rendering's calls of 1 − |p − p*|, what one request gets."
            if per_call
            else ""
        )
    ]
    if partial:
        notes.append("Primitives not asked on every rendering (n asked): " + "; ".join(partial) + ".")
    if not groups:
        notes.append("Not computed: no rendering was measured.")
    return Table(title=f"Table 1 by {what}", columns=columns, rows=rows, notes=notes)


def _cells(cell: GroupCell, per_call: bool) -> list[str]:
    values = [fmt(cell["mean_tv"], 3), fmt(cell["mean_ovl"], 3)]
    return values + [fmt(_call_ovl(cell.get("per_call")), 3)] if per_call else values


def _call_ovl(cell: CallCell | CallSummary | None) -> float | None:
    """A cell's per-call mean OVL (None in a report written before the per-call reading)."""
    return None if cell is None else cell["mean_ovl"]


def by_family_table(result: ReportDocument) -> Table | None:
    return _breakdown_table(result, "by_family", "family")


def by_representation_table(result: ReportDocument) -> Table | None:
    return _breakdown_table(result, "by_representation", "representation")


def group_deltas(upgrade: Sequence[GateRow], key: Grouping = "by_family") -> dict[str, dict[str, GroupDifference]]:
    """Primitive → group → Δ cell (`key`: by family or by representation), from the upgrade gate's rows (none
    without a baseline)."""
    return {gate.primitive: cells for gate in upgrade if gate.details and (cells := gate.details.get(key))}


def family_deltas(upgrade: Sequence[GateRow]) -> dict[str, dict[str, GroupDifference]]:
    """Primitive → family → Δ cell, from the upgrade gate's rows (none without a baseline)."""
    return group_deltas(upgrade, "by_family")


def overall_deltas(upgrade: Sequence[GateRow]) -> dict[str, Overall]:
    """Primitive → the whole dataset's Δ̂ as the upgrade gate read it: ``n``, ``difference`` and ``ci``, the
    gate's one-sided lower and upper bounds (each at its Holm level): the row the verdicts read."""
    out: dict[str, Overall] = {}
    for gate in upgrade:
        details = gate.details
        if details is not None and (difference := details["difference"]) is not None:
            lower, upper = details.get("lower"), details.get("upper")
            bounds = None if lower is None or upper is None else [lower, upper]
            out[gate.primitive] = {"n": details["n"], "difference": difference, "ci": bounds}
    return out


def _delta(cell: GroupDifference | Overall | None) -> str:
    if cell is None:
        return "—"
    ci = cell["ci"]
    interval = "" if ci is None else f" [{ci[0]:+.3f}, {ci[1]:+.3f}]"
    return f"{cell['difference']:+.3f}{interval}"


def _cell(cell: GroupDifference | None) -> str:
    """A group's Δ with its interval, and its mark where it is a discovery."""
    return _delta(cell) + (f" {REGRESSED}" if cell is not None and cell.get("regressed", False) else "")


def regressed_cells(upgrade: Sequence[GateRow]) -> list[tuple[Grouping, str, str, GroupDifference]]:
    """(grouping, primitive, group, cell) of every cell marked regressed, by family first, then by representation."""
    return [
        (key, prim, name, cell)
        for key in GROUPINGS
        for prim, cells in group_deltas(upgrade, key).items()
        for name, cell in cells.items()
        if cell.get("regressed")
    ]


def worst_named(result: ReportDocument, cell: GroupDifference) -> list[str]:
    """A regressed cell's worst renderings, each by the node id that re-runs it (its instance id without one),
    with its D."""
    comparison = result.get("comparison")
    nodes = {row["instance_id"]: row["node_id"] for row in (comparison["renderings"] if comparison else [])}
    return [f"{nodes.get(w['instance_id']) or w['instance_id']} (D {w['d']:+.3f})" for w in cell.get("worst", [])]


def delta_table(report: Report, key: Grouping = "by_family") -> Table | None:
    """Δ mean OVL (new − baseline) per group and compared primitive, with the bootstrap interval and the mark of
    a cell shown worse than the fail margin (Benjamini–Hochberg, docs/statistics.md §6.5); the notes name the
    cells that moved most and each regressed cell's worst renderings. The upgrade gate decides on the whole
    dataset."""
    what = GROUPINGS[key]
    deltas = group_deltas(report.gates.upgrade, key)
    if not deltas:
        return None
    prims = list(deltas)
    groups = sorted({group for cells in deltas.values() for group in cells})
    rows = []
    for group in groups:
        n = next(cells[group]["n"] for cells in deltas.values() if group in cells)
        rows.append([group, str(n)] + [_cell(deltas[p].get(group)) for p in prims])
    overall = overall_deltas(report.gates.upgrade)
    if overall:
        n = next(iter(overall.values()))["n"]
        rows.append(["all (the gate's Δ)", str(n)] + [_delta(overall.get(p)) for p in prims])
    moved = sorted(
        ((cell["difference"], p, group, cell) for p, cells in deltas.items() for group, cell in cells.items()),
        key=lambda entry: (-abs(entry[0]), entry[1], entry[2]),
    )[:MOVED_MOST]
    level = next(iter(next(iter(deltas.values())).values()))["level"]
    notes = [
        "Moved most: " + "; ".join(f"{LABELS.get(p, p)} on {group} {_cell(cell)}" for _, p, group, cell in moved) + ".",
        f"Paired renderings of each {what}; {level:.0%} percentile intervals from the upgrade gate's latent-problem "
        "bootstrap, one per cell and not corrected for their number.",
        *_marks_note(report, key),
    ]
    if overall:
        notes.append(
            "all: the whole dataset's Δ, which the verdicts read, between the gate's one-sided lower and upper bounds "
            "(each at its Holm level)."
        )
    return Table(
        title=f"Upgrade comparison by {what}: Δ mean OVL, new − baseline",
        columns=[what, "n", *(f"{LABELS.get(p, p)} Δ [{level:.0%}]" for p in prims)],
        rows=rows,
        notes=notes,
    )


def _marks_note(report: Report, key: Grouping) -> list[str]:
    """What "regressed" means and, per regressed cell of this grouping, its worst renderings."""
    comparison = report.data.get("comparison")
    cells = comparison.get("cells") if comparison else None
    if not cells:
        return ["Descriptive: the verdicts above decide."]
    rule = (
        f"{REGRESSED}: the cell is shown worse than the fail margin −δ₀ (a one-sided t-test on its latent problems), a "
        f"Benjamini–Hochberg discovery at q = {cells['q']:g} over {cells['tested']} cells of every compared primitive "
        f"(by family and by representation; docs/statistics.md §6.5): {cells['regressed']} marked."
    )
    named = [
        f"{LABELS.get(prim, prim)} on {group}: {', '.join(worst_named(report.data, cell))}."
        for grouping, prim, group, cell in regressed_cells(report.gates.upgrade)
        if grouping == key
    ]
    return [rule, *([f"Worst renderings of each regressed cell: {' '.join(named)}"] if named else [])]


def family_delta_table(report: Report) -> Table | None:
    return delta_table(report, "by_family")


def representation_delta_table(report: Report) -> Table | None:
    return delta_table(report, "by_representation")
