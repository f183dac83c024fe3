"""The upgrade verdict as every renderer says it (terminal, job summary, pull-request comment, HTML): where the
baseline came from, the Δ table with its bounds and margins, and the renderings that moved most, from the
report's ``comparison`` block alone (gates/upgrade_verdict.py writes it; docs/report.md says what each key means)."""

from __future__ import annotations

from ..document import ReportDocument
from ..document_upgrade import Comparison, MovedRendering, PrimitiveComparison
from ..gates.rows import Outcome
from ..gates.upgrade_verdict import VERDICTS, compared_names
from ..vocabulary import LABELS
from .table import Table, fmt

TERMINAL_TOP, SUMMARY_TOP = 5, 10  # renderings listed in the terminal, in the job summary and the comment
ORIGINS = {
    "version folder": "the version folder {location}, replayed offline in this run",
    "bundled reference": "pytest-sys1cal's bundled reference cassettes {location}, replayed offline in this run",
    "saved report": "the saved report {location}",
}


def sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def comparison_of(result: ReportDocument) -> Comparison | None:
    return result.get("comparison")


def origin_phrase(comparison: Comparison) -> str:
    """Where the baseline came from, in words: "the version folder cassettes/jev/jev-1.13.0, replayed …"."""
    side = comparison["baseline"]
    template = ORIGINS.get(side["origin"], "{location}")
    return template.format(location=side["location"] or side["version"])


def baseline_line(comparison: Comparison) -> str:
    """The line under the verdict: the baseline, its source and what was paired."""
    side, candidate = comparison["baseline"], comparison["candidate"]
    cassettes = f" ({side['source']} cassettes)" if side.get("source") else ""
    return (
        f"baseline {side['model']} {side['version']}{cassettes}: {origin_phrase(comparison)}; candidate "
        f"{candidate['model']} {candidate['version']}; {comparison['paired']} renderings paired"
    )


def compared(comparison: Comparison) -> list[str]:
    """The primitives with a difference to show, in the report's order."""
    return [prim for prim, row in comparison["primitives"].items() if row.get("difference") is not None]


def bound(value: float | None, level: float | None) -> str:
    """A one-sided bound with its level: "-0.0636 (98.3%)"."""
    if value is None:
        return "—"
    return f"{value:+.4f}" + ("" if level is None else f" ({100 * level:.1f}%)".replace(".0%", "%"))


def delta_rows(comparison: Comparison) -> list[list[str]]:
    """Per primitive: baseline, new, Δ̂, its one-sided lower and upper bounds, the margins, the verdict."""
    rows = []
    for prim, row in comparison["primitives"].items():
        diff = row.get("difference")
        rows.append(
            [
                LABELS.get(prim, prim),
                fmt(row.get("baseline"), 4),
                fmt(row.get("new"), 4),
                "—" if diff is None else f"{diff:+.4f}",
                bound(row.get("lower"), row.get("lower_level")),
                bound(row.get("upper"), row.get("upper_level")),
                f"{_margin(row.get('margin'))} / {_margin(row.get('fail_margin'))}",
                row["verdict"] + (" (let pass)" if row.get("tolerated") else ""),
            ]
        )
    return rows


DELTA_COLUMNS = ["primitive", "baseline", "new", "Δ", "lower bound", "upper bound", "margins δ / δ₀", "verdict"]
DELTA_NOTE = (
    "Δ: mean OVL new − baseline over the paired renderings. passed: the lower bound is above −δ; FAILED: the upper "
    "bound is below −δ₀; otherwise inconclusive. Bounds are one-sided, from the latent-problem bootstrap, at their "
    "Holm levels."
)


def delta_table(result: ReportDocument) -> Table | None:
    comparison = comparison_of(result)
    if comparison is None:
        return None
    return Table(
        title=f"{sentence(compared_names(comparison['baseline'], comparison['candidate']))}: Δ mean OVL with its bounds",
        columns=DELTA_COLUMNS,
        rows=delta_rows(comparison),
        notes=[DELTA_NOTE],
    )


