"""The upgrade gate recorded in rounds (--sys1cal-sequential; docs/statistics.md §7): each gated primitive's
row judged by the sequential design on the problems recorded so far (analysis/sequential.py) instead of the
fixed design's bounds, and the report's ``sequential`` block (document_sequential.py): the round it stopped at,
what it cost, saved and would have cost in full. Rows keep the comparison's other details (Δ̂, the paired
renderings, Δ per family); the fixed design's bounds at their Holm levels are left out, since they are not
what decided. A primitive still undecided when the recording stopped short of the design's end is
inconclusive and never tolerated: `regression.inconclusive: pass` applies to the design's last round only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..document import ReportDocument
from ..document_sequential import ExpectedCost, SequentialBlock, SequentialStanding
from ..document_upgrade import UpgradeDetails
from ..vocabulary import Verdict
from .rows import GateRow
from .schema import UpgradeConfig
from .upgrade import UpgradeError, check_baseline, evaluate_upgrade

if TYPE_CHECKING:  # the analysis (numpy) is imported when a comparison is made, not with the gates
    from ..analysis.sequential import Outcome
    from ..analysis.sequential_design import Design

CONTINUE = "continue"  # analysis/sequential.py's standing of a primitive the rounds so far did not decide
SPENDING_NAMES = {"obrien-fleming": "O'Brien–Fleming", "pocock": "Pocock"}


@dataclass(frozen=True)
class SequentialFacts:
    """What the run knows of its recording in rounds beside the report: the design (its spending function, rounds
    and the seed of its order of latent problems), the requests each latent problem costs (all its renderings and
    repeats, as the plan prices them) and the plan's expected cost."""

    spending: str
    rounds: int
    seed: int
    requests: Mapping[str, int]
    expected: ExpectedCost | None = None


def evaluate_sequential(
    config: UpgradeConfig,
    report: ReportDocument,
    baseline: ReportDocument,
    facts: SequentialFacts,
    *,
    seed: int,
    baseline_name: str,
) -> tuple[list[GateRow], SequentialBlock]:
    """The upgrade rows judged in rounds, and the report's ``sequential`` block. Raises UpgradeError as the fixed
    gate does, and SequentialError (a usage error) for a recording that is not the first whole rounds of its
    seeded order."""
    from ..analysis.paired import PairingError
    from ..analysis.sequential import judge
    from ..analysis.sequential_design import problem_order
    from ..analysis.upgrade import Margin

    dataset = report.get("dataset")
    check_baseline(baseline, dataset.get("sha256") if dataset else None, baseline_name)
    margins = {p: Margin(config.drop[p], config.fail_drop[p]) for p in config.primitives}
    try:
        outcome, design = judge(
            report, baseline, facts.rounds, facts.spending, margins, config.alpha, facts.seed, config.resamples
        )
    except PairingError as exc:
        raise UpgradeError(f"{baseline_name}: {exc}") from None
    block = sequential_block(outcome, design, facts, report)
    # The rows describe the problems the verdict was reached on: a recording that holds more rounds than the
    # look that decided (a whole folder judged in rounds) is described at that look.
    order = problem_order([item["latent_instance_id"] for item in baseline["items"]], facts.seed)
    judged = set(order[: design.ends[outcome.look - 1]])
    seen: ReportDocument = {
        **report,
        "items": [item for item in report["items"] if item["latent_instance_id"] in judged],
    }
    rows = evaluate_upgrade(config, seen, baseline, seed, baseline_name=baseline_name)
    return [_judged(row, block, config) for row in rows], block


def sequential_block(
    outcome: Outcome, design: Design, facts: SequentialFacts, report: ReportDocument
) -> SequentialBlock:
    """Where the comparison stands (analysis/sequential.py's Outcome and Design), what it cost and saved."""
    from ..analysis.sequential import t_critical

    k = outcome.look - 1
    looks = outcome.looks
    measured = [prim for prim, standing in outcome.standing.items() if standing != Verdict.NOT_MEASURED]
    nominal = design.nominal(design.alpha / max(len(measured), 1))[k]
    primitives: dict[str, SequentialStanding] = {}
    for prim, standing in outcome.standing.items():
        problems = int(looks.problems[prim][k])
        primitives[prim] = {
            "standing": str(standing),
            "decided_at": _decided_at([history[prim] for history in outcome.history]),
            "difference": _finite(looks.difference[prim][k]),
            "se": _finite(looks.se[prim][k]),
            "latent_problems": problems,
            "t_noninferior": _finite(looks.statistic["noninferior"][prim][k]),
            "t_worse": _finite(looks.statistic["worse"][prim][k]),
            "critical": _finite(t_critical(problems - 1, nominal)) if problems >= 2 and nominal > 0 else None,
        }
    recorded = {item["latent_instance_id"] for item in report["items"]}
    recorded_rounds = design.ends.index(len(recorded)) + 1 if len(recorded) in design.ends else outcome.look
    requests = sum(facts.requests.get(problem, 0) for problem in recorded)
    full = sum(facts.requests.values())
    decided = all(standing != CONTINUE for standing in outcome.standing.values())
    block: SequentialBlock = {
        "design": {
            "spending": design.spending,
            "rounds": design.rounds,
            "alpha": design.alpha,
            "seed": facts.seed,
            "latent_problems": design.problems,
            "ends": list(design.ends),
        },
        "round": outcome.look,
        "recorded_rounds": recorded_rounds,
        "decided": decided,
        "early": decided and outcome.look < design.rounds,
        "latent_problems": len(recorded),
        "renderings": report["counts"]["renderings"],
        "requests": requests,
        "full_requests": full,
        "saved_requests": full - requests,
        "primitives": primitives,
        "line": "",
    }
    if facts.expected is not None:
        block["expected"] = facts.expected
    block["line"] = sequential_line(block)
    return block


