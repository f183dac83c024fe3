"""Reading thresholds.yaml: YAML nodes to validated sections with file:line messages (naming the allowed
keys and the nearest one), version overrides laid over the model's section, and the resolved `Thresholds`."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..defaults import ALPHA, DEFAULT_ROUNDS, DEFAULT_SPENDING, SPENDING, UPGRADE_DROP, UPGRADE_RESAMPLES
from ..vocabulary import PRIMITIVES, READINGS
from .kinds import KINDS, Gate, kinds_in
from .schema import (
    INCONCLUSIVE_CHOICES,
    LAMBDA_FLAGS,
    MAX_ROUNDS,
    MODEL_KEYS,
    READING_KEY,
    REGRESSION_MARGIN_KEYS,
    SECTIONS,
    SEQUENTIAL,
    SEQUENTIAL_KEYS,
    Reading,
    Thresholds,
    ThresholdsError,
    UpgradeConfig,
    allowed_keys,
)
from .yaml_nodes import Nodes, is_null, join, line_of, node_text


@dataclass(frozen=True)
class _Value:
    value: Any  # None: removed / not set
    line: int
    path: str


_Layer = dict[str, dict[str, _Value] | None]  # section → key → value; a None section clears it
# The regression settings shared by every primitive, in UpgradeConfig.set_by's names.
SHARED = ("alpha", "resamples", "primitives", "inconclusive")


def load_thresholds(
    path: str | Path,
    model: str,
    version: str | None = None,
    *,
    known_models: Iterable[str] | None = None,
    shown: str | None = None,
) -> Thresholds:
    """Read, validate and resolve thresholds.yaml for one model and version, naming it `shown` (as the user would
    type it; default its path) in messages, the report and the HTML. Raises ThresholdsError."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ThresholdsError(f"{path}: cannot read the thresholds file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ThresholdsError(f"{path}: the thresholds file is not UTF-8 text ({exc.reason})") from None
    return parse_thresholds(text, shown or str(path), model, version, known_models=known_models)


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
    resolved: dict[str, dict[str | None, dict[str, Any]]] = {}
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
            regression=UpgradeConfig(file=filename),
            notice=f"no section for model '{model}' (models in the file: {listed}); no threshold gates apply",
        )
    known = tuple(models[model][1])
    chosen = resolved[model][version] if version in known else resolved[model][None]
    layers = (model, f"{model}[{version}]") if version in known else (model,)
    lines = {model: reader.key_lines[model]}
    if version is not None and version in known:
        lines[f"{model}[{version}]"] = models[model][1][version][1]
    return Thresholds(path=filename, model=model, version=version, layers=layers, versions=known, lines=lines, **chosen)


