"""The trend across every recorded version of a model (``python -m pytest_sys1cal trend``, docs/trend.md): each
version replayed offline (replay.py) into the report its own run would build, summarised in one row (mean
OVL per primitive with a latent-problem bootstrap interval, swap shift, the valid λ test, the gates' outcome
under thresholds.yaml for that version), and each pair of consecutive versions compared as the upgrade gate
would compare them (gates/upgrade.py, the newer version's upgrade settings).

The result is one JSON-able document that the renderers (report/trend_text.py, report/trend_html.py) read.
No pytest here: the command that calls it imports none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..dataset import Dataset
from ..defaults import BOOTSTRAP_RESAMPLES, RECALIBRATION_SPLITS
from ..document import ReportDocument
from ..document_commands import StepPrimitive, TrendDocument, TrendStep, TrendVersion, VersionGates
from ..document_upgrade import UpgradeDetails
from ..errors import InputError, MeasurementError
from ..gates.rows import GateRow, GateSummary, summarize
from ..gates.schema import Thresholds
from ..gates.upgrade import UpgradeError, evaluate_upgrade
from ..models import BUILTIN_ADAPTERS, make_adapter
from ..vocabulary import PRIMITIVES, TREND_SCHEMA
from .replay import open_version, recorded_dataset, replay_folder, replayed_repeats, version_folders, version_report
from .upgrade_baseline import averaged_repeats

# (version, index, count) when a version starts, then (renderings done, in all, failed) as it replays.
Started = Callable[[str, int, int], None]
Progress = Callable[[int, int, int], None]


@dataclass(frozen=True)
class TrendInputs:
    """What the trend replays: `model`'s versions under the cassette `root`, on `dataset`, gated by the
    thresholds file at `thresholds` (None: no gates), every resampling seeded with `seed`."""

    model: str
    root: Path
    dataset: Dataset
    thresholds: Path | None
    seed: int
    environ: Mapping[str, str]


def build_trend(
    inputs: TrendInputs, *, started: Started | None = None, progress: Progress | None = None
) -> TrendDocument:
    """Replay every recorded version in version order and compare each with the one before. Raises InputError
    when the model has no recorded version, or its thresholds file is wrong (a version that cannot be
    replayed is a row saying why, not an error)."""
    if inputs.model not in BUILTIN_ADAPTERS:  # adapters registered by pytest plugins exist only inside pytest
        raise InputError(
            f"--model {inputs.model}: not a built-in adapter ({', '.join(sorted(BUILTIN_ADAPTERS))}); the trend "
            "command runs outside pytest, where adapters registered by plugins are not loaded"
        )
    versions = version_folders(inputs.root, inputs.model)  # a folder without its manifest gets a row saying so
    if not versions:
        raise InputError(
            f"no recorded version of model {inputs.model} under {inputs.root / inputs.model} (a version is a folder "
            "holding a manifest.json); check --cassettes and --model"
        )
    rows, reports = [], {}
    for index, version in enumerate(versions, start=1):
        if started is not None:
            started(version, index, len(versions))
        row, replayed = _version(inputs, version, progress)
        rows.append(row)
        if replayed is not None:
            reports[version] = replayed
    steps = [_step(inputs, old, new, reports) for old, new in zip(versions, versions[1:], strict=False)]
    dataset = inputs.dataset
    return {
        "schema": TREND_SCHEMA,
        "model": inputs.model,
        "cassettes": str(inputs.root / inputs.model),
        "dataset": {"name": dataset.name, "sha256": dataset.sha256, "renderings": len(dataset.renderings)},
        "seed": inputs.seed,
        "thresholds": None if inputs.thresholds is None else str(inputs.thresholds),
        "versions": rows,
        "steps": steps,
    }


def _thresholds(inputs: TrendInputs, version: str) -> Thresholds | None:
    if inputs.thresholds is None:
        return None
    from ..gates.config import load_thresholds

    return load_thresholds(inputs.thresholds, inputs.model, version)


# A replayed version's report and the thresholds it was gated by (its step's regression settings too).
Replayed = tuple[ReportDocument, Thresholds | None]


def _version(inputs: TrendInputs, version: str, progress: Progress | None) -> tuple[TrendVersion, Replayed | None]:
    """One version's row, and its report with its thresholds (None when it could not be replayed: the row says
    why)."""
    row: TrendVersion = {"version": version, "replayed": False, "reason": None}
    try:
        adapter = make_adapter(inputs.model, [], version=version, base_url=None, environ=inputs.environ)
        folder = open_version(inputs.root, inputs.model, version, adapter)
    except InputError as exc:
        return {**row, "reason": str(exc)}, None
    name, sha256 = recorded_dataset(folder)
    row.update(
        {"source": folder.source, "repeats": folder.repeats(None), "repeats_per_answer": folder.repeats_per_answer}
    )
    row.update({"averaged_repeats": replayed_repeats(folder), "dataset": {"name": name, "sha256": sha256}})
    if sha256 != inputs.dataset.sha256:
        row["reason"] = (
            f"recorded on dataset {name} sha256 {sha256[:12]}…, not on {inputs.dataset.name} "
            f"sha256 {inputs.dataset.sha256[:12]}… (give that dataset with --dataset)"
        )
        return row, None
    try:
        rows = replay_folder(folder, inputs.dataset, adapter, progress=progress)
    except MeasurementError as exc:
        return {**row, "reason": f"replay stopped: {exc}"}, None
    thresholds = _thresholds(inputs, version)
    report = version_report(
        folder,
        rows,
        inputs.dataset,
        thresholds,
        seed=inputs.seed,
        bootstrap=BOOTSTRAP_RESAMPLES,
        recalibration_splits=RECALIBRATION_SPLITS,
    )
    row["replayed"] = True
    _summary(row, report.data, report.gates, inputs.seed)
    row["thresholds"] = None if thresholds is None else thresholds.describe()
    failed = [r for r in rows if r.error is not None]
    row["first_failure"] = None if not failed else f"{failed[0].instance_id}: {failed[0].error}"
    return row, (report.data, thresholds)


def _summary(row: TrendVersion, data: ReportDocument, gates: GateSummary, seed: int) -> None:
    """The row's numbers, read from the version's report (mean OVL exactly as its run reports it)."""
    from ..analysis.trend import mean_ovl_intervals

    intervals = mean_ovl_intervals(data["items"], seed=seed)
    for prim in PRIMITIVES:  # the point estimate is Table 1's, to the last digit
        table1 = data["primitives"].get(prim)
        intervals[prim]["mean"] = None if table1 is None else table1["mean_ovl"]
    swap, test = data["option_swap"], data["uncertainty"]["test"]
    counted: VersionGates = {
        "outcome": str(gates.outcome),
        "count": len(gates.rows),
        "failed": [g.name for g in gates.failed],
        "not_applicable": len(gates.not_applicable),
    }
    row.update(
        {
            "counts": data["counts"].copy(),
            "mean_ovl": intervals,
            "swap_shift": {"mean_shift": swap["mean_shift"], "p_value": swap["p_value"]} if swap else None,
            "lambda_test": {"p_value": test["p_value"], "statistic": test["statistic"], "effect": test["effect"]},
            "gates": counted,
        }
    )


def _step(inputs: TrendInputs, old: str, new: str, reports: Mapping[str, Replayed]) -> TrendStep:
    """The upgrade comparison of `new` against `old`, as ``--sys1cal-baseline=<old>`` on a run of `new` makes it."""
    step: TrendStep = {"from": old, "to": new, "compared": False, "reason": None}
    missing = [v for v in (old, new) if v not in reports]
    if missing:
        return {**step, "reason": f"{' and '.join(missing)} could not be replayed"}
    (base, _), (data, thresholds) = reports[old], reports[new]
    theirs, ours = averaged_repeats(base), averaged_repeats(data)
    if theirs != ours:
        return {
            **step,
            "reason": f"{old} averages {theirs} model repeat(s) per answer, {new} {ours}: the OVL of a mean depends "
            "on how many repeats it averages, so only recordings averaging as many compare",
        }
    try:
        rows = evaluate_upgrade(
            thresholds.regression if thresholds else None,
            data,
            base,
            seed=inputs.seed,
            baseline_name=old,
            explain=False,
        )
    except UpgradeError as exc:
        return {**step, "reason": str(exc)}
    from ..gates.evaluate import unmeasured_fails

    counts = data["counts"]
    rows = rows if counts["failed"] or counts["renderings"] < len(inputs.dataset.renderings) else unmeasured_fails(rows)
    return {**step, "compared": True, "outcome": str(summarize(rows).outcome), "primitives": _deltas(rows)}


def _deltas(rows: list[GateRow]) -> dict[str, StepPrimitive]:
    # Every row of the upgrade gate carries its comparison's details (gates/upgrade.py).
    return {row.primitive: _delta(row, row.details) for row in rows if row.details is not None}


def _delta(row: GateRow, d: UpgradeDetails) -> StepPrimitive:
    advice = d.get("advice")
    return {
        "n": d["n"],
        "baseline": d["baseline"],
        "new": d["new"],
        "difference": d["difference"],
        "lower": d.get("lower"),
        "lower_level": d.get("lower_level"),
        "upper": d.get("upper"),
        "upper_level": d.get("upper_level"),
        "se": d.get("se"),
        "verdict": str(row.verdict),
        "tolerated": row.tolerated,
        "margin": d["margin"],
        "fail_margin": d["fail_margin"],
        "margins": d["margins"]["text"],
        "advice": None if advice is None else advice["text"],
        "explanation": row.explanation,
    }