def sequential_line(block: SequentialBlock) -> str:
    """The block in one sentence: the round it stopped at, what it cost and saved, what a full recording costs."""
    design = block["design"]
    at = f"round {block['round']} of {design['rounds']}"
    share = f"{design['ends'][block['round'] - 1]} of {design['latent_problems']} latent problems"
    spent = f"{block['requests']:,} requests recorded"
    if block["recorded_rounds"] > block["round"]:
        spent += f" ({block['recorded_rounds']} rounds)"
    if not block["decided"]:
        return (
            f"sequential: not decided after {at} ({share}, {block['requests']:,} of {block['full_requests']:,} "
            "requests recorded): the recording stopped before the design did; resume it to record the next rounds"
        )
    if block["early"]:
        return (
            f"sequential: stopped at {at} ({share}), every gated primitive decided: {spent}, "
            f"{block['saved_requests']:,} saved; a full recording would have cost {block['full_requests']:,}"
        )
    return (
        f"sequential: went to the last round ({at}, all {design['latent_problems']} latent problems): {spent}, "
        "none saved; the verdict is the fixed design's at the last round's level"
    )


def _decided_at(history: Sequence[str]) -> int | None:
    """The round from which a primitive's standing stayed what it is now; None while it continues."""
    if not history or history[-1] == CONTINUE:
        return None
    at = len(history)
    while at > 1 and history[at - 2] == history[-1]:
        at -= 1
    return at


def _finite(value: float) -> float | None:
    number = float(value)
    return number if number == number and abs(number) != float("inf") else None


def _judged(row: GateRow, block: SequentialBlock, config: UpgradeConfig) -> GateRow:
    """An upgrade row with the sequential standing of its primitive as its verdict."""
    standing = block["primitives"].get(row.primitive)
    if standing is None or row.details is None or standing["standing"] == Verdict.NOT_MEASURED:
        return row
    undecided = standing["standing"] == CONTINUE
    verdict = Verdict.INCONCLUSIVE if undecided else Verdict(standing["standing"])
    details: UpgradeDetails = row.details.copy()
    _without_fixed_bounds(details)
    details["sequential"] = standing
    details["verdict"] = str(verdict)
    if verdict != Verdict.INCONCLUSIVE or undecided:
        details.pop("advice", None)
    tolerated = verdict == Verdict.INCONCLUSIVE and not undecided and config.inconclusive == "pass"
    explanation = _explanation(verdict, details, block, undecided)
    if tolerated:
        explanation += " Let pass by regression.inconclusive: pass."
    return GateRow(
        name=row.name,
        metric=row.metric,
        observed=row.observed,
        limit=row.limit,
        verdict=verdict,
        explanation=explanation,
        baseline=row.baseline,
        new=row.new,
        details=details,
        tolerated=tolerated,
    )


def _without_fixed_bounds(details: UpgradeDetails) -> None:
    """The fixed design's bounds at their Holm levels taken out: they are not what decided."""
    details.pop("lower", None)
    details.pop("lower_level", None)
    details.pop("upper", None)
    details.pop("upper_level", None)
    details.pop("p_noninferior_holm", None)
    details.pop("p_worse_holm", None)


def _explanation(verdict: Verdict, m: UpgradeDetails, block: SequentialBlock, undecided: bool) -> str:
    design, standing = block["design"], m["sequential"]
    head = (
        f"{m['label']} {m['new']:.3f} vs baseline {m['baseline']:.3f} on "
        f"{m['n']} paired renderings of the first {standing['latent_problems']} of {design['latent_problems']} latent "
        f"problems in the seeded order (round {block['round']} of {design['rounds']}): Δ = {m['difference']:+.4f}"
    )
    rule = (
        f"{SPENDING_NAMES.get(design['spending'], design['spending'])} spending over {design['rounds']} rounds, Holm "
        f"over the gated primitives at α {design['alpha']:g} (docs/statistics.md §7)"
    )
    if undecided:
        return (
            f"{head}; not decided yet (its t statistics {_t(standing['t_noninferior'])} for a drop within "
            f"{m['margin']:g} and {_t(standing['t_worse'])} for one beyond {m['fail_margin']:g} crossed no boundary "
            f"of the {rule}): the recording stopped before the design did; resume it to record the next rounds."
        )
    when = f"at round {standing['decided_at']}"
    if verdict == Verdict.FAILED:
        return f"{head}; shown worse than -{m['fail_margin']:g} {when} ({rule}): the drop is real and larger than tolerated."
    if verdict == Verdict.PASSED:
        return f"{head}; shown within the margin {m['margin']:g} {when} ({rule}): any drop is within the margin."
    advice = m.get("advice")
    said = f" {advice['text'][:1].upper()}{advice['text'][1:]}." if advice else ""
    return (
        f"{head}; undecided at the last round: neither shown within the margin {m['margin']:g} nor shown worse than "
        f"-{m['fail_margin']:g} ({rule}).{said}"
    )


def _t(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
