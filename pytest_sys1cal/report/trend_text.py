"""The trend across versions (trend.py's document) as tables: one row per version, one row per pair of
consecutive versions; printed aligned by the command, written as Markdown with ``--markdown``, and shown in
the HTML page above its figures."""

from __future__ import annotations

from ..document_commands import MeanOvl, StepPrimitive, TrendDocument, TrendStep, TrendVersion
from ..gates.rows import Outcome
from ..gates.upgrade_verdict import VERDICTS
from ..vocabulary import LABELS, PRIMITIVES, Verdict
from .table import Table, aligned, fmt_p, markdown

# A version's gates, by the run's outcome (gates/rows.py decides it): the verdict it stands for.
OUTCOME_WORDS: dict[Outcome, str] = {**VERDICTS, Outcome.NONE: "no gate decided"}


def header(trend: TrendDocument) -> str:
    dataset = trend["dataset"]
    thresholds = trend["thresholds"] or "none (no thresholds file: no gates)"
    count = len(trend["versions"])
    return (
        f"Sys1Cal trend: {trend['model']}, {count} recorded version{'s' if count != 1 else ''} under "
        f"{trend['cassettes']}; dataset {dataset['name']} sha256 {dataset['sha256'][:12]}… "
        f"({dataset['renderings']} renderings); seed {trend['seed']}; thresholds {thresholds}"
    )


def _interval(cell: MeanOvl) -> str:
    if cell.get("mean") is None:
        return "not asked"
    bounds = "" if cell.get("lower") is None else f" [{cell['lower']:.3f}, {cell['upper']:.3f}]"
    return f"{cell['mean']:.3f}{bounds}"


def _repeats(row: TrendVersion) -> str:
    per_answer = row.get("repeats_per_answer", 1)
    return f"{row['repeats']}" if per_answer == 1 else f"{row['repeats']} (mean of {per_answer})"


def gates_cell(row: TrendVersion) -> str:
    """The version's gates as its own run ends: passed, FAILED (how many), or why nothing was decided."""
    gates = row["gates"]
    if not gates["count"]:
        return "no gates"
    result = Outcome(gates["outcome"])
    if result == Outcome.FAILED:
        return f"FAILED ({len(gates['failed'])} of {gates['count']})"
    if result == Outcome.NONE and gates["not_applicable"]:
        return "not applicable (part of the dataset replayed)"
    return f"{OUTCOME_WORDS[result]} ({gates['count']})"


def versions_table(trend: TrendDocument) -> Table:
    rows, notes = [], []
    for row in trend["versions"]:
        if not row["replayed"]:
            rows.append([row["version"], row.get("source", "—"), "—", *(["—"] * len(PRIMITIVES)), "—", "—", "—"])
            notes.append(f"{row['version']}: not replayed: {row['reason']}")
            continue
        swap, test = row["swap_shift"], row["lambda_test"]
        rows.append(
            [
                row["version"],
                row["source"],
                _repeats(row),
                *(_interval(row["mean_ovl"][prim]) for prim in PRIMITIVES),
                "not measured" if swap is None else f"{swap['mean_shift']:+.3f}",
                fmt_p(None if test is None else test["p_value"], floored=True),
                gates_cell(row),
            ]
        )
        if row["counts"]["failed"]:
            notes.append(
                f"{row['version']}: {row['counts']['failed']} of {row['counts']['renderings']} renderings could not be "
                f"replayed (first, {row['first_failure']}); its numbers are on the rest"
            )
        if row["gates"]["failed"]:
            notes.append(f"{row['version']}: FAILED gates: {', '.join(row['gates']['failed'])}")
    notes.append(
        "Mean OVL as each version's own run reports it (Table 1), with a 95% percentile interval from a bootstrap "
        f"of the latent problems (seed {trend['seed']}). Swap shift: P(True | [False, True]) − P(True | [True, "
        "False]). λ test: the valid one-sided test of λ = 0 (p). Gates: the version's own run under the "
        "thresholds file, with that version's overrides."
    )
    columns = ["version", "cassettes", "repeats", *(f"{LABELS[p]} mean OVL [95%]" for p in PRIMITIVES)]
    columns += ["swap shift", "λ test p", "gates"]
    return Table(title="Versions", columns=columns, rows=rows, notes=notes)


def _delta(cell: StepPrimitive | None) -> str:
    if cell is None or cell.get("difference") is None:
        return "not measured"
    bounds = f" [{cell['lower']:+.4f}, {cell['upper']:+.4f}]" if cell.get("lower") is not None else ""
    mark = ", let pass" if cell.get("tolerated") else ""
    return f"{cell['difference']:+.4f}{bounds} {cell['verdict']}{mark}"


def step_verdict(step: TrendStep) -> str:
    if not step["compared"]:
        return "not compared"
    words = {**OUTCOME_WORDS, Outcome.UNDECIDED: "inconclusive: not passed"}
    return words[Outcome(step["outcome"])]


def steps_table(trend: TrendDocument) -> Table | None:
    steps = trend["steps"]
    if not steps:
        return None
    rows, notes = [], []
    for step in steps:
        label = f"{step['from']} → {step['to']}"
        if not step["compared"]:
            rows.append([label, "—", *(["—"] * len(PRIMITIVES)), "not compared"])
            notes.append(f"{label}: not compared: {step['reason']}")
            continue
        cells = step["primitives"]
        n = max((c.get("n") or 0 for c in cells.values()), default=0)
        rows.append([label, str(n), *(_delta(cells.get(p)) for p in PRIMITIVES), step_verdict(step)])
        notes += dict.fromkeys(f"{label}: margins from {c['margins']}" for c in cells.values() if c.get("margins"))
        notes += [f"{label}: {c['explanation']}" for c in cells.values() if c["verdict"] == Verdict.INCONCLUSIVE]
    notes.append(
        "Δ mean OVL, newer − older, paired by rendering, as --sys1cal-baseline=<older> on a run of the newer "
        "version compares them (docs/statistics.md §6): [the one-sided lower and upper bounds the verdict reads, "
        "each at its Holm level] and the verdict under the newer version's regression settings."
    )
    columns = ["upgrade", "paired", *(f"{LABELS[p]} Δ [bounds] verdict" for p in PRIMITIVES), "upgrade verdict"]
    return Table(title="Upgrades between consecutive versions", columns=columns, rows=rows, notes=notes)


def tables(trend: TrendDocument) -> list[Table]:
    return [t for t in (versions_table(trend), steps_table(trend)) if t is not None]


def trend_text(trend: TrendDocument) -> str:
    """What the command prints: the header, then each table aligned, its notes under it."""
    lines = [header(trend)]
    for table in tables(trend):
        lines += ["", table.title, *aligned(table.columns, table.rows), *(f"  {note}" for note in table.notes)]
    return "\n".join(lines) + "\n"


def trend_markdown(trend: TrendDocument) -> str:
    lines = [f"### {header(trend)}", ""]
    for table in tables(trend):
        lines += markdown(table)
    return "\n".join(lines)
