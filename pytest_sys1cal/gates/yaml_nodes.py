"""thresholds.yaml as YAML nodes: values read and checked, and every mistake as one line naming the file, the
line, the key path and the fix, with what was found said in words (never a Python repr or a tag URI)."""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from typing import Any

import yaml

from .schema import ThresholdsError


class Nodes:
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
            raise self.fail(line_of(node), path, f"expected a mapping for {what}, got {node_text(node)}")
        out: list[tuple[str, yaml.Node, yaml.Node]] = []
        seen: dict[str, int] = {}
        for key_node, value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise self.fail(
                    line_of(key_node),
                    join(path, "<<"),
                    "YAML merge keys (<<) are not supported; use an alias (*name) for a whole section",
                )
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(line_of(key_node), path, f"keys must be text, found {node_text(key_node)} as a key")
            if key_node.tag != "tag:yaml.org,2002:str":
                shown = key_node.value
                raise self.fail(
                    line_of(key_node),
                    join(path, shown),
                    f'keys must be text; quote it ("{shown}") if it is a version',
                )
            key = key_node.value
            if key in seen:
                raise self.fail(line_of(key_node), join(path, key), f"duplicate key (first given on line {seen[key]})")
            seen[key] = line_of(key_node)
            out.append((key, key_node, value))
        return out

    def scalar(self, node: yaml.Node) -> Any:
        """The node's value, or `Unsupported` for what no key takes: a list or mapping (an alias to one
        included), or a tag the safe loader does not construct (``!custom``, ``!!python/…``)."""
        if not isinstance(node, yaml.ScalarNode):
            return Unsupported(node)
        try:
            return self.constructor.construct_object(node, deep=True)
        except Exception:  # a constructor's own failure on the user's value: !!bool maybe, !!timestamp abc
            return Unsupported(node)

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
            raise self.fail(line_of(node), path, f"expected {what}, got {node_text(node)}")
        value = float(value)
        if open_interval:
            ok, shown = low < value < high, f"({low:g}, {high:g})"
        else:
            ok = low <= value <= high
            shown = f"[{low:g}, {high:g}]" if math.isfinite(high) else f"≥ {low:g}"
        if not (math.isfinite(value) and ok):
            if what == "a cost":
                raise self.fail(line_of(node), path, f"{value:g} is not a valid cost: it must be finite and {shown}")
            raise self.fail(line_of(node), path, f"{value:g} is outside the allowed range {shown}")
        return value

    def boolean(self, node: yaml.Node, path: str) -> bool:
        value = self.scalar(node)
        if not isinstance(value, bool):
            raise self.fail(line_of(node), path, f"expected true or false, got {node_text(node)}")
        return value


class Unsupported:
    """A YAML node that is not a plain value; shown in words wherever it lands in a message."""

    def __init__(self, node: yaml.Node):
        self.node = node

    def __str__(self) -> str:
        return node_text(self.node)

    __repr__ = __str__


def is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def line_of(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


SCALAR_KINDS = {
    "tag:yaml.org,2002:str": "text",
    "tag:yaml.org,2002:bool": "a boolean",
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:timestamp": "a date",
    "tag:yaml.org,2002:binary": "binary data",
}


def node_text(node: yaml.Node) -> str:
    """What a node is, in words, for messages: never a Python repr or a tag URI."""
    if isinstance(node, yaml.MappingNode):
        return "a set" if node.tag == "tag:yaml.org,2002:set" else "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
    kind = SCALAR_KINDS.get(node.tag)
    if kind is None:
        return f"{node.value!r} (with the YAML tag {tag}, which is not supported here)"
    try:
        yaml.constructor.SafeConstructor().construct_object(node, deep=True)
    except Exception:  # as in _Reader.scalar
        return f"{node.value!r} (not a valid {tag})"
    return f"{node.value!r} ({kind})"
