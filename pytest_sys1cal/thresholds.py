"""thresholds.yaml: its schema, validation with file:line messages, and gate evaluation.

Pure: pyyaml, and numpy/scipy only through analysis.compare when a baseline is compared (imported
then, so loading and checking the file stays cheap); knows nothing of pytest. Every
mistake in the file raises ``ThresholdsError`` with a one-line message
``<file>:<line>: <key path>: <problem>`` that names the allowed keys and the nearest one; the plugin
turns it into a usage error.

Schema
------
The top level maps model names (``jev``, ``semif``, ``systemone``, or one registered by a hook) to a
model section. A model section (``null`` = no gates) holds these sections, all optional::

    noul | choice | score:           # gates on one primitive; a value of null removes that gate
      min_mean_ovl: 0.90             # floor on primitives.<p>.mean_ovl                       [0, 1]
      min_median_ovl: 0.93           # floor on primitives.<p>.median_ovl                     [0, 1]
      max_mean_pairwise_tv: 0.06     # ceiling on representation_sensitivity.<p>.mean_pairwise_tv
      max_mean_max_tv: 0.10          # ceiling on representation_sensitivity.<p>.mean_max_tv
      max_ece: 0.08                  # ceiling on calibration.<p>.ece (15 equal-width bins, target p*)
      max_brier: 0.03                # ceiling on calibration.<p>.brier (mean (p − p*)²)
      # choice only:
      max_swap_shift: 0.05           # ceiling on |option_swap.mean_shift|                    [0, 1]
      max_first_position_bias: 0.05  # ceiling on |option_swap.first_position_rate − 0.5|     [0, 0.5]
    uncertainty:                     # gate on the valid one-sided test of H0: λ = 0 (uncertainty.test)
      require_lambda_positive: true  # passes when p_value < alpha
      require_lambda_zero: false     # passes when p_value ≥ alpha (no evidence of λ > 0); not both true
      alpha: 0.01                    # (0, 1); default 0.05
    decisions:                       # passed to the analysis (Table 4), not a gate
      error_cost: 100                # ≥ 0
      deferral_cost: 45              # ≥ 0
    regression:                      # the upgrade gate against --sys1cal-baseline (analysis/compare.py)
      alpha: 0.05                    # one-sided family-wise level (Holm across the gated primitives)
      max_drop_mean_ovl: 0.02        # δ: PASS when the drop in mean OVL is shown to be smaller
      fail_drop_mean_ovl: 0.01       # δ₀ ≤ δ: FAIL when the drop is shown to be larger; default δ/2
      primitives: [noul, choice, score]   # which mean OVLs are gated; default all three
      resamples: 2000                # latent-problem bootstrap resamples, 200..100000
      choice: {max_drop_mean_ovl: 0.03}   # per-primitive δ / δ₀ overriding the two above

Version keys. Any other key under a model names a model version (compared exactly with
``--sys1cal-model-version``, e.g. ``jev-1.14.0``) and must hold the sections above (or be empty). A key
that is a near-miss of a section name and holds no section (``choise: {min_mean_ovl: 0.7}``) is reported
as a typo, not taken as a version; a key whose value is not a mapping is an unknown key. For a run of
that version the version's sections are laid over the model's, leaf by leaf:

* a key given in the version replaces the model's value; a key set to ``null`` removes the gate;
  keys the version does not mention are inherited;
* a section set to ``null`` in the version removes every setting of that section;
* ``require_lambda_positive`` / ``require_lambda_zero`` are one choice: a version that sets either
  replaces both of the model's flags;
* ``regression.primitives`` is replaced as a whole; ``regression.<p>`` maps merge key by key.

The whole file is validated on every run, including sections of other models and versions, and every
model/version combination must be consistent (e.g. δ₀ ≤ δ), so a mistake anywhere is caught early.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PRIMITIVES = ("noul", "choice", "score")
LABELS = {"noul": "Noul", "choice": "Choice", "score": "Score"}
SECTIONS = (*PRIMITIVES, "uncertainty", "decisions", "regression")
DEFAULT_ALPHA = 0.05
DEFAULT_DROP = 0.02
DEFAULT_RESAMPLES = 2000
REPORT_SCHEMA = "sys1cal-report/1"

# Row verdicts.
PASSED, FAILED, INCONCLUSIVE, NOT_MEASURED = "passed", "FAILED", "inconclusive", "not measured"


class ThresholdsError(Exception):
    """A mistake in thresholds.yaml (or in a baseline), as one user-facing line."""


class BaselineError(ThresholdsError):
    """The baseline report cannot be compared with this run (other dataset, other repeat count, unreadable)."""


# ============================================================================================== schema


@dataclass(frozen=True)
class GateKind:
    """One gate key: what it reads from the report, which way it bounds it, and its valid range."""

    key: str
    bound: str  # "min" (observed ≥ limit passes) or "max" (observed ≤ limit passes)
    paths: tuple[tuple[str, ...], ...]  # report paths tried in order; "{p}" is the primitive
    what: str  # "mean OVL", for explanations
    metric: str  # the metric as shown in rows, "{p}" is the primitive
    high: float = 1.0
    transform: Callable[[float], float] | None = None


def _abs_half(x: float) -> float:
    return abs(x - 0.5)


PRIMITIVE_GATES: dict[str, GateKind] = {
    g.key: g
    for g in (
        GateKind("min_mean_ovl", "min", (("primitives", "{p}", "mean_ovl"),), "mean OVL", "primitives.{p}.mean_ovl"),
        GateKind(
            "min_median_ovl", "min", (("primitives", "{p}", "median_ovl"),), "median OVL", "primitives.{p}.median_ovl"
        ),
        GateKind(
            "max_mean_pairwise_tv",
            "max",
            (("representation_sensitivity", "{p}", "mean_pairwise_tv"),),
            "mean pairwise TV between renderings",
            "representation_sensitivity.{p}.mean_pairwise_tv",
        ),
        GateKind(
            "max_mean_max_tv",
            "max",
            (("representation_sensitivity", "{p}", "mean_max_tv"),),
            "mean max TV between renderings",
            "representation_sensitivity.{p}.mean_max_tv",
        ),
        GateKind(
            "max_ece",
            "max",
            (("calibration", "{p}", "ece"), ("calibration", "{p}", "ece_equal_width")),
            "ECE (15 equal-width bins, target p*)",
            "calibration.{p}.ece",
        ),
        GateKind(
            "max_brier", "max", (("calibration", "{p}", "brier"),), "Brier (mean (p − p*)²)", "calibration.{p}.brier"
        ),
    )
}
CHOICE_GATES: dict[str, GateKind] = {
    g.key: g
    for g in (
        GateKind(
            "max_swap_shift",
            "max",
            (("option_swap", "mean_shift"),),
            "option-swap shift |mean_shift|",
            "abs(option_swap.mean_shift)",
            transform=abs,
        ),
        GateKind(
            "max_first_position_bias",
            "max",
            (("option_swap", "first_position_rate"),),
            "first-position bias |first_position_rate − 0.5|",
            "abs(option_swap.first_position_rate - 0.5)",
            high=0.5,
            transform=_abs_half,
        ),
    )
}
GATE_ORDER = (*PRIMITIVE_GATES, *CHOICE_GATES)
UNCERTAINTY_KEYS = ("require_lambda_positive", "require_lambda_zero", "alpha")
LAMBDA_FLAGS = ("require_lambda_positive", "require_lambda_zero")
DECISION_KEYS = ("error_cost", "deferral_cost")
REGRESSION_MARGIN_KEYS = ("max_drop_mean_ovl", "fail_drop_mean_ovl")
REGRESSION_KEYS = ("alpha", *REGRESSION_MARGIN_KEYS, "primitives", "resamples", *PRIMITIVES)


def _allowed(section: str) -> tuple[str, ...]:
    if section == "choice":
        return GATE_ORDER
    if section in PRIMITIVES:
        return tuple(PRIMITIVE_GATES)
    return {"uncertainty": UNCERTAINTY_KEYS, "decisions": DECISION_KEYS, "regression": REGRESSION_KEYS}[section]


# ============================================================================================== config


@dataclass(frozen=True)
class Gate:
    """One configured gate: name as in the report ("choice.min_mean_ovl"), its limit and where it is set."""

    name: str
    key: str
    primitive: str | None
    limit: float
    line: int


@dataclass(frozen=True)
class RegressionConfig:
    alpha: float = DEFAULT_ALPHA
    resamples: int = DEFAULT_RESAMPLES
    primitives: tuple[str, ...] = PRIMITIVES
    drop: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(PRIMITIVES, DEFAULT_DROP))
    fail_drop: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(PRIMITIVES, DEFAULT_DROP / 2))


@dataclass(frozen=True)
class Thresholds:
    """The gates that apply to one model (and version), after merging the version's overrides."""

    path: str
    model: str
    version: str | None
    layers: tuple[str, ...]  # what was applied: ("jev",) or ("jev", "jev[jev-1.14.0]"); () when none
    gates: tuple[Gate, ...]
    decisions: Mapping[str, float]
    regression: RegressionConfig
    versions: tuple[str, ...] = ()  # version keys present under this model
    notice: str | None = None  # why nothing applies (no section for this model), for the summary

    def analysis_options(self) -> dict[str, float]:
        """Keyword arguments for analysis.analyze (its name for deferral_cost is defer_cost)."""
        names = {"error_cost": "error_cost", "deferral_cost": "defer_cost"}
        return {names[k]: v for k, v in self.decisions.items()}

    def describe(self) -> str:
        if not self.layers:
            return f"{self.path}: {self.notice or 'no gates'}"
        return f"{self.path}: {' + '.join(self.layers)} ({len(self.gates)} gates)"