class _Layers(Nodes):
    """A model's sections, with a version's layer laid over them, turned into gates and settings."""

    # ------------------------------------------------------------------ merging and building

    def resolve(self, model: str, version: str | None, base: _Layer, layer: _Layer | None) -> dict[str, Any]:
        merged = _merge(base, layer) if layer is not None else {k: dict(v or {}) for k, v in base.items()}
        reading = (merged.get(READING_KEY) or {}).get(READING_KEY)
        return {
            "reading": Reading(reading.value, reading.path, reading.line, self.filename)
            if reading
            else Reading(file=self.filename),
            "gates": self.build_gates(merged),
            "decisions": {k: v.value for k, v in (merged.get("decisions") or {}).items() if v.value is not None},
            "regression": self.build_regression(merged.get("regression") or {}, model, version),
        }

    def build_gates(self, merged: dict[str, dict[str, _Value]]) -> tuple[Gate, ...]:
        """Every gate the merged sections set, sections in file-independent order, kinds in KINDS' order."""
        gates = []
        for name in SECTIONS:
            section = merged.get(name) or {}
            values = {key: value.value for key, value in section.items()}
            for kind in kinds_in(name):
                given = section.get(kind.key)
                limit = None if given is None or given.value is None else kind.limit(given.value, values)
                if limit is not None:
                    assert given is not None
                    gates.append(Gate(f"{name}.{kind.key}", kind, name, limit, given.line))
        return tuple(gates)

    def build_regression(self, section: dict[str, _Value], model: str, version: str | None) -> UpgradeConfig:
        def get(key: str) -> _Value | None:
            value = section.get(key)
            return value if value is not None and value.value is not None else None

        drop, fail_drop = {}, {}
        set_by: dict[str, tuple[str, int]] = {}
        for prim in PRIMITIVES:
            d = get(f"{prim}.max_drop_mean_ovl") or get("max_drop_mean_ovl")
            f = get(f"{prim}.fail_drop_mean_ovl") or get("fail_drop_mean_ovl")
            drop[prim] = d.value if d else UPGRADE_DROP
            fail_drop[prim] = f.value if f else drop[prim] / 2
            set_by.update(
                {f"{prim}.{k}": (v.path, v.line) for k, v in zip(REGRESSION_MARGIN_KEYS, (d, f), strict=True) if v}
            )
            if f and f.value > drop[prim]:
                where = f" (for {version})" if version else ""
                origin = f"{d.path} on line {d.line}" if d else "the default"
                raise self.fail(
                    f.line,
                    f.path,
                    f"{f.value:g} exceeds max_drop_mean_ovl {drop[prim]:g} for {prim}{where} (set by {origin}); "
                    "the drop that fails must not exceed the drop that passes",
                )
        alpha, resamples, prims, inconclusive = (get(k) for k in SHARED)
        set_by.update(
            {k: (v.path, v.line) for k, v in zip(SHARED, (alpha, resamples, prims, inconclusive), strict=True) if v}
        )
        spending, rounds = (get(f"{SEQUENTIAL}.{k}") for k in SEQUENTIAL_KEYS)
        set_by.update(
            {
                f"{SEQUENTIAL}.{k}": (v.path, v.line)
                for k, v in zip(SEQUENTIAL_KEYS, (spending, rounds), strict=True)
                if v
            }
        )
        return UpgradeConfig(
            alpha=alpha.value if alpha else ALPHA,
            resamples=resamples.value if resamples else UPGRADE_RESAMPLES,
            primitives=prims.value if prims else PRIMITIVES,
            drop=drop,
            fail_drop=fail_drop,
            inconclusive=inconclusive.value if inconclusive else INCONCLUSIVE_CHOICES[0],
            spending=spending.value if spending else DEFAULT_SPENDING,
            rounds=rounds.value if rounds else DEFAULT_ROUNDS,
            file=self.filename,
            set_by=set_by,
        )


