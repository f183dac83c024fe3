"""`python -m pytest_sys1cal thresholds REPORT.json`: a thresholds.yaml section computed from a saved JSON
report by the shipped file's rule (gates/thresholds_rule.py), printed ready to append with `>>`.

Appending is checked against the thresholds file it is meant for (`--file`, default thresholds.yaml here
when it exists; read, never written): a model that already has a section gets one version's block to go
under it (`--version`), never a second section (a duplicate key stops every run). When the block cannot be
appended as it is (the model's section is not the last in the file, the version already has a block, or
the file with the block appended would not give exactly the printed gates), nothing is printed on stdout,
so `>>` appends nothing, and one line on stderr says why and what to do; exit status 4, like every usage
error. The rule, the λ gate and the shapes printed: docs/setup.md.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml

from .. import __version__
from ..defaults import RULE_MIN_RESAMPLES, RULE_RESAMPLES
from ..document import ReportDocument, ReportError, read_report
from ..errors import EXIT_INPUT, InputError
from ..files import write_atomic
from ..gates.config import parse_thresholds
from ..gates.schema import MODEL_KEYS, ThresholdsError
from ..gates.thresholds_rule import MIN_SLACK, RuleResult, threshold_rule
from ..report.thresholds_text import SETTINGS, Shape, render_section, rule_header
from ..vocabulary import CALL_READING, MEAN_READING
from .thresholds_update import UpdateError, append, kept_settings, layout, replace_model, replace_version, unified

FROM_REPORT = object()  # `--version` given without a name: the report's version


class SectionError(InputError):
    """The section cannot be printed as asked; the message names the file and the fix."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", metavar="REPORT.json", help="a JSON report of a full run (--sys1cal-report)")
    parser.add_argument("--model", help="the model key of the section (default: the report's model)")
    parser.add_argument(
        "--version",
        nargs="?",
        const=FROM_REPORT,
        metavar="V",
        help="print one version's block, to go under the model's section (V default: the report's version)",
    )
    parser.add_argument(
        "--resamples",
        type=int,
        default=RULE_RESAMPLES,
        help=f"latent-problem bootstrap resamples for the SEs (default {RULE_RESAMPLES}, at least {RULE_MIN_RESAMPLES})",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    parser.add_argument(
        "--file",
        type=Path,
        default=Path("thresholds.yaml"),
        help="the thresholds file the section is for: read (never written) to check that appending works "
        "(default thresholds.yaml, when it exists)",
    )
    parser.add_argument(
        "--paste", action="store_true", help="read no thresholds file: print the section for a file that has none"
    )
    parser.add_argument(
        "--update",
        action="store_true",
        help="rewrite the model's gates (with --version: that version's block) in the thresholds file in place, "
        "every other line as it was, and print the change as a diff",
    )
    parser.add_argument(
        "--from-other-model",
        action="store_true",
        help="with --update: write the gates of the model named by --model from a report of another model",
    )
    parser.add_argument(
        "--from-other-version",
        action="store_true",
        help="with --update --version V: write V's block from a report of another version",
    )
    parser.add_argument(
        "--min-slack",
        type=float,
        default=MIN_SLACK,
        metavar="S",
        help=f"the least distance of a limit from the measured value (default {MIN_SLACK:g}): covers what one "
        "recording cannot show",
    )


def main(args: argparse.Namespace) -> int:
    try:
        if args.resamples < RULE_MIN_RESAMPLES:
            raise SectionError(
                f"--resamples {args.resamples}: too few for a standard error; give {RULE_MIN_RESAMPLES} or more"
            )
        if args.seed < 0:
            raise SectionError(f"--seed {args.seed}: give a whole number ≥ 0")
        if not 0 <= args.min_slack < 1:
            raise SectionError(f"--min-slack {args.min_slack:g}: give a distance in [0, 1), e.g. {MIN_SLACK:g}")
        if args.update and args.paste:
            raise SectionError("--update rewrites the thresholds file and --paste reads none: give one of them")
        report = read_report(args.report)
        _check_full_run(report, str(args.report))
        model = args.model or _report_model(report, "name", str(args.report))
        version = _report_model(report, "version", str(args.report)) if args.version is FROM_REPORT else args.version
        if args.update:
            _check_same_model(args, report, model, version)
        reading = _reading(
            report, str(args.report), None if args.paste else _Target.read(args.file, model), model, version
        )
        try:
            result = threshold_rule(
                report["items"], resamples=args.resamples, seed=args.seed, min_slack=args.min_slack, reading=reading
            )
        except ValueError as exc:
            raise SectionError(f"{args.report}: {exc}") from None
        if args.update:
            return _update(args.file, report, str(args.report), result, model, version)
        target = None if args.paste else _Target.read(args.file, model)
        shape = _shape(target, model, version, args.file)
        text = render_section(result, shape, _header(report, str(args.report), shape, result), _costs(report))
        _verify(target, text, model, version, result)
    except (ReportError, ThresholdsError, SectionError, UpdateError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    sys.stdout.write(text)
    print(_note(target, model, version, result), file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------------------- the report


def _check_full_run(report: ReportDocument, where: str) -> None:
    """Threshold gates describe the whole dataset: a report of part of it would give limits for another set."""
    counts, dataset = report.get("counts") or {}, report.get("dataset") or {}
    total, measured = dataset.get("renderings"), counts.get("measured", len(report["items"]))
    if counts.get("failed") or (isinstance(total, int) and measured < total):
        raise SectionError(
            f"{where}: measured {measured} of the dataset's {total} renderings (a -k selection, a stop or failed "
            "renderings); threshold gates describe the whole dataset, so save the report of a full run "
            "(pytest --sys1cal --sys1cal-report=report.json) and run this on it"
        )


def _report_model(report: ReportDocument, key: Literal["name", "version"], where: str) -> str:
    value = report["model"].get(key)
    if not isinstance(value, str) or not value:
        flag = "--model" if key == "name" else "--version"
        raise SectionError(f"{where}: the report names no model {key}; give one with {flag}")
    return value


def _reading(report: ReportDocument, where: str, target: _Target | None, model: str, version: str | None) -> str:
    """The reading the limits are written for: the one the thresholds file already sets for this model (version),
    else per call where the report holds every call (a team's own recording), else the repeat means (cassettes
    rebuilt from published means, such as the bundled Jev set). A call reading of a report without calls is
    refused: its limits cannot be read per call."""
    calls = report.get("calls")
    measured = bool(calls and calls["measured"])
    given = None
    if target is not None and target.text and target.line:
        given = parse_thresholds(target.text, str(target.path), model, version).reading
    if given is None or given.path is None:
        return CALL_READING if measured else MEAN_READING
    if given.value == CALL_READING and not measured:
        why = (
            calls.get("reason", "no single call was recorded")
            if calls
            else "it was written before the per-call reading"
        )
        raise SectionError(
            f"{given.said()}, but {where} has no per-call values ({why}): limits read per call cannot be written "
            "from it; set reading: mean there, or run this on the report of a recording that keeps every call"
        )
    return given.value


def _costs(report: ReportDocument) -> dict[str, float]:
    decisions = report.get("decisions") or {}
    return {"error_cost": decisions.get("error_cost", 100), "deferral_cost": decisions.get("defer_cost", 45)}


def _header(report: ReportDocument, where: str, shape: Shape, result: RuleResult) -> list[str]:
    model, dataset = report["model"], report["dataset"]
    scope = (
        f"{shape.model} {shape.version}: gates for that version, laid over {shape.model}'s section"
        if shape.version is not None
        else f"{shape.model}: gates for every version of {shape.model} without a block of its own"
    )
    return [
        f"{scope}; from {where}:",
        f"{model.get('name')} {model.get('version')} ({model.get('source', 'recorded')} cassettes), dataset "
        f"{dataset.get('name')} sha256 {str(dataset.get('sha256'))[:12]}…, {result.renderings} renderings, "
        f"{result.latent_problems} latent problems. Printed by `python -m pytest_sys1cal thresholds` "
        f"(pytest-sys1cal {__version__}).",
        *rule_header(result),
    ]


# ----------------------------------------------------------------------------------------------- --update


def _check_same_model(args: argparse.Namespace, report: ReportDocument, model: str, version: str | None) -> None:
    """Another model's or version's statistics become this section's gates only when a flag says so: a slip of
    --model or --version would otherwise hold one model to another's measurements without a word."""
    measured = report.get("model") or {}
    name, measured_version = measured.get("name"), measured.get("version")
    if model != name and not args.from_other_model:
        raise SectionError(
            f"{args.report} measured model {name} {measured_version}, and --update would write its statistics as the "
            f"gates of {model}'s section; if that is meant, add --from-other-model (else drop --model)"
        )
    if version is not None and version != measured_version and not args.from_other_version:
        raise SectionError(
            f"{args.report} measured {name} {measured_version}, and --update would write its statistics as the "
            f"gates of {model} {version}'s block; if that is meant, add --from-other-version (else give --version "
            "alone, for the report's version)"
        )


def _update(path: Path, report: ReportDocument, where: str, result: RuleResult, model: str, version: str | None) -> int:
    """Rewrite the model's gates (or one version's block) in `path` in place, checked by the plugin's own
    reader first; print the change as a diff (stdout) and one line saying what was done (stderr)."""
    target = _Target.read(path, model)
    before = target.text or ""
    place = layout(before, model, str(path)) if target.line else None
    costs = _costs(report)
    if place is None or place.model_line is None:
        shape = Shape(model, version, nested=True)
        after = append(before, render_section(result, shape, _header(report, where, shape, result), costs))
    else:
        kept = kept_settings(place, version)
        if version is None:
            shape = Shape(model, None, step=place.child_indent, settings=tuple(n for n in SETTINGS if n not in kept))
            after = replace_model(place, render_section(result, shape, _header(report, where, shape, result), costs))
        else:
            settings = tuple(n for n in SETTINGS if n not in target.settings and n not in kept)
            shape = Shape(
                model, version, indent=place.child_indent, step=place.child_indent, inherited=target.inherited,
                settings=settings,
            )  # fmt: skip
            block = render_section(result, shape, _header(report, where, shape, result), costs)
            after = replace_version(place, version, block)
    _verify_update(target, before, after, model, version, result)
    what = f"{model}{' ' + version if version else ''}"
    if after == before:
        print(f"{path}: the gates of {what} are already these; nothing to change", file=sys.stderr)
        return 0
    _write_in_place(path, target, after)
    sys.stdout.write(unified(before, after, str(path)))
    gates = sum(lim.limit is not None for lim in result.limits) + (result.uncertainty.flag is not None)
    print(
        f"updated {path}: {gates} gates for {what} (the diff above; every other line as it was, checked with the "
        "plugin's own reader); review it and commit it",
        file=sys.stderr,
    )
    return 0


def _write_in_place(path: Path, target: _Target, after: str) -> None:
    """Write `after` as an editor would: into a symlink's target (the link stays a link), with the file's own
    mode, and only if the file is still what was read (checked once the new text is on disk, before the rename).
    Every failure (read-only, a full disk, a change since read) is one UpdateError; the file is then as it was."""
    real = path.resolve() if path.is_symlink() else path
    mode = stat.S_IMODE(real.stat().st_mode) if target.raw is not None else None
    if target.raw is not None and not os.access(real, os.W_OK):
        raise UpdateError(f"{real}: the file is read-only; nothing was written (make it writable, or --paste)")

    def unchanged() -> None:
        try:
            now = real.read_bytes()
        except FileNotFoundError:
            now = None
        if now != target.raw:
            raise UpdateError(
                f"{real}: changed since this command read it (an editor, another run?); nothing was written: run "
                "this again on the file as it is now"
            )

    try:
        write_atomic(real, after, mode=mode, before_replace=unchanged)
    except OSError as exc:
        raise UpdateError(
            f"{real}: cannot write it ({exc.strerror or type(exc).__name__}); nothing was written, the file is as it "
            "was (make it or its folder writable, or free space; or print the block with --paste)"
        ) from None


def _verify_update(
    target: _Target, before: str, after: str, model: str, version: str | None, result: RuleResult
) -> None:
    """The rewritten file must give the model (version) exactly the printed gates, and every other model and
    version (for a version's block: the model's own section too) exactly what it gave before."""
    _verify(None, after, model, version, result, where=str(target.path))
    if not before.strip():
        return
    try:
        old, new = yaml.safe_load(before) or {}, yaml.safe_load(after) or {}
    except yaml.YAMLError as exc:
        raise UpdateError(f"{target.path}: the rewritten file would not be YAML ({exc}); nothing was written") from None
    for name, section in old.items():
        versions = [None, *(k for k in (section or {}) if k not in MODEL_KEYS)]
        for other in versions:
            if name == model and (version is None or other == version):
                continue  # what this update rewrites (for the model's own section: every version built on it)
            gates = [_gates(text, str(target.path), name, other) for text in (before, after)]
            if gates[0] != gates[1]:
                raise UpdateError(
                    f"{target.path}: rewritten, the file would change the gates of {name} {other or ''}; nothing "
                    "was written. Print the block with --paste and place it by hand"
                )
    if set(old) - set(new):
        raise UpdateError(f"{target.path}: rewritten, the file would lose a model's section; nothing was written")


def _gates(text: str, where: str, model: str, version: str | None) -> list[tuple[str, float]]:
    return [(g.name, g.limit) for g in parse_thresholds(text, where, model, version).gates]


# ---------------------------------------------------------------------------------- the thresholds file


@dataclass(frozen=True)
class _Target:
    """What the thresholds file says about the model: where its section is, what follows it, what it sets."""

    path: Path
    text: str | None  # None: no such file
    raw: bytes | None = None  # the file's bytes as read: an update writes only over these (commands' --update)
    line: int = 0  # the model's key, 0 when it has no section
    after: tuple[str, int] | None = None  # the model section that follows it, with its line
    indent: int = 2  # the column of the keys inside the model's section
    versions: Mapping[str, int] | None = None  # the model's version keys and their lines
    inherited: frozenset[str] = frozenset()
    settings: tuple[str, ...] = ()  # which of decisions and regression the model's section sets

    @classmethod
    def read(cls, path: Path, model: str) -> _Target:
        try:
            raw = path.read_bytes()
            text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text reads it
        except FileNotFoundError:
            return cls(path, None)
        except (OSError, UnicodeDecodeError) as exc:
            raise SectionError(f"{path}: cannot read it ({exc}); name another file with --file, or --paste") from None
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
            empty = root is None
        except yaml.YAMLError:
            empty = False  # the reader below names the line
        if empty:
            return cls(path, text, raw)  # empty or only comments (e.g. just created by `>>`): nothing to clash with
        try:
            base = parse_thresholds(text, str(path), model, None)
        except ThresholdsError as exc:
            raise SectionError(f"{exc} (fix {path} first: this command only reads it)") from None
        assert isinstance(root, yaml.MappingNode)  # parse_thresholds refuses any other top level
        keys = [(key.value, key.start_mark.line + 1, value) for key, value in root.value]
        mine = next((i for i, (name, _line, _value) in enumerate(keys) if name == model), None)
        if mine is None:
            return cls(path, text, raw)
        _name, line, node = keys[mine]
        children = node.value if isinstance(node, yaml.MappingNode) else []
        inherited = {gate.name for gate in base.gates}
        return cls(
            path,
            text,
            raw,
            line=line,
            after=(keys[mine + 1][0], keys[mine + 1][1]) if mine + 1 < len(keys) else None,
            indent=children[0][0].start_mark.column if children else 2,
            versions={k.value: k.start_mark.line + 1 for k, _v in children if k.value not in MODEL_KEYS},
            inherited=frozenset(
                inherited | ({"uncertainty"} if any(g.startswith("uncertainty.") for g in inherited) else set())
            ),
            settings=tuple(k.value for k, _v in children if k.value in SETTINGS),
        )


def _shape(target: _Target | None, model: str, version: str | None, path: Path) -> Shape:
    """The block to print: the model's section, or one version's block (nested under a new model key, or
    under the model's existing section). Raises SectionError when appending it would break the file."""
    if target is None or not target.line:
        return Shape(model, version, nested=True)
    where = f"{path}:{target.line}"
    if version is None:
        raise SectionError(
            f"{where}: {model} already has a section; a second one appended with >> would be a duplicate key, which "
            f"stops every run. Print one version's block to go under it instead (add --version, or --version NAME), "
            f"or delete {model}'s section first to replace it"
        )
    if target.versions and version in target.versions:
        raise SectionError(
            f"{path}:{target.versions[version]}: {model} already has a block for {version}; edit it by hand, or "
            "delete it and run this again"
        )
    if target.after is not None:
        other, line = target.after
        raise SectionError(
            f"{where}: {model}'s section is followed by {other}'s (line {line}), so a block appended with >> would "
            f"land under {other}; move {model}'s section to the end of {path} and run this again, or print the "
            f"block with --paste and put it under {model}: by hand"
        )
    return Shape(
        model,
        version,
        indent=target.indent,
        step=target.indent,
        inherited=target.inherited,
        settings=tuple(name for name in SETTINGS if name not in target.settings),
    )


def _verify(
    target: _Target | None, text: str, model: str, version: str | None, result: RuleResult, where: str | None = None
) -> None:
    """The file with the block appended (or the block alone, when there is no file; or a whole rewritten file
    named by `where`), read by the plugin's own reader, must give exactly the printed gates."""
    combined = (target.text or "") + text if target is not None else text
    how = "rewritten in place" if where else "appended"
    where = where or (str(target.path) if target is not None else "the printed section")
    try:
        resolved = parse_thresholds(combined, where, model, version)
    except ThresholdsError as exc:
        raise SectionError(
            f"{how}, this block would break the file: {exc}; nothing was written. Print it with --paste and place "
            "it by hand"
        ) from None
    expected = {f"{lim.primitive}.{lim.key}": lim.limit for lim in result.limits if lim.limit is not None}
    if result.uncertainty.flag:
        expected[f"uncertainty.{result.uncertainty.flag}"] = result.uncertainty.alpha
    got = {gate.name: gate.limit for gate in resolved.gates}
    if resolved.reading.value != result.reading:
        raise SectionError(
            f"{where}: {how} there, this block's limits, written for reading {result.reading}, would be read "
            f"{resolved.reading.value} ({resolved.reading.said()}); print it with --paste and place it by hand"
        )
    if got != expected:
        differ = sorted(set(got.items()) ^ set(expected.items()))
        raise SectionError(
            f"{where}: {how} there, this block would not give {model} {version or ''} the printed gates "
            f"(differing: {', '.join(name for name, _ in differ)}); print it with --paste and place it by hand"
        )


def _note(target: _Target | None, model: str, version: str | None, result: RuleResult) -> str:
    gates = sum(lim.limit is not None for lim in result.limits) + (result.uncertainty.flag is not None)
    what = f"{gates} gates for {model}{' ' + version if version else ''}"
    if target is None:
        return f"{what} (no thresholds file read: --paste)"
    if target.text is None:
        return f"{what}; {target.path} does not exist: this section can start it (>> {target.path})"
    return f"{what}; checked against {target.path}: appended there (>> {target.path}) it gives exactly these gates"