# ============================================================================================== loading


@dataclass(frozen=True)
class _Value:
    value: Any  # None: removed / not set
    line: int
    path: str


_Layer = dict[str, dict[str, _Value] | None]  # section → key → value; a None section clears it


def load_thresholds(
    path: str | Path,
    model: str,
    version: str | None = None,
    *,
    known_models: Iterable[str] | None = None,
) -> Thresholds:
    """Read, validate and resolve thresholds.yaml for one model and version. Raises ThresholdsError."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ThresholdsError(f"{path}: cannot read the thresholds file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ThresholdsError(f"{path}: the thresholds file is not UTF-8 text ({exc.reason})") from None
    return parse_thresholds(text, str(path), model, version, known_models=known_models)


def parse_thresholds(
    text: str,
    filename: str,
    model: str,
    version: str | None = None,
    *,
    known_models: Iterable[str] | None = None,
) -> Thresholds:
    reader = _Reader(filename)
    models = reader.parse_file(text, None if known_models is None else tuple(known_models))
    resolved = {}
    for name, (base, versions) in models.items():  # validate every combination, not only the one used
        resolved[name] = {None: reader.resolve(name, None, base, None)}
        for key, (layer, _line) in versions.items():
            resolved[name][key] = reader.resolve(name, key, base, layer)
    if model not in models:
        close = difflib.get_close_matches(model, list(models), n=1, cutoff=0.6)
        if close:
            raise ThresholdsError(
                f"{filename}:{reader.key_lines[close[0]]}: {close[0]}: this run's model is '{model}', which has no "
                f"section; is '{close[0]}' a typo of '{model}'? (models in the file: {', '.join(models)})"
            )
        listed = ", ".join(models) if models else "none"
        return Thresholds(
            path=filename,
            model=model,
            version=version,
            layers=(),
            gates=(),
            decisions={},
            regression=RegressionConfig(),
            notice=f"no section for model '{model}' (models in the file: {listed}); no threshold gates apply",
        )
    versions = tuple(models[model][1])
    chosen = resolved[model].get(version) if version in versions else resolved[model][None]
    layers = (model, f"{model}[{version}]") if version in versions else (model,)
    return Thresholds(path=filename, model=model, version=version, layers=layers, versions=versions, **chosen)


class _Reader:
    def __init__(self, filename: str):
        self.filename = filename
        self.key_lines: dict[str, int] = {}
        self.constructor = yaml.constructor.SafeConstructor()

    # ------------------------------------------------------------------ messages

    def fail(self, line: int, path: str, problem: str) -> ThresholdsError:
        where = f"{self.filename}:{line}: " if line else f"{self.filename}: "
        return ThresholdsError(f"{where}{path}: {problem}" if path else f"{where}{problem}")

    def unknown(self, line: int, path: str, key: str, allowed: Sequence[str], extra: str = "") -> ThresholdsError:
        close = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else "."
        return self.fail(line, path, f"unknown key '{key}'{hint} Allowed keys: {', '.join(allowed)}{extra}.")

    # ------------------------------------------------------------------ YAML nodes

    def parse_file(
        self, text: str, known_models: tuple[str, ...] | None
    ) -> dict[str, tuple[_Layer, dict[str, tuple[_Layer, int]]]]:
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark else 0
            problem = " ".join(str(p) for p in (exc.context, exc.problem) if p)
            raise self.fail(line, "", f"not valid YAML: {problem}") from None
        except yaml.YAMLError as exc:
            raise self.fail(0, "", f"not valid YAML: {exc}") from None
        if root is None or _is_null(root):
            return {}
        models: dict[str, tuple[_Layer, dict[str, tuple[_Layer, int]]]] = {}
        for key, key_node, value in self.mapping(root, "", "the top level (model names)"):
            if known_models is not None and key not in known_models:
                raise self.unknown(
                    _line(key_node), key, key, known_models, " (the top level names models; these are the known ones)"
                )
            self.key_lines[key] = _line(key_node)
            models[key] = self.model_section(key, value)
        return models

    def mapping(self, node: yaml.Node, path: str, what: str) -> list[tuple[str, yaml.Node, yaml.Node]]:
        """(key, key node, value node) of a mapping node, refusing non-mappings, duplicates and
        non-string keys."""
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(_line(node), path, f"expected a mapping for {what}, got {_describe(node)}")
        out, seen = [], {}
        for key_node, value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise self.fail(
                    _line(key_node),
                    _join(path, "<<"),
                    "YAML merge keys (<<) are not supported; use an alias (*name) for a whole section",
                )
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
                shown = key_node.value if isinstance(key_node, yaml.ScalarNode) else _describe(key_node)
                raise self.fail(
                    _line(key_node),
                    _join(path, str(shown)),
                    f'keys must be text; quote it ("{shown}") if it is a version',
                )
            key = key_node.value
            if key in seen:
                raise self.fail(_line(key_node), _join(path, key), f"duplicate key (first given on line {seen[key]})")
            seen[key] = _line(key_node)
            out.append((key, key_node, value))
        return out

    def model_section(self, model: str, node: yaml.Node) -> tuple[_Layer, dict[str, tuple[_Layer, int]]]:
        if _is_null(node):
            return {}, {}
        base: _Layer = {}
        versions: dict[str, tuple[_Layer, int]] = {}
        for key, key_node, value in self.mapping(node, model, f"model '{model}'"):
            if key in SECTIONS:
                base[key] = self.section(model, key, value)
            elif self.looks_like_version(key, value):
                vpath = f"{model}[{key}]"
                layer: _Layer = {}
                if not _is_null(value):
                    for skey, skey_node, svalue in self.mapping(value, vpath, f"version '{key}'"):
                        if skey not in SECTIONS:
                            self.misplaced_gate(skey, skey_node, vpath)
                            raise self.unknown(_line(skey_node), _join(vpath, skey), skey, SECTIONS)
                        layer[skey] = self.section(vpath, skey, svalue)
                versions[key] = (layer, _line(key_node))
            else:
                self.misplaced_gate(key, key_node, model)
                raise self.unknown(
                    _line(key_node),
                    _join(model, key),
                    key,
                    SECTIONS,
                    ", or a model version (e.g. 'jev-1.14.0') holding those sections",
                )
        return base, versions

    def misplaced_gate(self, key: str, key_node: yaml.Node, parent: str) -> None:
        if key in GATE_ORDER:
            raise self.fail(
                _line(key_node),
                _join(parent, key),
                f"'{key}' is a gate of one primitive; put it under noul, choice or score "
                f"(e.g. {parent}.choice.{key}). Allowed keys here: {', '.join(SECTIONS)}.",
            )

    def looks_like_version(self, key: str, node: yaml.Node) -> bool:
        """A version key's value is a mapping of sections (or null). A key close to a section name whose
        value holds no section is a typo of that section, not a version."""
        if not (_is_null(node) or isinstance(node, yaml.MappingNode)):
            return False
        keys = [] if _is_null(node) else [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
        if any(k in SECTIONS for k in keys):
            return True
        return not difflib.get_close_matches(key, SECTIONS, n=1, cutoff=0.75)

    def section(self, parent: str, section: str, node: yaml.Node) -> dict[str, _Value] | None:
        path = _join(parent, section)
        if _is_null(node):
            return None
        allowed = _allowed(section)
        out: dict[str, _Value] = {}
        for key, key_node, value in self.mapping(node, path, f"'{section}'"):
            kpath = _join(path, key)
            if key not in allowed:
                if section in PRIMITIVES and key in CHOICE_GATES:
                    raise self.fail(
                        _line(key_node),
                        kpath,
                        f"'{key}' is a Choice gate; it is only allowed under choice. "
                        f"Allowed keys: {', '.join(allowed)}.",
                    )
                raise self.unknown(_line(key_node), kpath, key, allowed)
            if section == "regression" and key in PRIMITIVES:
                if _is_null(value):
                    out[f"{key}.*"] = _Value(None, _line(key_node), kpath)
                    continue
                for skey, skey_node, svalue in self.mapping(value, kpath, f"'regression.{key}'"):
                    spath = _join(kpath, skey)
                    if skey not in REGRESSION_MARGIN_KEYS:
                        raise self.unknown(_line(skey_node), spath, skey, REGRESSION_MARGIN_KEYS)
                    number = None if _is_null(svalue) else self.number(svalue, spath, 0.0, 1.0)
                    out[f"{key}.{skey}"] = _Value(number, _line(svalue), spath)
                continue
            out[key] = _Value(self.leaf(section, key, value, kpath), _line(value), kpath)
        if section == "uncertainty":
            flags = [k for k in LAMBDA_FLAGS if k in out and out[k].value is True]
            if len(flags) == 2:
                raise self.fail(
                    out["require_lambda_zero"].line,
                    _join(path, "require_lambda_zero"),
                    "require_lambda_positive and require_lambda_zero cannot both be true; keep one",
                )
        return out

    def leaf(self, section: str, key: str, node: yaml.Node, path: str) -> Any:
        if _is_null(node):
            return None
        if section in PRIMITIVES:
            high = (PRIMITIVE_GATES.get(key) or CHOICE_GATES[key]).high
            return self.number(node, path, 0.0, high)
        if section == "uncertainty":
            if key == "alpha":
                return self.number(node, path, 0.0, 1.0, open_interval=True)
            return self.boolean(node, path)
        if section == "decisions":
            return self.number(node, path, 0.0, math.inf, what="a cost")
        # regression
        if key == "alpha":
            return self.number(node, path, 0.0, 1.0, open_interval=True)
        if key == "resamples":
            value = self.scalar(node)
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.fail(_line(node), path, f"expected a whole number of resamples, got {_describe(node)}")
            if not 200 <= value <= 100_000:
                raise self.fail(_line(node), path, f"{value} is outside the allowed range 200..100000")
            return value
        if key == "primitives":
            if not isinstance(node, yaml.SequenceNode):
                raise self.fail(
                    _line(node),
                    path,
                    f"expected a list of primitives (e.g. [noul, choice, score]), got {_describe(node)}",
                )
            names = []
            for item in node.value:
                name = self.scalar(item)
                if name not in PRIMITIVES:
                    close = difflib.get_close_matches(str(name), PRIMITIVES, n=1, cutoff=0.6)
                    hint = f"; did you mean '{close[0]}'?" if close else ""
                    raise self.fail(
                        _line(item), path, f"unknown primitive '{name}'{hint} Allowed: {', '.join(PRIMITIVES)}."
                    )
                if name in names:
                    raise self.fail(_line(item), path, f"'{name}' is listed twice")
                names.append(name)
            if not names:
                raise self.fail(_line(node), path, "the list is empty; remove the key to gate all three primitives")
            return tuple(p for p in PRIMITIVES if p in names)
        return self.number(node, path, 0.0, 1.0)  # max_drop_mean_ovl, fail_drop_mean_ovl

    def scalar(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            return _Unsupported(node)
        return self.constructor.construct_object(node, deep=True)

    def number(
        self,
        node: yaml.Node,
        path: str,
        low: float,
        high: float,
        *,
        open_interval: bool = False,
        what: str = "a number",
    ) -> float:
        value = self.scalar(node)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(_line(node), path, f"expected {what}, got {_describe(node)}")
        value = float(value)
        if open_interval:
            ok, shown = low < value < high, f"({low:g}, {high:g})"
        else:
            ok = low <= value <= high
            shown = f"[{low:g}, {high:g}]" if math.isfinite(high) else f"≥ {low:g}"
        if not (math.isfinite(value) and ok):
            if what == "a cost":
                raise self.fail(_line(node), path, f"{value:g} is not a valid cost: it must be finite and {shown}")
            raise self.fail(_line(node), path, f"{value:g} is outside the allowed range {shown}")
        return value

    def boolean(self, node: yaml.Node, path: str) -> bool:
        value = self.scalar(node)
        if not isinstance(value, bool):
            raise self.fail(_line(node), path, f"expected true or false, got {_describe(node)}")
        return value

    # ------------------------------------------------------------------ merging and building

    def resolve(self, model: str, version: str | None, base: _Layer, layer: _Layer | None) -> dict[str, Any]:
        merged = _merge(base, layer) if layer is not None else {k: dict(v or {}) for k, v in base.items()}
        return {
            "gates": self.build_gates(merged),
            "decisions": {k: v.value for k, v in (merged.get("decisions") or {}).items() if v.value is not None},
            "regression": self.build_regression(merged.get("regression") or {}, model, version),
        }

    def build_gates(self, merged: dict[str, dict[str, _Value]]) -> tuple[Gate, ...]:
        gates = []
        for prim in PRIMITIVES:
            section = merged.get(prim) or {}
            for key in GATE_ORDER:
                if key in section and section[key].value is not None:
                    gates.append(Gate(f"{prim}.{key}", key, prim, section[key].value, section[key].line))
        unc = merged.get("uncertainty") or {}
        alpha = unc["alpha"].value if unc.get("alpha") and unc["alpha"].value is not None else DEFAULT_ALPHA
        for flag in LAMBDA_FLAGS:
            if unc.get(flag) and unc[flag].value is True:
                gates.append(Gate(f"uncertainty.{flag}", flag, None, alpha, unc[flag].line))
        return tuple(gates)

    def build_regression(self, section: dict[str, _Value], model: str, version: str | None) -> RegressionConfig:
        def get(key: str) -> _Value | None:
            value = section.get(key)
            return value if value is not None and value.value is not None else None

        drop, fail_drop = {}, {}
        for prim in PRIMITIVES:
            d = get(f"{prim}.max_drop_mean_ovl") or get("max_drop_mean_ovl")
            f = get(f"{prim}.fail_drop_mean_ovl") or get("fail_drop_mean_ovl")
            drop[prim] = d.value if d else DEFAULT_DROP
            fail_drop[prim] = f.value if f else drop[prim] / 2
            if f and f.value > drop[prim]:
                where = f" (for {version})" if version else ""
                set_by = f"{d.path} on line {d.line}" if d else "the default"
                raise self.fail(
                    f.line,
                    f.path,
                    f"{f.value:g} exceeds max_drop_mean_ovl {drop[prim]:g} for {prim}{where} (set by {set_by}); "
                    "the drop that fails must not exceed the drop that passes",
                )
        alpha, resamples, prims = get("alpha"), get("resamples"), get("primitives")
        return RegressionConfig(
            alpha=alpha.value if alpha else DEFAULT_ALPHA,
            resamples=resamples.value if resamples else DEFAULT_RESAMPLES,
            primitives=prims.value if prims else PRIMITIVES,
            drop=drop,
            fail_drop=fail_drop,
        )


def _merge(base: _Layer, layer: _Layer) -> dict[str, dict[str, _Value]]:
    merged = {k: dict(v or {}) for k, v in base.items()}
    for section, content in layer.items():
        if content is None:  # `section: null` in a version removes the whole section
            merged[section] = {}
            continue
        current = merged.setdefault(section, {})
        if section == "uncertainty" and any(flag in content for flag in LAMBDA_FLAGS):
            for flag in LAMBDA_FLAGS:
                current.pop(flag, None)
        for key, value in content.items():
            if key.endswith(".*"):  # regression.<p>: null
                prefix = key[:-1]
                for old in [k for k in current if k.startswith(prefix)]:
                    del current[old]
                continue
            current[key] = value
    return merged


class _Unsupported:
    def __init__(self, node: yaml.Node):
        self.node = node


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _describe(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    kind = {
        "tag:yaml.org,2002:str": "text",
        "tag:yaml.org,2002:bool": "a boolean",
        "tag:yaml.org,2002:int": "an integer",
        "tag:yaml.org,2002:float": "a number",
        "tag:yaml.org,2002:null": "null",
    }.get(node.tag, node.tag)
    return f"{node.value!r} ({kind})"


# ============================================================================================== evaluate


def evaluate(thresholds: Thresholds, report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per configured gate, in file-independent order (primitives, then uncertainty):
    {name, metric, observed, limit, passed, verdict, explanation}. verdict is "passed", "FAILED" or
    "not measured" (metric absent or null in this run; then passed is None, never True)."""
    rows = []
    for gate in thresholds.gates:
        if gate.primitive is None:
            rows.append(_lambda_row(gate, report))
        else:
            rows.append(_bound_row(gate, report))
    return rows