class _Leaves(_Layers):
    """The value of each key, checked against what the key allows."""

    def one_of(self, node: yaml.Node, path: str, allowed: tuple[str, ...], meaning: str) -> str:
        """A scalar that must be one of `allowed` words; the refusal says what each means."""
        value = self.scalar(node)
        if not isinstance(value, str) or value not in allowed:
            raise self.fail(line_of(node), path, f"expected {' or '.join(allowed)}, got {node_text(node)}: {meaning}")
        return value

    def margin_leaf(self, key: str, node: yaml.Node, path: str) -> float | None:
        """regression.<primitive>.max_drop_mean_ovl or fail_drop_mean_ovl: a drop in mean OVL."""
        return None if is_null(node) else self.number(node, path, 0.0, 1.0)

    def sequential_leaf(self, key: str, node: yaml.Node, path: str) -> Any:
        """regression.sequential.spending (a Lan–DeMets spending function) or .rounds (a whole number)."""
        if is_null(node):
            return None
        value = self.scalar(node)
        if key == "spending":
            return self.one_of(
                node,
                path,
                SPENDING,
                f"{DEFAULT_SPENDING} (the default) spends almost no error early, pocock spends it evenly "
                "(docs/statistics.md §7.2)",
            )
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ROUNDS:
            raise self.fail(
                line_of(node),
                path,
                f"expected a whole number of rounds from 1 to {MAX_ROUNDS}, got {node_text(node)} (1 round is the "
                "fixed design: one look, at the whole dataset)",
            )
        return value

    def leaf(self, section: str, key: str, node: yaml.Node, path: str) -> Any:
        if is_null(node):
            return None
        if key in KINDS:
            return KINDS[key].read(self, node, path)
        if section == "uncertainty":  # alpha, the level of the λ test
            return self.number(node, path, 0.0, 1.0, open_interval=True)
        if section == "decisions":
            return self.number(node, path, 0.0, math.inf, what="a cost")
        # regression
        if key == "alpha":
            return self.number(node, path, 0.0, 1.0, open_interval=True)
        if key == "inconclusive":
            return self.one_of(
                node,
                path,
                INCONCLUSIVE_CHOICES,
                "fail (the default) fails the run on an inconclusive comparison, pass lets it pass with a notice",
            )
        if key == "resamples":
            value = self.scalar(node)
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.fail(line_of(node), path, f"expected a whole number of resamples, got {node_text(node)}")
            if not 200 <= value <= 100_000:
                raise self.fail(line_of(node), path, f"{value} is outside the allowed range 200..100000")
            return value
        if key == "primitives":
            if not isinstance(node, yaml.SequenceNode):
                raise self.fail(
                    line_of(node),
                    path,
                    f"expected a list of primitives (e.g. [noul, choice, score]), got {node_text(node)}",
                )
            names = []
            for item in node.value:
                name = self.scalar(item)
                if not isinstance(name, str):
                    raise self.fail(
                        line_of(item), path, f"expected primitive names, found {node_text(item)} in the list"
                    )
                if name not in PRIMITIVES:
                    close = difflib.get_close_matches(str(name), PRIMITIVES, n=1, cutoff=0.6)
                    hint = f"; did you mean '{close[0]}'?" if close else ""
                    raise self.fail(
                        line_of(item), path, f"unknown primitive '{name}'{hint} Allowed: {', '.join(PRIMITIVES)}."
                    )
                if name in names:
                    raise self.fail(line_of(item), path, f"'{name}' is listed twice")
                names.append(name)
            if not names:
                raise self.fail(line_of(node), path, "the list is empty; remove the key to gate all three primitives")
            return tuple(p for p in PRIMITIVES if p in names)
        return self.number(node, path, 0.0, 1.0)  # max_drop_mean_ovl, fail_drop_mean_ovl


