"""The result of measuring one rendering, as it travels from the item (possibly on an xdist worker) to the
controller's analysis: typed inside, a JSON-able dict only on the wire and at the analysis's input."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .dataset import Dataset, Rendering


@dataclass(frozen=True, slots=True)
class ResultRow:
    """One rendering's answers (or why it has none). The samples stay one compact JSON text (floats
    round-trip exactly) until the analysis reads them: at 18k renderings that is most of the memory.

    samples: per repeat ``{"noul": p, "choice": p, "choice_swapped": p, "score": [q_0..q_9]}`` (P(True));
    recorded: this run saved (part of) the rendering's cassette; error: why it could not be measured."""

    instance_id: str
    samples_json: str = "[]"
    server_model: str | None = None
    recorded: bool = False
    error: str | None = None

    @classmethod
    def measured(
        cls,
        rendering: Rendering,
        samples: Sequence[Mapping[str, Any]],
        *,
        server_model: str | None = None,
        recorded: bool = False,
    ) -> ResultRow:
        return cls(rendering.instance_id, json.dumps(list(samples)), server_model, recorded)

    @classmethod
    def failed(cls, rendering: Rendering, error: str) -> ResultRow:
        return cls(rendering.instance_id, error=error)

    @property
    def samples(self) -> list[dict[str, Any]]:
        return json.loads(self.samples_json)

    def to_wire(self) -> dict[str, Any]:
        """What rides on the item's test report to the xdist controller (report attributes must be JSON)."""
        return {
            "instance_id": self.instance_id,
            "samples_json": self.samples_json,
            "server_model": self.server_model,
            "recorded": self.recorded,
            "error": self.error,
        }

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ResultRow:
        return cls(**{key: data[key] for key in ("instance_id", "samples_json", "server_model", "recorded", "error")})


def analysis_rows(rows: Iterable[ResultRow], dataset: Dataset) -> list[dict[str, Any]]:
    """The analysis's input (analysis/__init__.py): each row with its rendering's identity and p*, the
    samples parsed, ``error`` where it failed."""
    by_id = {rendering.instance_id: rendering for rendering in dataset.renderings}
    out = []
    for row in rows:
        r = by_id[row.instance_id]
        item: dict[str, Any] = {
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
            item.update(server_model=row.server_model, recorded=row.recorded)
        out.append(item)
    return out