def _bound_row(gate: Gate, report: Mapping[str, Any]) -> dict[str, Any]:
    kind = PRIMITIVE_GATES.get(gate.key) or CHOICE_GATES[gate.key]
    prim = gate.primitive
    label = f"{LABELS[prim]} {kind.what}"
    metric = kind.metric.format(p=prim)
    raw, reason = None, None
    for path in kind.paths:
        raw, reason = _lookup(report, tuple(part.format(p=prim) for part in path))
        if raw is not None:
            metric = ".".join(part.format(p=prim) for part in path) if kind.transform is None else metric
            break
    row: dict[str, Any] = {"name": gate.name, "metric": metric, "observed": None, "limit": gate.limit}
    if raw is None:
        return {
            **row,
            "passed": None,
            "verdict": NOT_MEASURED,
            "explanation": f"{label} was not measured in this run ({reason}), so this gate neither passes nor fails.",
        }
    observed = kind.transform(raw) if kind.transform else raw
    shown, limit = _pair(observed, gate.limit)
    if kind.bound == "min":
        passed = observed >= gate.limit
        text = f"{label} {shown} {'meets' if passed else 'is below'} the floor {limit}."
    else:
        passed = observed <= gate.limit
        text = f"{label} {shown} {'is within' if passed else 'exceeds'} the ceiling {limit}."
    if gate.key == "max_swap_shift" and not passed:
        side = "second" if raw > 0 else "first"
        text += f" P(True) is higher when True is shown {side} (mean shift {raw:+.3f})."
    if gate.key == "max_first_position_bias" and not passed:
        text += f" The option shown first wins {raw:.1%} of the time (0.5 is order-blind)."
    return {
        **row,
        "observed": observed,
        "passed": bool(passed),
        "verdict": PASSED if passed else FAILED,
        "explanation": text,
    }