class _Reader(_Leaves):
    """The file's structure: models, their sections and version layers, each key checked against the schema."""

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
        if root is None or is_null(root):
            raise self.fail(
                0,
                "",
                "the file is empty (or only comments), so it would gate nothing; give your model a section "
                "(python -m pytest_sys1cal docs thresholds), or remove the file to run without threshold gates",
            )
        models: dict[str, tuple[_Layer, dict[str, tuple[_Layer, int]]]] = {}
        for key, key_node, value in self.mapping(root, "", "the top level (model names)"):
            if known_models is not None and key not in known_models:
                raise self.unknown(
                    line_of(key_node), key, key, known_models, " (the top level names models; these are the known ones)"
                )
            self.key_lines[key] = line_of(key_node)
            models[key] = self.model_section(key, value)
        return models

    def model_section(self, model: str, node: yaml.Node) -> tuple[_Layer, dict[str, tuple[_Layer, int]]]:
        if is_null(node):
            return {}, {}
        base: _Layer = {}
        versions: dict[str, tuple[_Layer, int]] = {}
        for key, key_node, value in self.mapping(node, model, f"model '{model}'"):
            if key == READING_KEY:
                base[key] = self.reading(value, join(model, key))
            elif key in SECTIONS:
                base[key] = self.section(model, key, value)
            elif self.looks_like_version(key, value):
                vpath = f"{model}[{key}]"
                layer: _Layer = {}
                if not is_null(value):
                    for skey, skey_node, svalue in self.mapping(value, vpath, f"version '{key}'"):
                        if skey == READING_KEY:
                            if not is_null(svalue):  # null: the model's reading, as an absent key
                                layer[skey] = self.reading(svalue, join(vpath, skey))
                            continue
                        if skey not in SECTIONS:
                            self.misplaced_gate(skey, skey_node, vpath)
                            raise self.unknown(line_of(skey_node), join(vpath, skey), skey, MODEL_KEYS)
                        layer[skey] = self.section(vpath, skey, svalue)
                versions[key] = (layer, line_of(key_node))
            else:
                self.misplaced_gate(key, key_node, model)
                raise self.unknown(
                    line_of(key_node),
                    join(model, key),
                    key,
                    MODEL_KEYS,
                    ", or a model version (e.g. 'jev-1.14.0') holding those sections",
                )
        return base, versions

    def misplaced_gate(self, key: str, key_node: yaml.Node, parent: str) -> None:
        if key in KINDS and set(KINDS[key].sections) <= set(PRIMITIVES):
            raise self.fail(
                line_of(key_node),
                join(parent, key),
                f"'{key}' is a gate of one primitive; put it under noul, choice or score "
                f"(e.g. {parent}.choice.{key}). Allowed keys here: {', '.join(SECTIONS)}.",
            )

    def reading(self, node: yaml.Node, path: str) -> dict[str, _Value] | None:
        """`reading: call` or `mean`, as a one-key layer entry (so a version's replaces the model's); None for null."""
        if is_null(node):
            return None
        value = self.one_of(
            node,
            path,
            tuple(sorted(READINGS)),
            "call reads each answer per call (what one request to the service gets), mean reads each rendering's "
            "mean over its calls (the paper's protocol)",
        )
        return {READING_KEY: _Value(value, line_of(node), path)}

    def looks_like_version(self, key: str, node: yaml.Node) -> bool:
        """A version key's value is a mapping of sections (or null). A key close to a section name whose
        value holds no section is a typo of that section, not a version."""
        if not (is_null(node) or isinstance(node, yaml.MappingNode)):
            return False
        keys = [] if is_null(node) else [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
        if any(k in MODEL_KEYS for k in keys):
            return True
        return not difflib.get_close_matches(key, SECTIONS, n=1, cutoff=0.75)

    def section(self, parent: str, section: str, node: yaml.Node) -> dict[str, _Value] | None:
        path = join(parent, section)
        if is_null(node):
            return None
        allowed = allowed_keys(section)
        out: dict[str, _Value] = {}
        for key, key_node, value in self.mapping(node, path, f"'{section}'"):
            kpath = join(path, key)
            if key not in allowed:
                if section in PRIMITIVES and key in KINDS and KINDS[key].sections == ("choice",):
                    raise self.fail(
                        line_of(key_node),
                        kpath,
                        f"'{key}' is a Choice gate; it is only allowed under choice. "
                        f"Allowed keys: {', '.join(allowed)}.",
                    )
                raise self.unknown(line_of(key_node), kpath, key, allowed)
            if section == "regression" and (key in PRIMITIVES or key == SEQUENTIAL):
                if is_null(value):
                    out[f"{key}.*"] = _Value(None, line_of(key_node), kpath)
                    continue
                allowed_here = SEQUENTIAL_KEYS if key == SEQUENTIAL else REGRESSION_MARGIN_KEYS
                for skey, skey_node, svalue in self.mapping(value, kpath, f"'regression.{key}'"):
                    spath = join(kpath, skey)
                    if skey not in allowed_here:
                        raise self.unknown(line_of(skey_node), spath, skey, allowed_here)
                    read = self.sequential_leaf if key == SEQUENTIAL else self.margin_leaf
                    out[f"{key}.{skey}"] = _Value(read(skey, svalue, spath), line_of(svalue), spath)
                continue
            out[key] = _Value(self.leaf(section, key, value, kpath), line_of(value), kpath)
        if section == "uncertainty":
            flags = [k for k in LAMBDA_FLAGS if k in out and out[k].value is True]
            if len(flags) == 2:
                raise self.fail(
                    out["require_lambda_zero"].line,
                    join(path, "require_lambda_zero"),
                    "require_lambda_positive and require_lambda_zero cannot both be true; keep one",
                )
        return out


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