def _margin(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"


def answer_cell(row: MovedRendering, prim: str) -> str:
    """ "0.918 → 0.836" (baseline → candidate), "—" where either did not answer."""
    base, new = row["baseline"].get(prim), row["new"].get(prim)
    return "—" if base is None or new is None else f"{base:.3f} → {new:.3f}"


def d_cell(row: MovedRendering, prim: str) -> str:
    value = row["d"].get(prim)
    return "—" if value is None else f"{value:+.3f}"


def moves_table(result: ReportDocument, top: int | None, *, node_column: bool = True) -> Table | None:
    """The renderings that moved most against the baseline (the first `top`; None: all), one row each: the
    node id that re-runs it (which names its family and instance id; or those two, `node_column` False),
    representation, p*, and per primitive "baseline → new (D)"."""
    comparison = comparison_of(result)
    if comparison is None or not comparison["renderings"]:
        return None
    prims = compared(comparison)
    rows = comparison["renderings"] if top is None else comparison["renderings"][:top]
    first = ["node id (re-runs it)"] if node_column else ["instance id", "family"]
    columns = [*first, "representation", "p*", *(f"{LABELS.get(p, p)}: base → new (D)" for p in prims)]
    body = [
        [
            *([row["node_id"] or row["instance_id"]] if node_column else [row["instance_id"], str(row["family"])]),
            str(row["representation"]),
            f"{row['p_star']:.3f}",
            *(f"{answer_cell(row, p)} ({d_cell(row, p)})" for p in prims),
        ]
        for row in rows
    ]
    shown = "all" if top is None or top >= len(comparison["renderings"]) else f"top {len(rows)}"
    return Table(
        title=(
            f"Renderings that moved most against {comparison['baseline']['version']}: {shown} of "
            f"{len(comparison['renderings'])} paired, lowest D first"
        ),
        columns=columns,
        rows=body,
        notes=[MOVES_NOTE],
    )


MOVES_NOTE = (
    "D = OVL new − OVL baseline of one rendering (OVL = 1 − |answer − p*|, answers are repeat means, Score its "
    "expectation μ_S); the upgrade gate's Δ is their mean. Sorted by the lowest D of each rendering."
)


def moves_summary(comparison: Comparison) -> str:
    """How the drop is spread, per compared primitive: "Noul: D < 0 on 301 of 365, D > 0 on 12"."""
    parts = []
    for prim in compared(comparison):
        values = [value for row in comparison["renderings"] if (value := row["d"].get(prim)) is not None]
        below = sum(value < 0 for value in values)
        above = sum(value > 0 for value in values)
        parts.append(f"{LABELS.get(prim, prim)}: D < 0 on {below} of {len(values)}, D > 0 on {above}")
    return "; ".join(parts)


def verdict_kind(verdict: str) -> Outcome:
    """The outcome an upgrade verdict stands for, the CSS class and icon key of the verdict line."""
    return next((kind for kind, said in VERDICTS.items() if said == verdict), Outcome.NONE)


# Holm's two families (docs/statistics.md §6.3): each primitive's bootstrap p-value and the level it was tested at
# (1 − its bound's level), None where it was not decided.
def _worse(row: PrimitiveComparison) -> tuple[float, float] | None:
    return (row["p_worse"], 1 - row["upper_level"]) if "p_worse" in row and "upper_level" in row else None


def _within(row: PrimitiveComparison) -> tuple[float, float] | None:
    if "p_noninferior" in row and "lower_level" in row:
        return row["p_noninferior"], 1 - row["lower_level"]
    return None


HOLM_FAMILIES = (("shown worse", _worse), ("shown within the margin", _within))


def holm_lines(comparison: Comparison) -> list[str]:
    """Where Holm's step-down stopped, per family: "Holm's step-down, shown worse: Noul p 0.0005 ≤ 0.0167,
    Score p 0.0005 ≤ 0.025, Choice p 0.9995 > 0.05: stops at Choice". Each primitive is tested at its rank's
    level in order of its p-value; the first not within its level stops it, and no primitive after it is
    shown so, whatever its bound. Empty with fewer than two decided primitives."""
    lines = []
    for family, read in HOLM_FAMILIES:
        decided = [
            (*tested, LABELS.get(prim, prim))
            for prim, row in comparison["primitives"].items()
            if (tested := read(row)) is not None
        ]
        if len(decided) < 2:
            continue
        steps, stopped = [], None
        for p, level, label in sorted(decided, key=lambda step: step[0]):
            if stopped is None and p > level:
                stopped = label
            steps.append(f"{label} p {_p(p)} {'≤' if p <= level else '>'} {_p(level)}")
        end = ""
        if stopped is not None:
            end = f": stops at {stopped}" + ("" if steps[-1].startswith(stopped) else ", so none after it is shown so")
        lines.append(f"Holm's step-down, {family}: {', '.join(steps)}{end}")
    return lines


def _p(value: float) -> str:
    return f"{value:.2g}" if value < 1e-3 else f"{value:.4f}".rstrip("0").rstrip(".")


def chance_line(comparison: Comparison) -> str | None:
    """The scale of chance under the renderings table: how large one rendering's D gets with nothing changed."""
    parts, bases = [], set()
    for prim, row in comparison["primitives"].items():
        if (spread := row.get("chance")) is not None:
            parts.append(
                f"{LABELS.get(prim, prim)} SD {spread['sd']:.3f}, lowest of {spread['n']} ≈ {spread['lowest']:+.3f}"
            )
            bases.add(spread["basis"])
    if not parts:
        return None
    source = {
        "repeats": "as an A/A re-recording with these recordings' repeat noise would give it",
        "within-problem": "from the spread of D among the renderings of one latent problem; the repeat noise is unknown",
    }
    how = "; ".join(source.get(basis, basis) for basis in sorted(bases))
    return f"Scale of chance for one rendering's D, {how}: {'; '.join(parts)}"
