"""Terminal summary lines from the run's one report; the plugin writes them through pytest's reporter."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import replace

from ..document import ReportDocument
from ..gates.rows import GateRow, GateSummary, Outcome, passes
from ..run_report import Report
from ..vocabulary import Verdict
from .breakdown_tables import family_delta_table, representation_delta_table
from .gates import comparison_table, gate_table
from .interrupted import interrupted_line, selected
from .paper_tables import build_tables
from .table import Table, aligned
from .upgrade_text import TERMINAL_TOP, comparison_of, moves_summary, moves_table
from .why_text import why_lines, why_table

# A terminal line: (text, markup), the markup passed to TerminalReporter.write_line; RED for what failed.
Line = tuple[str, dict[str, bool]]
RED = {"red": True, "bold": True}

THRESHOLDS = "thresholds.yaml"  # the default thresholds file, named where the run does not say which is in force

VERDICT_MARKUP: dict[str, dict[str, bool]] = {
    Verdict.PASSED: {"green": True},
    Verdict.FAILED: RED,
    Verdict.INCONCLUSIVE: {"yellow": True},
}
OUTCOME_MARKUP: dict[str, dict[str, bool]] = {
    Outcome.FAILED: RED,
    Outcome.UNDECIDED: {"yellow": True},
    Outcome.PASSED: {"green": True},
}


def format_table(table: Table, row_markup: list[dict[str, bool]] | None = None) -> list[Line]:
    header, rule, *rows = aligned(table.columns, table.rows)
    lines: list[Line] = [(table.title, {"bold": True}), (header, {}), (rule, {})]
    markups = row_markup or [{} for _ in table.rows]
    lines += [(row, markup) for row, markup in zip(rows, markups, strict=True)]
    lines += [(f"  {note}", {}) for note in table.notes]
    return lines


def summary_lines(
    report: Report,
    advice: Sequence[str] | None = None,
    thresholds: str | None = THRESHOLDS,
    rerun: str | None = None,
) -> list[Line]:
    """advice: what to do after a failed gate (session/gate_advice.py: where the gates came from, the fix that
    applies); thresholds: the thresholds file in force (None: none); rerun: the command that replays this run, to
    which a node id is added to re-run one rendering. All from the run, which knows the cassettes and options (a
    report alone does not). With a baseline, the upgrade verdict comes first and the absolute gates' line beside
    it (upgrade_lines)."""
    result = report.data
    model, dataset = result["model"], result["dataset"]
    counts = result["counts"]
    lines: list[Line] = upgrade_lines(result) + [
        (
            f"{model['name']} {model['version']} ({model['source']} cassettes, "
            f"{repeats_phrase(result['repeats'], result.get('repeats_per_answer', 1))}) on {dataset['name']}: {counts['measured']} of "
            f"{selected(result)} selected renderings measured, {counts['latent_problems']} latent problems",
            {},
        )
    ]
    stopped = interrupted_line(result)
    if stopped:
        lines.append((stopped, RED))
    lines += [(f"notice: {notice}", {"yellow": True}) for notice in result.get("notices", [])]
    if not counts["measured"]:  # every table would be empty
        failed = f" ({counts['failed']} failed)" if counts["failed"] else ""
        lines.append((f"no rendering was measured{failed}: no table to show", {"red": True}))
    else:
        if counts["failed"]:
            lines.append(
                (f"{counts['failed']} rendering(s) failed and are left out of every table below", {"red": True})
            )
        for table in build_tables(result):
            lines.append(("", {}))
            lines += format_table(table)
    upgrade = (
        comparison_table(report),
        why_table(result),
        family_delta_table(report),
        representation_delta_table(report),
    )
    for comparison in upgrade:
        if comparison:
            lines += [("", {})] + format_table(comparison)
    lines += moves_lines(result, rerun)
    lines += gate_lines(report.gates, advice, thresholds)
    recap = upgrade_lines(result)[:1] + count_lines(report)  # the upgrade's verdict, then the one count
    return lines + ([("", {})] + recap if recap else [])


def count_lines(report: Report) -> list[Line]:
    """The run's one failure count, last in the section: how many gates failed of how many, split into the
    thresholds file's and the upgrade's, and what pytest's closing line counts as failed (those gates and the
    renderings that could not be measured), so that every count printed reads as this one."""
    gates = report.gates
    if not gates.rows:
        return []
    failed_renderings = report.data["counts"]["failed"]
    split = [
        f"{len(failed)} of {len(rows)} {kind}"
        for kind, rows, failed in (
            ("absolute", gates.absolute, gates.failed_absolute),
            ("upgrade", gates.upgrade, gates.failed_upgrade),
        )
        if rows
    ]
    if not (gates.failed or gates.inconclusive or failed_renderings):
        tally = ", ".join(f"{n} {verdict}" for verdict, n in gates.verdicts.items())
        return [(f"gates: {tally} of {len(gates.rows)}", {"green": True})]
    said = f"gates: {len(gates.failed)} of {len(gates.rows)} FAILED"
    said += f" ({', '.join(split)})" if len(split) > 1 else ""
    if gates.inconclusive:
        said += f"; {len(gates.inconclusive)} inconclusive (not passed)"
    as_items = sum(passes(gate) is False for gate in gates.rows)  # as session/collect.py reports each gate
    rendering = f" and the {failed_renderings} rendering(s) not measured" if failed_renderings else ""
    said += f"; pytest's closing line counts {as_items + failed_renderings} failed: these gates{rendering}"
    return [(said, RED)]


def upgrade_lines(result: ReportDocument) -> list[Line]:
    """With a baseline: the upgrade verdict naming both versions and where the baseline came from, under it why each
    primitive that did not pass moved (its diagnosis), then the absolute gates' own line, so a reader sees both
    and which is which. Nothing without a baseline."""
    comparison = comparison_of(result)
    if comparison is None:
        return []
    side = comparison["baseline"]
    absolute = comparison["absolute_gates"]
    where = f"{side['origin']} {side['location']}".strip()
    rounds = result.get("sequential")  # recorded in rounds: where it stopped, what it cost and saved
    return [
        (f"{comparison['headline']} [baseline: {where}]", VERDICT_MARKUP.get(comparison["verdict"], {"bold": True})),
        *([(rounds["line"], {"bold": True})] if rounds else []),
        *((f"  why: {line}", {"bold": True}) for line in why_lines(comparison)),
        (absolute["line"], OUTCOME_MARKUP.get(absolute["outcome"], {})),
    ]


def moves_lines(result: ReportDocument, rerun: str | None) -> list[Line]:
    """The renderings that moved most (TERMINAL_TOP), and how to re-run one of them."""
    table = moves_table(result, TERMINAL_TOP)
    comparison = comparison_of(result)
    if table is None or comparison is None:
        return []
    notes = [f"How D is spread: {moves_summary(comparison)}."]
    first = comparison["renderings"][0]["node_id"]
    if rerun and first:
        notes.append(f"Re-run one offline with its node id, e.g. the first: {rerun} {shlex.quote(first)}")
    notes.append("Every paired rendering: the HTML report and the JSON report's comparison.renderings.")
    return [("", {})] + format_table(replace(table, notes=table.notes + notes))


def repeats_phrase(repeats: int, per_answer: int = 1) -> str:
    """ "1 repeat", "10 repeats", or "1 repeat, each answer the mean of 10" (reconstructed cassettes)."""
    phrase = f"{repeats} repeat{'s' if repeats != 1 else ''}"
    return f"{phrase}, each answer the mean of {per_answer}" if per_answer > 1 else phrase


def gate_lines(
    gates: GateSummary, advice: Sequence[str] | None = None, thresholds: str | None = THRESHOLDS
) -> list[Line]:
    """The gate block: failures in red with what to do about them (naming the thresholds file in force),
    inconclusive comparisons in yellow."""
    table = gate_table(gates)
    if table is None:
        where = f"see {thresholds}" if thresholds else f"no {THRESHOLDS} found"
        said: list[Line] = [(f"  {text}", {}) for text in advice or []]  # how to write them, from its report
        return [("", {}), (f"Gates: none configured for this model ({where})", {"bold": True}), *said]
    lines: list[Line] = [("", {})]
    lines += format_table(table, [VERDICT_MARKUP.get(g.verdict, {}) for g in gates.rows])
    failed, undecided, tolerated = gates.failed, gates.inconclusive, gates.tolerated
    if failed:
        lines.append((f"calibration gate FAILED: {len(failed)} of {len(gates.rows)} gates", RED))
        lines += [(f"  {g.name}: {g.explanation}", {"red": True}) for g in failed]
        review = f", review {thresholds}" if thresholds else ""
        steps = advice or [f"If the model changed on purpose{review}; otherwise this is a regression."]
        lines += [(f"  {text}", {"red": True}) for text in steps]
    lines += _inconclusive(
        undecided,
        f"calibration gate not passed: {len(undecided)} comparison(s) inconclusive (a drop within the margin was "
        "not shown; a gate passes only when it is)",
    )
    lines += _inconclusive(
        tolerated,
        f"{len(tolerated)} comparison(s) inconclusive, let pass by regression.inconclusive: pass (they do not fail "
        "the run; the advice says what would decide them)",
    )
    return lines


def _inconclusive(gates: Sequence[GateRow], headline: str) -> list[Line]:
    if not gates:
        return []
    return [(headline, {"yellow": True, "bold": True})] + [
        (f"  {g.name}: {g.explanation}", {"yellow": True}) for g in gates
    ]
