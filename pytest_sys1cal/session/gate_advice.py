"""What to do after a gate failed, and what to do when there are no gates: the fix that applies, named.

After a failed gate the run says where the gates in force came from (the thresholds file, the model's section
and its line, the version's own block, or a section the version inherits because it has none of its own), and
then the step that fits: the upgrade comparison with another recorded version (`--sys1cal-baseline`), the
version's own gates written from a report (`thresholds --version --update`, or `thresholds --version` to see
them first), or, when the cassettes themselves are what is wrong (the server reported another model than the
version they are filed under), a re-recording, with how many paid requests it costs. Re-recording a folder of
the right model changes nothing a gate reads, so it is not proposed then.

Pure of pytest: it reads the run's Settings, the resolved thresholds, the cassette folder and the report.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from ..bundled import REFERENCE_MODEL
from ..store.folder import folders_under
from ..versions.replay import natural_key
from .options import THRESHOLDS_FILE, Settings, argument

if TYPE_CHECKING:
    from ..gates.schema import Thresholds
    from ..run_report import Report
    from .advice import Advice

REPORT = "sys1cal-report.json"  # the report path a printed command asks for when this run wrote none


def shown(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    relative = os.path.relpath(path)
    return path.as_posix() if relative.startswith("..") else Path(relative).as_posix()


def thresholds_command(advice: Advice, *extra: str, report: str | None = None) -> str:
    """`python -m pytest_sys1cal thresholds REPORT …` for this run: its report (or `report`, or the one a run
    with --sys1cal-report would write) and its thresholds file when that is not ./thresholds.yaml."""
    settings = advice.settings
    if report is None:
        report = shown(settings.report) if settings.report is not None else REPORT
    parts = ["python", "-m", "pytest_sys1cal", "thresholds", report, *extra]
    if settings.thresholds is not None and shown(settings.thresholds) != THRESHOLDS_FILE:
        parts += ["--file", shown(settings.thresholds)]
    return shlex.join(parts)


def write_gates(advice: Advice, *, record: bool = False) -> str:
    """How to give this version gates when the thresholds in force have none: a full run that writes its report,
    then the thresholds command on it; `record`: the folder lacks renderings, so that run records them (record
    mode once), else it would stop on the first one missing. It names no output of this run (the report says it
    too, and must not depend on where it is written); `from_this_report` gives the shortcut."""
    update = thresholds_command(advice, "--update", report=REPORT)
    run = with_report(advice, record=record)
    return f"Write them from a full run of the version you trust: {advice.key if record else ''}{run}, then {update}"


def from_this_report(advice: Advice) -> str | None:
    """When this full run wrote a report and has no gates: the command that writes them from it (terminal)."""
    if advice.settings.report is None:
        return None
    version = advice.adapter.version
    return f"If {version} is the version you trust, write its gates from this run's report: " + thresholds_command(
        advice, "--update"
    )


def with_report(advice: Advice, *, record: bool = False) -> str:
    """This run's replay (`record`: its recording of what is missing, then the replay of the rest), writing the
    report the thresholds command reads."""
    if record:
        whole = shlex.split(advice.command("once"))
        return shlex.join([*whole[: len(whole) - len(advice.selection)], argument("report", REPORT)])
    return shlex.join([*advice.run_parts(), argument("report", REPORT)])


def own_gates(advice: Advice) -> str:
    """The command(s) that give this version a block of its own, rewritten in place with the change shown."""
    update = thresholds_command(advice, "--version", "--update")
    return update if advice.settings.report is not None else f"{with_report(advice)}, then {update}"


def after_failed_gates(
    advice: Advice, report: Report, thresholds: Thresholds | None, baseline: str | None
) -> list[str]:
    """The closing lines of the gate block when a gate FAILED: where the gates came from, then the fix."""
    regression = [gate.name for gate in report.gates.failed_upgrade]
    threshold = [gate.name for gate in report.gates.failed_absolute]
    lines: list[str] = []
    if threshold and thresholds is not None:
        lines.append(f"These gates are {shown(Path(thresholds.path))}: {thresholds.provenance()}.")
    if regression:
        lines.append(
            f"The upgrade gate: {advice.adapter.version} is shown worse than the baseline {baseline} beyond the "
            "margin; that is a regression, unless the change is intended."
        )
    if threshold:
        lines += _threshold_fix(advice, report, thresholds, baseline, regression)
    lines += recalibration_fix(advice, report)
    suspect = suspect_cassettes(advice)
    if suspect:
        folder = advice.folder
        repeats = int((folder.manifest or {}).get("repeats") or 1)
        requests = repeats * len(advice.dataset.renderings)
        lines.append(
            f"The cassettes may be what is wrong ({suspect}): re-record them ({requests:,} paid requests): "
            f"{advice.key}{advice.command('all')}"
        )
    elif regression:
        lines.append("Re-recording the same model would not change the verdict.")
    else:
        lines.append("Otherwise this is a regression (re-recording the same model would not change the verdict).")
    return lines


def recalibration_fix(advice: Advice, report: Report) -> list[str]:
    """When the upgrade's diagnosis says a primitive that failed lost only its calibration (docs/statistics.md
    §8.5): the map that gives it back, written from this run's report, and the run that gates what ships with it."""
    comparison = report.data.get("comparison")
    failed = {gate.primitive for gate in report.gates.failed_upgrade}
    rows = comparison["primitives"] if comparison else {}
    recoverable = [p for p, row in rows.items() if p in failed and row.get("why", {}).get("cause") == "miscalibration"]
    if not recoverable or "recalibration" in report.data:
        return []
    source = shown(advice.settings.report) if advice.settings.report is not None else REPORT
    fit = shlex.join(["python", "-m", "pytest_sys1cal", "recalibrate", source, "--out", "map.json"])
    first = "" if advice.settings.report is not None else f"{with_report(advice)}, then "
    baseline = [argument("baseline", advice.settings.baseline)] if advice.settings.baseline else []
    cassettes = Path(shown(advice.settings.cassettes))  # as typed where pytest ran: no machine path in the summary
    replay = shlex.join([*advice.run_parts(cassettes), *baseline, argument("recalibration", "map.json")])
    return [
        "The diagnosis says a recalibration gives the old quality back: write the map with "
        f"{first}{fit}; apply it to the model's outputs (python -m pytest_sys1cal docs recalibration), and gate what "
        f"ships by replaying through it: {replay}"
    ]