def _lambda_row(gate: Gate, report: Mapping[str, Any]) -> dict[str, Any]:
    p, reason = _lookup(report, ("uncertainty", "test", "p_value"))
    row: dict[str, Any] = {"name": gate.name, "metric": "uncertainty.test.p_value", "observed": p, "limit": gate.limit}
    alpha = f"{gate.limit:g}"
    if p is None:
        return {
            **row,
            "passed": None,
            "verdict": NOT_MEASURED,
            "explanation": f"The test of λ = 0 could not be run ({reason}), so this gate neither passes nor fails.",
        }
    rejected = p < gate.limit
    shown = f"p = {p:.2g}"
    if gate.key == "require_lambda_positive":
        passed = rejected
        text = (
            f"The one-sided test of λ = 0 rejects it ({shown} < α = {alpha}): Choice sits above the Score "
            "expectation, as the latent uncertainty model requires."
            if passed
            else f"The one-sided test of λ = 0 does not reject it ({shown} ≥ α = {alpha}), but this gate requires λ > 0."
        )
    else:
        passed = not rejected
        text = (
            f"The one-sided test of λ = 0 does not reject it ({shown} ≥ α = {alpha}), as this gate requires "
            "(no evidence that Choice sits above the Score expectation)."
            if passed
            else f"The one-sided test of λ = 0 rejects it ({shown} < α = {alpha}): Choice sits significantly above "
            "the Score expectation, but this gate requires λ = 0."
        )
    return {**row, "passed": passed, "verdict": PASSED if passed else FAILED, "explanation": text}


