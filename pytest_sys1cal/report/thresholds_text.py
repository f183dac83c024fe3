"""A thresholds.yaml section as text, from the threshold rule's result (gates/thresholds_rule.py): every
limit with its measured value and SE in a comment, every gate left out with the reason, ready to paste or to
append to a thresholds file with `>>`. Which shape to print (a model's section, or one version's block under
a model's section that already exists) is the caller's choice (commands/thresholds.py), made against the
file it is meant for."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import yaml

from ..defaults import ALPHA, UPGRADE_DROP, UPGRADE_FAIL_DROP, UPGRADE_RESAMPLES
from ..gates.schema import LAMBDA_FLAGS
from ..gates.thresholds_rule import REPEAT_Z, SES, STEP, LambdaRule, Limit, RuleResult
from ..vocabulary import CALL_READING, MEAN_READING, PRIMITIVES

SETTINGS = ("reading", "decisions", "regression")
COMMENT_COLUMN = 30
WIDTH = 116  # comment paragraphs are wrapped to this many columns  # comments start this many columns after a key's indentation, as in the shipped file


@dataclass(frozen=True)
class Shape:
    """Where the printed block goes.

    model: the top-level key. version: None prints the model's section (gates for every version without a
    block of its own); a name prints that version's block. indent: the column of the first key printed (0
    for `model:`; the model's own child indentation for a version block appended under an existing model).
    step: indentation per level. nested: print `model:` above a version's block (the file has no section
    for the model yet; the model's section always starts with it). inherited: gate names ("choice.max_swap_shift", "uncertainty") the model's section
    sets that this rule leaves out; a version block sets them to null, or the version would inherit them.
    settings: the blocks among decisions and regression to write (one the model's section already sets is
    left to it)."""

    model: str
    version: str | None = None
    indent: int = 0
    step: int = 2
    nested: bool = False
    inherited: frozenset[str] = field(default_factory=frozenset)
    settings: tuple[str, ...] = SETTINGS


def render_section(result: RuleResult, shape: Shape, header: Sequence[str], costs: Mapping[str, float]) -> str:
    """The block as YAML text: a blank line first (so that `>>` onto a file without a final newline still
    starts a line), the header comments, then the keys. costs: error_cost and deferral_cost."""
    lines = ["", *_comment_block(_pad(shape.indent), header)]
    level = shape.indent
    if shape.nested or shape.version is None:
        lines.append(f"{_pad(level)}{_key(shape.model)}:")
        level += shape.step
    if shape.version is not None:
        lines.append(f"{_pad(level)}{_key(shape.version)}:")
        level += shape.step
    if "reading" in shape.settings:
        lines.append(_commented(_pad(level), f"reading: {result.reading}", READING_NOTES[result.reading]))
    for prim in PRIMITIVES:
        lines += _primitive(prim, [lim for lim in result.limits if lim.primitive == prim], shape, level)
    lines += _uncertainty(result.uncertainty, shape, level)
    lines += _settings(costs, shape, level)
    return "\n".join(lines) + "\n"


# The comment beside the `reading` key the rule writes (docs/thresholds.md, "The reading").
READING_NOTES = {
    CALL_READING: "OVL, ECE and Brier gates and the upgrade gate read each answer per call",
    MEAN_READING: "OVL, ECE and Brier gates and the upgrade gate read each rendering's mean over its calls",
}


def rule_header(result: RuleResult) -> list[str]:
    """The rule, for the header: what sets each margin, with this report's resamples and repeats."""
    if result.repeat_resamples:
        repeats = (
            f"{REPEAT_Z:g}·√2 repeat-noise SEs ({result.repeat_resamples} resamples of each rendering's "
            f"{result.repeats} repeats: a re-recording of the same model fails such a limit ≤ 0.13 % of the time)"
        )
    else:
        repeats = f"no repeat-noise term ({result.repeats} repeat per rendering: one recording shows none)"
    read = (
        "Read per call: mean and median OVL, ECE and Brier are over single calls, what one request to the service "
        "gets (the spread and option-swap limits read each rendering's mean either way)."
        if result.reading == CALL_READING
        else "Read as repeat means: each rendering's mean over its calls, the paper's protocol."
    )
    return [
        read,
        f"Rule: measured value ∓ the largest of {SES:g} bootstrap SEs over latent problems ({result.resamples} "
        f"resamples, seed {result.seed}), {repeats} and the minimum slack {result.min_slack:g}; rounded outwards to "
        f"{STEP:g}. Each comment reads measured ∓ margin = unrounded limit (to 4 decimals), and what set the margin.",
    ]


def derivation(lim: Limit) -> str:
    """`measured ∓ margin = unrounded limit`, the margin written as what set it (docs/thresholds.md)."""
    assert lim.value is not None and lim.se is not None and lim.margin is not None
    sign = "−" if lim.bound == "min" else "+"
    moved = lim.value - lim.margin if lim.bound == "min" else lim.value + lim.margin
    if lim.set_by == "problems":
        return f"{lim.value:.4f} {sign} {SES:g}·{lim.se:.4f} = {moved:.4f}"
    if lim.set_by == "repeats":
        return (
            f"{lim.value:.4f} {sign} {REPEAT_Z:g}·√2·{lim.repeat_se:.4f} = {moved:.4f}   (repeat noise; "
            f"{SES:g}·SE {SES * lim.se:.4f})"
        )
    return f"{lim.value:.4f} {sign} {lim.margin:.4f} = {moved:.4f}   (minimum slack; {SES:g}·SE {SES * lim.se:.4f})"


