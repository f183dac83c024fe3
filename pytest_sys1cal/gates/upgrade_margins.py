"""What the upgrade gate's rows say about their margins (docs/report.md, ``details.margins``): where δ, δ₀,
α and the ``inconclusive`` choice came from (the thresholds file's section, naming the file and the key path
as its error messages do, or the plugin's defaults), and the notices a run owes its reader: an inconclusive
comparison let pass by ``regression.inconclusive: pass``, and a comparison too noisy for its margins."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..document import ModelBlock
from ..document_upgrade import Design, Margins, SetBy, UpgradeDetails
from ..vocabulary import CALL_READING, LABELS, Verdict
from .rows import GateRow, is_tolerated
from .schema import UpgradeConfig

# A comparison's settings, as thresholds.yaml names them.
SETTINGS = ("max_drop_mean_ovl", "fail_drop_mean_ovl", "alpha", "inconclusive")
# The ones whose defaults are worth saying when a section sets the others (inconclusive is shown anyway).
MARGINS = SETTINGS[:3]


def _section(path: str) -> str:
    """``jev[jev-1.14.0].regression.choice.max_drop_mean_ovl`` → ``jev[jev-1.14.0].regression``."""
    start = path.find(".regression", path.rfind("]") + 1)
    return path[: start + len(".regression")] if start >= 0 else path


def margins_details(config: UpgradeConfig, prim: str, model: ModelBlock | None) -> Margins:
    """``details.margins`` of `prim`'s upgrade-gate row: the values in force and, per setting, the key path and
    line of the thresholds file that set it (null: the plugin's default), with `text` saying it in words."""
    values: dict[str, float | str] = {
        "max_drop_mean_ovl": config.drop[prim],
        "fail_drop_mean_ovl": config.fail_drop[prim],
        "alpha": config.alpha,
        "inconclusive": config.inconclusive,
    }
    found = {key: config.set_by.get(f"{prim}.{key}" if key in MARGINS[:2] else key) for key in SETTINGS}
    set_by: dict[str, SetBy | None] = {
        key: None if where is None else {"path": where[0], "line": where[1]} for key, where in found.items()
    }
    sections = list(dict.fromkeys(_section(where[0]) for where in found.values() if where is not None))
    return {
        "source": "thresholds" if sections else "defaults",
        "file": config.file,
        "sections": sections,
        "max_drop_mean_ovl": config.drop[prim],
        "fail_drop_mean_ovl": config.fail_drop[prim],
        "alpha": config.alpha,
        "inconclusive": config.inconclusive,
        "set_by": set_by,
        "text": _text(config.file, sections, set_by, values, model),
    }


def _text(
    file: str | None,
    sections: list[str],
    set_by: Mapping[str, SetBy | None],
    values: Mapping[str, float | str],
    model: ModelBlock | None,
) -> str:
    if not sections:
        why = "no thresholds file" if file is None else f"{file} sets no regression key for {model_words(model)}"
        return f"the plugin's defaults ({why})"
    text = f"{file}, {' and '.join(sections)}"
    defaults = [key for key in MARGINS if set_by[key] is None]
    if defaults:
        shown = [
            "fail_drop_mean_ovl half of max_drop_mean_ovl" if key == "fail_drop_mean_ovl" else f"{key} {values[key]:g}"
            for key in defaults
        ]
        text += f" (defaults: {', '.join(shown)})"
    return text


def model_words(model: ModelBlock | None) -> str:
    """ "jev jev-1.14.0"; "None None" for a report assembled without a model block."""
    name, version = (None, None) if model is None else (model.get("name"), model.get("version"))
    return f"{name} {version}"


def margins_phrase(margins: Margins) -> str:
    """One line for the summary: the margins in force and where they came from."""
    return (
        f"δ {margins['max_drop_mean_ovl']:g} (passes within), δ₀ {margins['fail_drop_mean_ovl']:g} "
        f"(fails beyond), α {margins['alpha']:g}, inconclusive: {margins['inconclusive']}; from {margins['text']}"
    )


def inconclusive_setting(margins: Margins) -> str:
    """Where ``inconclusive`` was set: ``thresholds.yaml:70 jev.regression.inconclusive``."""
    where = margins["set_by"].get("inconclusive")
    return f"{margins['file']}:{where['line']} {where['path']}" if where else "regression.inconclusive"


def upgrade_notices(gates: Iterable[GateRow]) -> list[str]:
    """The notices of the upgrade gate: comparisons let pass while inconclusive, comparisons too noisy for
    their margins."""
    rows = [(gate, gate.details) for gate in gates if gate.is_upgrade and gate.details]
    notices = []
    tolerated = [details for gate, details in rows if is_tolerated(gate)]
    if tolerated:
        labels = ", ".join(details["label"] for details in tolerated)
        where = inconclusive_setting(tolerated[0]["margins"])
        notices.append(
            f"{len(tolerated)} inconclusive comparison(s) ({labels}) let pass by regression.inconclusive: pass "
            f"({where}); each still shows its verdict, inconclusive, and how many renderings or repeats would decide it"
        )
    short = [
        (details, design)
        for gate, details in rows
        if gate.verdict != Verdict.FAILED and (design := details.get("design")) is not None and not design["enough"]
    ]
    if short:
        notices.append(_design_notice(short))
    return notices


def _design_notice(short: Sequence[tuple[UpgradeDetails, Design]]) -> str:
    """docs/statistics.md §6.6 in words: the smallest margin an unchanged model would reliably be shown
    within exceeds the margin in force."""
    designs = [design for _, design in short]
    each = ", ".join(
        f"{LABELS[d['metric'].split('.')[0]]} {design['mde']:.4f} > δ {design['margin']:g}" for d, design in short
    )
    first = short[0][0]
    head = (
        f"the upgrade comparison is too noisy for its regression margins: at {first['n']} paired renderings, "
        f"{_repeats_said(first)}, its minimum detectable effect ({designs[0]['power']:.0%} power, from its own "
        f"spread of per-rendering differences) is {each}: a drop within the margin cannot reliably be shown, so "
        f"a comparison like this one is often {Verdict.INCONCLUSIVE} unless the new version is better"
    )
    counts = [d["renderings"] for d in designs if d["renderings"] is not None]
    if len(counts) < len(designs):  # a margin of 0: nothing is shown within it
        return f"{head}; no number of renderings or repeats shows a drop within a margin of 0"
    repeats = [r for d in designs if (r := d["repeats"]) is not None]
    if len(repeats) == len(designs):
        return (
            f"{head}. The repeats are too few for the margins: about {max(repeats)} repeats per rendering in both "
            f"recordings (or about {max(counts)} paired renderings) would bring it within them"
        )
    if any(d["repeats_alone"] is False for d in designs):
        why = "more repeats alone would not do it (the change itself varies from rendering to rendering)"
    else:
        why = "the repeat noise of these recordings is unknown, so what more repeats would do cannot be said"
    return f"{head}; {why}: about {max(counts)} paired renderings would bring it within the margins"


def _repeats_said(details: UpgradeDetails) -> str:
    repeats = int(details.get("repeats") or 1)
    if details.get("reading") == CALL_READING:
        return f"each value the mean over {repeats} call{'s' if repeats != 1 else ''} of their own OVL (read per call)"
    return f"each value the mean of {repeats} model repeat{'s' if repeats != 1 else ''}"