def _lookup(report: Mapping[str, Any], path: tuple[str, ...]) -> tuple[float | None, str]:
    """The number at `path`, or None and why: the innermost block's own `reason` when it gives one."""
    node: Any = report
    reason = None
    for depth, part in enumerate(path):
        dotted = ".".join(path[: depth + 1])
        if not isinstance(node, Mapping):
            return None, f"{'.'.join(path[:depth])} is not a block"
        if isinstance(node.get("reason"), str):
            reason = node["reason"]
        if part not in node:
            return None, reason or f"the report has no {dotted}"
        if node[part] is None:
            if dotted == "option_swap":
                return None, "no rendering was asked the swapped Choice, so option_swap is null"
            return None, reason or f"{dotted} is null"
        node = node[part]
    if isinstance(node, bool) or not isinstance(node, int | float) or not math.isfinite(node):
        return None, f"{'.'.join(path)} is not a number"
    return float(node), ""


def _pair(observed: float, limit: float) -> tuple[str, str]:
    """observed with enough significant digits that it never reads as equal to a limit it differs from."""
    shown_limit = f"{limit:g}"
    for digits in range(3, 12):
        shown = f"{observed:.{digits}g}"
        if observed == limit or float(shown) != limit:
            return shown, shown_limit
    return repr(observed), shown_limit


