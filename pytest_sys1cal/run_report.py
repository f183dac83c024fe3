"""The run's one report, built once from what was measured: the analysis, the gates, the notices. Pure (no
pytest, no files): every renderer reads the object it returns, the terminal, the Markdown summary, the JSON
and HTML reports and JUnit XML alike, and the run passed or not according to its `outcome` alone. A saved
report read back becomes the same object (`Report.read_back`), its gate rows typed there once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .dataset import Dataset
from .document import Counts, Interrupted, ReportDocument, ShardBlock, report_document
from .escape import quoted
from .gates.rows import GateRow, GateSummary, Outcome, summarize
from .gates.schema import Thresholds
from .gates.upgrade_margins import upgrade_notices
from .results import ResultRow, analysis_rows


@dataclass(frozen=True)
class RunFacts:
    """What the report says about the run beside its numbers."""

    model: str
    version: str
    source: str  # of the cassettes: recorded, reconstructed, mixed
    server_model: str | None
    repeats: int
    repeats_per_answer: int
    seed: int
    bootstrap: int
    recalibration_splits: int
    # The collection's selection (after -k/-m deselection), which a stopped run did not get through; None: as
    # many as ran. `stopped`: why the run stopped early (Ctrl-C, -x, a fatal error), None when it was not.
    selected: int | None = None
    stopped: str | None = None
    # How to write gates for this version when the thresholds in force have none, from a full run's report
    # (session/gate_advice.py words it; it names no output of this run, so the report stays the same wherever
    # it is written).
    write_gates: str | None = None
    # A run of one shard (--sys1cal-shard): the report's ``shard`` block; such a run gates nothing.
    shard: ShardBlock | None = None


@dataclass(frozen=True)
class Baseline:
    """The report a run is compared with, how to name it in messages, and where it came from: `origin` is
    "version folder", "saved report" or "bundled reference", `location` the folder or file as shown to a
    reader (relative to where pytest ran when inside it)."""

    report: ReportDocument
    name: str
    origin: str = "saved report"
    location: str = ""


@dataclass(frozen=True)
class Report:
    """`data` is the JSON report exactly as written (docs/report.md); `gates` its gate rows, typed, and what they
    add up to (gates/rows.py counts it once, for every renderer)."""

    data: ReportDocument
    gates: GateSummary

    @classmethod
    def of(cls, data: ReportDocument, gates: Sequence[GateRow]) -> Report:
        return cls(data, summarize(gates))

    @classmethod
    def read_back(cls, data: ReportDocument) -> Report:
        """A saved report (document.read_report's) as a run's: its ``gates[]`` typed here, once."""
        return cls.of(data, [GateRow.from_json(gate) for gate in data.get("gates") or []])

    @property
    def outcome(self) -> Outcome:
        return self.gates.outcome

    @property
    def passed(self) -> bool:
        return self.outcome in (Outcome.PASSED, Outcome.NONE)


def build_report(
    facts: RunFacts,
    rows: Sequence[ResultRow],
    dataset: Dataset,
    thresholds: Thresholds | None,
    baseline: Baseline | None,
    node_ids: Mapping[str, str] | None = None,
) -> Report:
    """Analyse the rows, judge the gates, say what the user must know. `node_ids`: instance id → the node id
    that re-runs the rendering (the run's, session/node_ids.py), named beside each rendering of an upgrade
    comparison. Raises UpgradeError when the baseline cannot be compared with this run."""
    from .analysis import analyze, collector_paused

    options = thresholds.analysis_options() if thresholds else {}
    # The rows' samples too are parsed with the collector paused (analysis.collector_paused says why).
    with collector_paused():
        analysis = analyze(
            analysis_rows(rows, dataset),
            seed=facts.seed,
            bootstrap=facts.bootstrap,
            recalibration_splits=facts.recalibration_splits,
            **options,
        )
    data = report_document(
        model={
            "name": facts.model,
            "version": facts.version,
            "source": facts.source,
            "server_model": facts.server_model,
        },
        dataset={
            "name": dataset.name,
            "sha256": dataset.sha256,
            "renderings": len(dataset.renderings),
            "latent_problems": dataset.latent_problems,
        },
        repeats=facts.repeats,
        repeats_per_answer=facts.repeats_per_answer,
        seed=facts.seed,
        analysis=analysis,
    )
    interrupted = interruption(facts, data["counts"])
    if interrupted is not None:  # only then: the report of a run that went through its selection is unchanged
        data["interrupted"] = interrupted
    if facts.shard is not None:  # only then: the report of a run of the whole dataset is unchanged
        data["shard"] = facts.shard
    gates = _gates(data, len(dataset.renderings), thresholds, baseline, facts.seed)
    data["gates"] = [gate.to_json() for gate in gates]
    if baseline is not None:  # only then: a report without a baseline is unchanged
        from .gates.upgrade_verdict import comparison_block

        data["comparison"] = comparison_block(
            data, gates, baseline.report, origin=baseline.origin, location=baseline.location, node_ids=node_ids
        )
    data["notices"] = _notices(facts, thresholds, baseline, gates)
    return Report.of(data, gates)


def _gates(
    data: ReportDocument, total: int, thresholds: Thresholds | None, baseline: Baseline | None, seed: int
) -> list[GateRow]:
    """Every configured gate. On a run of the whole dataset a gate that could not be measured fails; on part
    of it (-k, a stop, failed renderings) the threshold gates are not applicable."""
    from .gates.evaluate import evaluate, not_applicable, unmeasured_fails
    from .gates.upgrade import evaluate_upgrade

    partial = partial_run(data["counts"], total, data.get("interrupted"), data.get("shard"))
    gates = evaluate(thresholds, data) if thresholds is not None else []
    gates = not_applicable(gates, partial) if partial else unmeasured_fails(gates)
    if baseline is not None:
        config = thresholds.regression if thresholds else None
        rows = evaluate_upgrade(config, data, baseline.report, seed=seed, baseline_name=baseline.name)
        # A comparison describes the renderings it paired, so it stands on part of the dataset too; on a run
        # of the whole dataset a primitive that could not be compared fails rather than pass unseen.
        gates += rows if partial else unmeasured_fails(rows)
    return gates


def interruption(facts: RunFacts, counts: Counts) -> Interrupted | None:
    """The report's ``interrupted`` block: why the run stopped, how many renderings the collection selected
    and how many were measured; None when every selected rendering ran (a stop at the last item included)."""
    selected = counts["renderings"] if facts.selected is None else facts.selected
    if facts.stopped is None or counts["renderings"] >= selected:
        return None
    return {"reason": facts.stopped, "selected": selected, "measured": counts["measured"]}


def partial_run(
    counts: Counts, total: int, interrupted: Interrupted | None = None, shard: ShardBlock | None = None
) -> str | None:
    """Why this run measured less than the whole dataset (or, a shard's, gates nothing), or None."""
    if interrupted:
        return (
            f"the run was interrupted ({interrupted['reason']}) after {counts['renderings']} of "
            f"{interrupted['selected']} selected renderings; threshold gates describe the whole dataset, so they "
            "are not applied to part of it"
        )
    if shard:
        return (
            f"this run is shard {shard['index']} of {shard['count']} ({counts['renderings']} of {total} renderings, "
            f"{shard['latent_problems']} of {shard['of_latent_problems']} latent problems); threshold gates describe "
            "the whole dataset, so a shard gates nothing: merge the shards and replay the merged folder to gate it"
        )
    if counts["renderings"] < total:
        return (
            f"only {counts['renderings']} of {total} renderings were selected; threshold gates describe the "
            "whole dataset, so they are not applied to part of it"
        )
    if counts["failed"]:
        return (
            f"{counts['failed']} of {total} renderings could not be measured; threshold gates describe the "
            "whole dataset, so they are not applied to the rest"
        )
    return None


def _notices(
    facts: RunFacts, thresholds: Thresholds | None, baseline: Baseline | None, gates: Sequence[GateRow]
) -> list[str]:
    """What the user must know about this run's inputs, said in the terminal, the summary and the report."""
    notices = []
    if facts.server_model and facts.server_model != facts.version:
        notices.append(  # the server's words quoted as such (escape.py), each renderer escapes them in turn
            f"the server reported model {quoted(facts.server_model)}, not the pinned {facts.version}: these answers are "
            f"filed under {facts.version}"
        )
    only = "only the upgrade comparison gates this run" if baseline is not None else "this run gates nothing"
    how = f". {facts.write_gates}" if facts.write_gates else ""
    if thresholds is not None and not thresholds.gates:
        # One line, said for a version with no gates of its own and none to inherit: never another model's floors.
        why = (
            thresholds.notice or f"{' + '.join(thresholds.layers)} set{'s' if len(thresholds.layers) == 1 else ''} none"
        )
        notices.append(f"{thresholds.path}: no gates for {facts.model} {facts.version} yet ({why}): {only}{how}")
    elif thresholds is None and baseline is None:
        notices.append(f"no thresholds.yaml and no baseline: this run gates nothing{how}")
    extra = next((g.details["only_in_new"] for g in gates if g.details and g.details.get("only_in_new")), None)
    if extra and baseline is not None:
        notices.append(
            f"the baseline {baseline.name} lacks {extra} of the renderings this run measured; "
            "the comparison uses only the renderings in both"
        )
    return notices + upgrade_notices(gates)
