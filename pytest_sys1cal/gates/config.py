"""Reading thresholds.yaml: YAML nodes to validated sections with file:line messages (naming the allowed
keys and the nearest one), version overrides laid over the model's section, and the resolved `Thresholds`."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..vocabulary import PRIMITIVES
from .kinds import KINDS, Gate, kinds_in
from .schema import (
    DEFAULT_ALPHA,
    DEFAULT_DROP,
    DEFAULT_RESAMPLES,
    INCONCLUSIVE_CHOICES,
    LAMBDA_FLAGS,
    REGRESSION_MARGIN_KEYS,
    SECTIONS,
    RegressionConfig,
    Thresholds,
    ThresholdsError,
    allowed_keys,
)


@dataclass(frozen=True)
class _Value:
    value: Any  # None: removed / not set
    line: int
    path: str


_Layer = dict[str, dict[str, _Value] | None]  # section → key → value; a None section clears it
# The regression settings shared by every primitive, in RegressionConfig.set_by's names.
SHARED = ("alpha", "resamples", "primitives", "inconclusive")


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
            regression=RegressionConfig(file=filename),
            notice=f"no section for model '{model}' (models in the file: {listed}); no threshold gates apply",
        )
    versions = tuple(models[model][1])
    chosen = resolved[model].get(version) if version in versions else resolved[model][None]
    layers = (model, f"{model}[{version}]") if version in versions else (model,)
    return Thresholds(path=filename, model=model, version=version, layers=layers, versions=versions, **chosen)


class _Nodes:
    """thresholds.yaml as YAML nodes: values read and checked, and every mistake as one line naming the file,
    the line, the key path and the fix."""

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

    def mapping(self, node: yaml.Node, path: str, what: str) -> list[tuple[str, yaml.Node, yaml.Node]]:
        """(key, key node, value node) of a mapping node, refusing non-mappings, duplicates and
        non-string keys."""
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(_line(node), path, f"expected a mapping for {what}, got {_node_text(node)}")
        out, seen = [], {}
        for key_node, value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise self.fail(
                    _line(key_node),
                    _join(path, "<<"),
                    "YAML merge keys (<<) are not supported; use an alias (*name) for a whole section",
                )
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(_line(key_node), path, f"keys must be text, found {_node_text(key_node)} as a key")
            if key_node.tag != "tag:yaml.org,2002:str":
                shown = key_node.value
                raise self.fail(
                    _line(key_node),
                    _join(path, shown),
                    f'keys must be text; quote it ("{shown}") if it is a version',
                )
            key = key_node.value
            if key in seen:
                raise self.fail(_line(key_node), _join(path, key), f"duplicate key (first given on line {seen[key]})")
            seen[key] = _line(key_node)
            out.append((key, key_node, value))
        return out

    def scalar(self, node: yaml.Node) -> Any:
        """The node's value, or `_Unsupported` for what no key takes: a list or mapping (an alias to one
        included), or a tag the safe loader does not construct (``!custom``, ``!!python/…``)."""
        if not isinstance(node, yaml.ScalarNode):
            return _Unsupported(node)
        try:
            return self.constructor.construct_object(node, deep=True)
        except Exception:  # a constructor's own failure on the user's value: !!bool maybe, !!timestamp abc
            return _Unsupported(node)

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
            raise self.fail(_line(node), path, f"expected {what}, got {_node_text(node)}")
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
            raise self.fail(_line(node), path, f"expected true or false, got {_node_text(node)}")
        return value


class _Layers(_Nodes):
    """A model's sections, with a version's layer laid over them, turned into gates and settings."""

    # ------------------------------------------------------------------ merging and building

    def resolve(self, model: str, version: str | None, base: _Layer, layer: _Layer | None) -> dict[str, Any]:
        merged = _merge(base, layer) if layer is not None else {k: dict(v or {}) for k, v in base.items()}
        return {
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

    def build_regression(self, section: dict[str, _Value], model: str, version: str | None) -> RegressionConfig:
        def get(key: str) -> _Value | None:
            value = section.get(key)
            return value if value is not None and value.value is not None else None

        drop, fail_drop = {}, {}
        set_by: dict[str, tuple[str, int]] = {}
        for prim in PRIMITIVES:
            d = get(f"{prim}.max_drop_mean_ovl") or get("max_drop_mean_ovl")
            f = get(f"{prim}.fail_drop_mean_ovl") or get("fail_drop_mean_ovl")
            drop[prim] = d.value if d else DEFAULT_DROP
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
        return RegressionConfig(
            alpha=alpha.value if alpha else DEFAULT_ALPHA,
            resamples=resamples.value if resamples else DEFAULT_RESAMPLES,
            primitives=prims.value if prims else PRIMITIVES,
            drop=drop,
            fail_drop=fail_drop,
            inconclusive=inconclusive.value if inconclusive else INCONCLUSIVE_CHOICES[0],
            file=self.filename,
            set_by=set_by,
        )


class _Reader(_Layers):
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
        if root is None or _is_null(root):
            raise self.fail(
                0,
                "",
                "the file is empty (or only comments), so it would gate nothing; give your model a section "
                "(docs/thresholds.md), or remove the file to run without threshold gates",
            )
        models: dict[str, tuple[_Layer, dict[str, tuple[_Layer, int]]]] = {}
        for key, key_node, value in self.mapping(root, "", "the top level (model names)"):
            if known_models is not None and key not in known_models:
                raise self.unknown(
                    _line(key_node), key, key, known_models, " (the top level names models; these are the known ones)"
                )
            self.key_lines[key] = _line(key_node)
            models[key] = self.model_section(key, value)
        return models

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
        if key in KINDS and set(KINDS[key].sections) <= set(PRIMITIVES):
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
        allowed = allowed_keys(section)
        out: dict[str, _Value] = {}
        for key, key_node, value in self.mapping(node, path, f"'{section}'"):
            kpath = _join(path, key)
            if key not in allowed:
                if section in PRIMITIVES and key in KINDS and KINDS[key].sections == ("choice",):
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
            value = self.scalar(node)
            if not isinstance(value, str) or value not in INCONCLUSIVE_CHOICES:
                raise self.fail(
                    _line(node),
                    path,
                    f"expected fail or pass, got {_node_text(node)}: fail (the default) fails the run on an "
                    "inconclusive comparison, pass lets it pass with a notice",
                )
            return value
        if key == "resamples":
            value = self.scalar(node)
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.fail(_line(node), path, f"expected a whole number of resamples, got {_node_text(node)}")
            if not 200 <= value <= 100_000:
                raise self.fail(_line(node), path, f"{value} is outside the allowed range 200..100000")
            return value
        if key == "primitives":
            if not isinstance(node, yaml.SequenceNode):
                raise self.fail(
                    _line(node),
                    path,
                    f"expected a list of primitives (e.g. [noul, choice, score]), got {_node_text(node)}",
                )
            names = []
            for item in node.value:
                name = self.scalar(item)
                if not isinstance(name, str):
                    raise self.fail(
                        _line(item), path, f"expected primitive names, found {_node_text(item)} in the list"
                    )
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
    """A YAML node that is not a plain value; shown in words wherever it lands in a message."""

    def __init__(self, node: yaml.Node):
        self.node = node

    def __str__(self) -> str:
        return _node_text(self.node)

    __repr__ = __str__


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


_SCALAR_KINDS = {
    "tag:yaml.org,2002:str": "text",
    "tag:yaml.org,2002:bool": "a boolean",
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:timestamp": "a date",
    "tag:yaml.org,2002:binary": "binary data",
}


def _node_text(node: yaml.Node) -> str:
    """What a node is, in words, for messages: never a Python repr or a tag URI."""
    if isinstance(node, yaml.MappingNode):
        return "a set" if node.tag == "tag:yaml.org,2002:set" else "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    kind = _SCALAR_KINDS.get(node.tag)
    if kind is None:
        return f"{node.value!r} (with the YAML tag {tag}, which is not supported here)"
    try:
        yaml.constructor.SafeConstructor().construct_object(node, deep=True)
    except Exception:  # as in _Reader.scalar
        return f"{node.value!r} (not a valid {tag})"
    return f"{node.value!r} ({kind})"