# ============================================================================================== baseline


def load_baseline(path: str | Path) -> dict[str, Any]:
    """Read a JSON report written by --sys1cal-report. Raises BaselineError naming the file."""
    from .report.json_report import ReportError, read_report

    try:
        return read_report(path)
    except ReportError as exc:
        raise BaselineError(f"baseline {exc}") from None


def evaluate_regression(
    thresholds: Thresholds | RegressionConfig | None,
    report: Mapping[str, Any],
    baseline_report: Mapping[str, Any],
    seed: int = 0,
    *,
    baseline_name: str = "the baseline",
) -> list[dict[str, Any]]:
    """Rows of the upgrade gate: per gated primitive, mean OVL of this run against the baseline, paired by
    rendering, with verdict "passed", "FAILED", "inconclusive" or "not measured". Each row adds
    ``baseline``, ``new`` (mean OVL over the paired renderings) and ``details`` (the full comparison).

    Raises BaselineError when the baseline is not a report, was computed on another dataset, or has a
    different number of repeats per rendering."""
    from .analysis.compare import ComparisonError, Margin, compare_reports

    config = thresholds.regression if isinstance(thresholds, Thresholds) else thresholds or RegressionConfig()
    if not isinstance(baseline_report, Mapping) or baseline_report.get("schema") != REPORT_SCHEMA:
        found = (
            baseline_report.get("schema") if isinstance(baseline_report, Mapping) else type(baseline_report).__name__
        )
        raise BaselineError(f"{baseline_name}: not a {REPORT_SCHEMA} report (schema: {found!r})")
    ours = (report.get("dataset") or {}).get("sha256")
    theirs = (baseline_report.get("dataset") or {}).get("sha256")
    if ours != theirs:
        raise BaselineError(
            f"{baseline_name} was computed on dataset sha256 {theirs}, this run on sha256 {ours}; a paired "
            "comparison needs the same renderings, so record the baseline on this dataset"
        )
    margins = {p: Margin(config.drop[p], config.fail_drop[p]) for p in PRIMITIVES}
    try:
        comparison = compare_reports(
            report,
            baseline_report,
            margins=margins,
            alpha=config.alpha,
            seed=seed,
            resamples=config.resamples,
            primitives=config.primitives,
        )
    except ComparisonError as exc:
        raise BaselineError(f"{baseline_name}: {exc}") from None
    return [_regression_row(prim, m, comparison) for prim, m in comparison["metrics"].items()]