def _threshold_fix(
    advice: Advice,
    report: Report,
    thresholds: Thresholds | None,
    baseline: str | None,
    regression: Sequence[str],
) -> list[str]:
    """The step for failed threshold gates, by where they came from and what this run compared."""
    version = advice.adapter.version
    own = own_gates(advice)
    compared = bool(report.gates.upgrade)
    if baseline is not None and regression:
        return []  # the upgrade gate's line said it: a regression against the version compared with
    if baseline is not None and compared:
        return [
            f"The upgrade comparison with {baseline} passed. If {version} is now the version you trust, give it "
            f"gates of its own (rewritten in place, the change shown as a diff): {own}"
        ]
    if thresholds is not None and thresholds.inherited:
        others = [v for v in _recorded_versions(advice) if v != version]
        earlier = [v for v in others if natural_key(v) < natural_key(version)]
        compare = (
            f"compare it with the version you run today, rendering by rendering: "
            f"{shlex.join([*advice.run_parts(), argument('baseline', (earlier or others)[-1])])}"
            + (f" (recorded here: {', '.join(others)})" if len(others) > 1 else "")
            if others
            else "record the version you run today beside it and compare the two with --sys1cal-baseline=VERSION"
        )
        return [
            f"If {version} differs on purpose from the version {thresholds.model}'s section was written for, "
            f"{compare}; if that passes, give {version} gates of its own: {own}"
        ]
    see = thresholds_command(advice, "--version", "--paste")
    if advice.settings.report is None:
        see = f"{with_report(advice)}, then {see}"
    return [
        f"{version} has gates of its own. What the rule would write from this run (printed, nothing written): "
        f"{see}; rewrite the block in place with --update instead of --paste only if the change is intended"
    ]


def _recorded_versions(advice: Advice) -> list[str]:
    """Versions of this model recorded under the cassette root, in version order (1.9 before 1.13)."""
    model = advice.settings.model
    found = [name.split("/", 1)[1] for name in folders_under(advice.settings.cassettes) if name.startswith(f"{model}/")]
    return sorted(found, key=natural_key)


def suspect_cassettes(advice: Advice) -> str | None:
    """Why the cassettes themselves may be wrong, or None: the server reported, for the answers filed under
    this version, a model that is another recorded version of this model, or (for Jev, whose server reports the
    version it serves) any other model. A bundled or reconstructed set is never re-recorded."""
    folder, version = advice.folder, advice.adapter.version
    reported = folder.server_model
    if folder.reconstructed or folder.read_only or not reported or reported == version:
        return None
    if reported in _recorded_versions(advice) or advice.settings.model == REFERENCE_MODEL:
        return f"the server reported model {reported} for answers filed under {version}"
    return None


def missing_snippet(settings: Settings, known: Sequence[str]) -> str | None:
    """Why a run of the default model (jev) is not what the project meant, when its thresholds file was written for
    another model and no ini names one: init's snippet was not added (its "Next: 1." pasted first would record jev
    and ask for Jev's key). The snippet, with the version init wrote into the file's comment, else a placeholder."""
    path = settings.thresholds
    if settings.model_given or not settings.default_thresholds or path is None:
        return None  # a model or a thresholds file named on purpose: the run's notice says what it gates
    try:
        text = path.read_text(encoding="utf-8")
        top = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None  # the thresholds reader says what is wrong with it
    sections = [key for key in top if key in known] if isinstance(top, dict) else []
    if not sections or settings.model in sections:
        return None
    model = sections[0]
    found = re.search(rf"--sys1cal-model={re.escape(model)} --sys1cal-model-version=(\S+)", text)
    version = found.group(1) if found else "YOUR-VERSION"
    return (
        f"{shown(path)} is written for {' and '.join(sections)}, but no ini names a model, so this run would be of "
        f"{settings.model}, the default (recording it would need Jev's key): add the snippet init printed to "
        f'pyproject.toml, [tool.pytest.ini_options] sys1cal_model = "{model}" sys1cal_model_version = "{version}" '
        f"(or give --sys1cal-model={model} --sys1cal-model-version={version})"
    )
