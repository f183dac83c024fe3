"""The result of measuring one rendering, as it travels from the item (possibly on an xdist worker) to the
controller's analysis: typed inside, a JSON-able dict only on the wire and at the analysis's input."""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .dataset import Dataset, Rendering
from .document import Measured

# A sample's shape: per question, its key and how many numbers it holds (0: one number, not a list).
Layout = tuple[tuple[str, int], ...]
_LAYOUTS: dict[Layout, Layout] = {}  # one tuple per distinct shape, shared by every row of that shape


@dataclass(frozen=True, slots=True)
class ResultRow:
    """One rendering's answers (or why it has none). The samples stay packed until the analysis reads them: at
    18k renderings they are most of the memory. Samples whose every value is a float or a list of floats (what
    the built-in adapters give) are kept as their numbers packed as doubles (`values`, exact) and the
    shape they share (`layout`); any other samples as one compact JSON text (`samples_json`).

    samples: per repeat ``{"noul": p, "choice": p, "choice_swapped": p, "score": [q_0..q_9]}`` (P(True));
    recorded: this run saved (part of) the rendering's cassette; error: why it could not be measured."""

    instance_id: str
    samples_json: str | None = None
    server_model: str | None = None
    recorded: bool = False
    error: str | None = None
    values: bytes | None = None  # the doubles of `array("d")`, immutable (a row stays hashable)
    layout: Layout = ()

    @classmethod
    def measured(
        cls,
        rendering: Rendering,
        samples: Sequence[Mapping[str, Any]],
        *,
        server_model: str | None = None,
        recorded: bool = False,
    ) -> ResultRow:
        packed = _pack(samples)
        if packed is None:
            return cls(rendering.instance_id, json.dumps(list(samples)), server_model, recorded)
        layout, values = packed
        return cls(rendering.instance_id, None, server_model, recorded, values=values, layout=layout)

    @classmethod
    def packed(cls, rendering: Rendering, layout: Layout, values: bytes, server_model: str | None) -> ResultRow:
        """A row from samples already packed (the replay cache's): `values` the doubles of `layout`'s shape."""
        return cls(rendering.instance_id, None, server_model, values=values, layout=_LAYOUTS.setdefault(layout, layout))

    @classmethod
    def failed(cls, rendering: Rendering, error: str) -> ResultRow:
        return cls(rendering.instance_id, error=error)

    @property
    def samples(self) -> list[dict[str, Any]]:
        if self.values is not None:
            return _unpack(self.layout, self.values)
        return json.loads(self.samples_json) if self.samples_json else []

    def to_wire(self) -> dict[str, Any]:
        """What rides on the item's test report to the xdist controller (report attributes must be JSON)."""
        return {
            "instance_id": self.instance_id,
            "samples_json": self.samples_json,
            "server_model": self.server_model,
            "recorded": self.recorded,
            "error": self.error,
            "values": None if self.values is None else array("d", self.values).tolist(),
            "layout": [list(part) for part in self.layout],
        }

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ResultRow:
        values = data.get("values")
        layout: Layout = tuple((key, count) for key, count in data.get("layout") or ())
        return cls(
            **{key: data[key] for key in ("instance_id", "samples_json", "server_model", "recorded", "error")},
            values=None if values is None else array("d", values).tobytes(),
            layout=_LAYOUTS.setdefault(layout, layout),
        )


def _pack(samples: Sequence[Mapping[str, Any]]) -> tuple[Layout, bytes] | None:
    """The samples' numbers in order and their one shape; None when a value is neither a float nor a list of
    floats, or the repeats differ in shape (such samples stay JSON)."""
    numbers: list[float] = []
    layout: Layout | None = None
    for sample in samples:
        shape = []
        for key, value in sample.items():
            if type(value) is float:
                numbers.append(value)
                shape.append((key, 0))
            elif type(value) is list and value and all(type(number) is float for number in value):
                numbers.extend(value)
                shape.append((key, len(value)))
            else:
                return None
        if layout is None:
            layout = tuple(shape)
        elif layout != tuple(shape):
            return None
    if layout is None:  # no samples at all
        return None
    return _LAYOUTS.setdefault(layout, layout), array("d", numbers).tobytes()


def _unpack(layout: Layout, values: bytes) -> list[dict[str, Any]]:
    """The samples `_pack` packed, as they were given."""
    numbers = array("d", values).tolist()
    samples, at = [], 0
    while at < len(numbers):
        sample: dict[str, Any] = {}
        for key, count in layout:
            if count:
                sample[key] = numbers[at : at + count]
                at += count
            else:
                sample[key] = numbers[at]
                at += 1
        samples.append(sample)
    return samples


def analysis_rows(rows: Iterable[ResultRow], dataset: Dataset) -> list[Measured]:
    """The analysis's input (analysis/__init__.py): each row with its rendering's identity and p*, the
    samples parsed, ``error`` where it failed."""
    by_id = {rendering.instance_id: rendering for rendering in dataset.renderings}
    out = []
    for row in rows:
        r = by_id[row.instance_id]
        item: Measured = {
            "instance_id": r.instance_id,
            "latent_instance_id": r.latent_instance_id,
            "family": r.family,
            "representation": r.representation,
            "p_star": r.p_star,
            "samples": row.samples,
        }
        if row.error is not None:
            item["error"] = row.error
        else:
            item.update({"server_model": row.server_model, "recorded": row.recorded})
        out.append(item)
    return out