def _regression_row(prim: str, m: Mapping[str, Any], comparison: Mapping[str, Any]) -> dict[str, Any]:
    verdict = {"PASS": PASSED, "FAIL": FAILED, "INCONCLUSIVE": INCONCLUSIVE}.get(m["verdict"], NOT_MEASURED)
    row = {
        "name": f"regression.{prim}.mean_ovl",
        "metric": f"primitives.{prim}.mean_ovl (new − baseline, paired)",
        "observed": m["difference"],
        "limit": -m["margin"],
        "passed": {PASSED: True, FAILED: False}.get(verdict),
        "verdict": verdict,
        "baseline": m["baseline"],
        "new": m["new"],
        "details": {
            **m,
            "matched": comparison["matched"],
            "only_in_new": comparison["only_in_new"],
            "only_in_baseline": comparison["only_in_baseline"],
            "repeats": comparison["repeats"],
            "resamples": comparison["resamples"],
            "seed": comparison["seed"],
        },
    }
    if verdict == NOT_MEASURED:
        row["explanation"] = f"{m['label']} was not compared: {m['reason']}."
        return row
    head = (
        f"{m['label']} {m['new']:.3f} vs baseline {m['baseline']:.3f} on {m['n']} paired renderings: "
        f"Δ = {m['difference']:+.4f}"
    )
    lower = f"one-sided {_level(m['lower_level'])} lower bound {m['lower']:+.4f}"
    upper = f"one-sided {_level(m['upper_level'])} upper bound {m['upper']:+.4f}"
    if verdict == FAILED:
        text = (
            f"{head}; its {upper} is below -{m['fail_margin']:g}, so the drop is real and larger than the "
            f"{m['fail_margin']:g} tolerated."
        )
    elif verdict == PASSED:
        text = f"{head}; its {lower} is above -{m['margin']:g}, so any drop is within the margin {m['margin']:g}."
    else:
        text = (
            f"{head}; neither shown within the margin ({lower} is not above -{m['margin']:g}) nor shown worse "
            f"({upper} is not below -{m['fail_margin']:g}). {_capital(m['advice']['text'])}."
        )
    row["explanation"] = text
    return row


def _level(level: float) -> str:
    text = f"{100 * level:.1f}".rstrip("0").rstrip(".")
    return f"{text}%"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