def _primitive(prim: str, limits: Sequence[Limit], shape: Shape, level: int) -> list[str]:
    inner = _pad(level + shape.step)
    body, notes = [], []
    for lim in limits:
        if lim.limit is not None:
            body.append(_commented(inner, f"{lim.key}: {_number(lim.limit)}", derivation(lim)))
        elif f"{prim}.{lim.key}" in shape.inherited:
            body.append(_commented(inner, f"{lim.key}: null", f"{lim.reason}; null drops {shape.model}'s limit"))
        else:
            notes.append(f"{inner}# {lim.key}: left out, {lim.reason}")
    if not body:
        reasons = "; ".join(dict.fromkeys(str(lim.reason) for lim in limits))
        return [f"{_pad(level)}# {prim}: no gates, {reasons}"]
    return [f"{_pad(level)}{prim}:", *body, *notes]


def _uncertainty(rule: LambdaRule, shape: Shape, level: int) -> list[str]:
    """The λ gate the rule chose, with the test's numbers; or a comment saying why there is none."""
    if rule.statistic is None or rule.se is None or rule.critical is None:
        why = [f"No λ gate: {rule.reason}."]
    else:
        why = [
            f"The valid one-sided test of λ = 0 (python -m pytest_sys1cal docs statistics, §2.3): t = {rule.statistic:.2f}, bootstrap SE "
            f"{rule.se:.2f}, df {rule.df}; critical t at α = {rule.alpha:g} is {rule.critical:.2f}."
        ]
        if rule.flag == "require_lambda_positive":
            why.append(f"t − {SES:g}·SE = {rule.statistic - SES * rule.se:.2f} is beyond it: Choice sits above μ_S.")
        elif rule.flag == "require_lambda_zero":
            why.append(f"t + {SES:g}·SE = {rule.statistic + SES * rule.se:.2f} is short of it: no sign of λ > 0.")
        else:
            why.append(f"No λ gate: {rule.reason}.")
    inner = _pad(level + shape.step)
    if rule.flag is not None:
        settings = [f"{inner}{rule.flag}: true", f"{inner}alpha: {rule.alpha:g}"]
    elif "uncertainty" in shape.inherited:
        # In a version, setting either flag (even to null) replaces both of the model's flags.
        settings = [_commented(inner, f"{LAMBDA_FLAGS[0]}: null", f"drops {shape.model}'s λ gate")]
    else:
        return _comment_block(_pad(level), [f"uncertainty: {' '.join(why)}"])
    return [f"{_pad(level)}uncertainty:", *_comment_block(inner, why), *settings]


def _settings(costs: Mapping[str, float], shape: Shape, level: int) -> list[str]:
    inner = _pad(level + shape.step)
    blocks = {
        "decisions": [
            "# The costs this report was analysed with; passed to the analysis, not a gate.",
            f"error_cost: {costs['error_cost']:g}",
            f"deferral_cost: {costs['deferral_cost']:g}",
        ],
        "regression": [
            "# The upgrade gate against --sys1cal-baseline, the plugin's defaults written out (python -m pytest_sys1cal",
            "# docs thresholds): passed when the drop in mean OVL is shown to be below max_drop_mean_ovl, FAILED when",
            "# shown above fail_drop_mean_ovl, Holm across the primitives at alpha.",
            f"alpha: {ALPHA:g}",
            f"max_drop_mean_ovl: {UPGRADE_DROP:g}",
            f"fail_drop_mean_ovl: {UPGRADE_FAIL_DROP:g}",
            f"primitives: [{', '.join(PRIMITIVES)}]",
            f"resamples: {UPGRADE_RESAMPLES}",
        ],
    }
    lines = []
    for name, body in blocks.items():  # `reading` is written above the gates (render_section)
        if name in shape.settings:
            lines += [f"{_pad(level)}{name}:", *(inner + line for line in body)]
        elif shape.version is not None:
            lines.append(f"{_pad(level)}# {name}: as in {shape.model}'s section")
        # else: the model's section keeps its own (an update in place rewrites the gates only)
    return lines


def _comment_block(indent: str, paragraphs: Sequence[str]) -> list[str]:
    """Comment lines at `indent`, each paragraph wrapped to WIDTH columns."""
    lines = []
    for paragraph in paragraphs:
        lines += textwrap.wrap(
            paragraph,
            WIDTH,
            initial_indent=f"{indent}# ",
            subsequent_indent=f"{indent}# ",
            break_long_words=False,  # paths and sha256 prefixes stay whole
            break_on_hyphens=False,
        )
    return lines


def _commented(indent: str, text: str, comment: str) -> str:
    return f"{indent}{text.ljust(COMMENT_COLUMN - 1)} # {comment}"  # YAML needs a space before a comment


def _pad(columns: int) -> str:
    return " " * columns


def _number(value: float) -> str:
    """0.9, 0.735, 1.0: the shortest text that reads back as the limit."""
    text = f"{value:.3f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def _key(name: str) -> str:
    """A version name as a YAML key: plain when YAML reads it back as that text, else double-quoted (1.14,
    true, null, or a name with YAML punctuation)."""
    try:
        plain = yaml.safe_load(f"{name}: x")
    except yaml.YAMLError:
        plain = None
    if isinstance(plain, dict) and list(plain) == [name]:
        return name
    return json.dumps(name, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar
