"""The run's one report, built once from what was measured: the analysis, the gates, the notices. Pure (no
pytest, no files): every renderer reads the object it returns, the terminal, the Markdown summary, the JSON
and HTML reports and JUnit XML alike, and the run passed or not according to its `outcome` alone. A saved
report read back becomes the same object (`Report.read_back`), its gate rows typed there once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from .dataset import Dataset
from .document import Counts, Interrupted, Measured, ModelBlock, ReportDocument, ShardBlock, report_document
from .document_sequential import SequentialBlock
from .document_why import MapUsed
from .escape import quoted
from .gates.rows import GateRow, GateSummary, Outcome, summarize
from .gates.schema import Thresholds, UpgradeConfig
from .gates.upgrade_margins import upgrade_notices
from .gates.upgrade_sequential import SequentialFacts
from .recalibration_map import RecalibrationMap, map_notice
from .results import ResultRow, analysis_rows
from .vocabulary import MEAN_READING


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
    # --sys1cal-recalibration: every mapped answer goes through this map before the analysis (recalibration_map.py).
    recalibration: RecalibrationMap | None = None
    # A run of one shard (--sys1cal-shard): the report's ``shard`` block; such a run gates nothing.
    shard: ShardBlock | None = None
    # The upgrade gate recorded in rounds (--sys1cal-sequential, or a folder recorded so): its design and costs.
    sequential: SequentialFacts | None = None
    # The model id sent to the server and pinned, where it is not the version (--sys1cal-model-id); None: the
    # version is the id.
    model_id: str | None = None

    @property
    def pinned(self) -> str:
        """The model id the server is expected to report answering as."""
        return self.model_id or self.version


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
            _mapped(facts, analysis_rows(rows, dataset)),
            seed=facts.seed,
            bootstrap=facts.bootstrap,
            recalibration_splits=facts.recalibration_splits,
            repeats_per_answer=facts.repeats_per_answer,
            **options,
        )
    model: ModelBlock = {
        "name": facts.model,
        "version": facts.version,
        "source": facts.source,
        "server_model": facts.server_model,
    }
    if facts.model_id and facts.model_id != facts.version:  # only then: a report of today's runs is unchanged
        model["model_id"] = facts.model_id
    data = report_document(
        model=model,
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
    if facts.recalibration is not None:  # only then: a report of the raw answers is unchanged
        data["recalibration"] = cast(MapUsed, facts.recalibration.describe())
    interrupted = interruption(facts, data["counts"])
    if interrupted is not None:  # only then: the report of a run that went through its selection is unchanged
        data["interrupted"] = interrupted
    if facts.shard is not None:  # only then: the report of a run of the whole dataset is unchanged
        data["shard"] = facts.shard
    gates = _gates(data, len(dataset.renderings), thresholds, baseline, facts)
    data["gates"] = [gate.to_json() for gate in gates]
    notices = _notices(facts, thresholds, baseline, gates)
    if baseline is not None:  # only then: a report without a baseline is unchanged
        notices += _comparison(data, gates, thresholds, baseline, facts.seed, node_ids)
    data["notices"] = notices
    return Report.of(data, gates)


def _mapped(facts: RunFacts, items: list[Measured]) -> list[Measured]:
    """The rows' answers through the recalibration map of --sys1cal-recalibration (recalibration_map.py), if any."""
    if facts.recalibration is None:
        return items
    return [{**item, "samples": facts.recalibration.apply(item["samples"])} for item in items]


def _comparison(
    data: ReportDocument,
    gates: Sequence[GateRow],
    thresholds: Thresholds | None,
    baseline: Baseline,
    seed: int,
    node_ids: Mapping[str, str] | None,
) -> list[str]:
    """The report's ``comparison`` block, with the upgrade comparison under the reading that did not decide;
    the notice when the two readings disagree."""
    from .gates.upgrade import other_reading
    from .gates.upgrade_verdict import comparison_block, disagreement

    config = thresholds.regression if thresholds else None
    other = other_reading(config, data, baseline.report, seed, _reading(thresholds)) if gates else None
    data["comparison"] = comparison_block(
        data,
        gates,
        baseline.report,
        origin=baseline.origin,
        location=baseline.location,
        node_ids=node_ids,
        other=other,
    )
    differ = disagreement(data["comparison"])
    return [differ] if differ else []


def _reading(thresholds: Thresholds | None) -> str:
    """The reading that decides this run's gates: thresholds.yaml's, else the repeat mean (the default)."""
    return thresholds.reading.value if thresholds else MEAN_READING


def _gates(
    data: ReportDocument, total: int, thresholds: Thresholds | None, baseline: Baseline | None, facts: RunFacts
) -> list[GateRow]:
    """Every configured gate. On a run of the whole dataset a gate that could not be measured fails; on part
    of it (-k, a stop, failed renderings, the rounds a sequential recording stopped at) the threshold gates are
    not applicable. With the upgrade gate recorded in rounds its rows are the sequential design's, and the
    report gets its ``sequential`` block."""
    from .gates.evaluate import evaluate, not_applicable, unmeasured_fails
    from .gates.upgrade import evaluate_upgrade
    from .gates.upgrade_sequential import evaluate_sequential

    rows: list[GateRow] = []
    if baseline is not None and facts.sequential is not None:  # judged in rounds (read as repeat means)
        config = thresholds.regression if thresholds else UpgradeConfig()
        rows, data["sequential"] = evaluate_sequential(
            config, data, baseline.report, facts.sequential, seed=facts.seed, baseline_name=baseline.name
        )
    elif baseline is not None:
        rows = evaluate_upgrade(
            thresholds.regression if thresholds else None,
            data,
            baseline.report,
            seed=facts.seed,
            baseline_name=baseline.name,
            reading=_reading(thresholds),
            splits=facts.recalibration_splits,
        )
    partial = partial_run(data["counts"], total, data.get("interrupted"), data.get("shard"), data.get("sequential"))
    gates = evaluate(thresholds, data) if thresholds is not None else []
    gates = not_applicable(gates, partial) if partial else unmeasured_fails(gates)
    if baseline is not None:
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
    counts: Counts,
    total: int,
    interrupted: Interrupted | None = None,
    shard: ShardBlock | None = None,
    sequential: SequentialBlock | None = None,
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
    if sequential is not None and counts["renderings"] < total:
        return (
            f"the upgrade gate was recorded in rounds and holds {sequential['recorded_rounds']} of "
            f"{sequential['design']['rounds']} ({sequential['latent_problems']} of "
            f"{sequential['design']['latent_problems']} latent problems, {counts['renderings']} of {total} renderings); "
            "threshold gates describe the whole dataset, so they are not applied to part of it: resume the recording "
            "to the full dataset (record mode once without --sys1cal-sequential) to apply them"
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
    if facts.recalibration is not None:
        notices.append(map_notice(facts.recalibration, facts.model, facts.version))
    if facts.server_model and facts.server_model != facts.pinned:
        notices.append(  # the server's words quoted as such (escape.py), each renderer escapes them in turn
            f"the server reported model {quoted(facts.server_model)}, not the pinned {facts.pinned}: these answers are "
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
