"""The manifest of a cassette folder (one model version): what a recording writes into it before the
first request and after the last, so a later replay knows what the cassettes hold."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

from .dataset import Dataset


def new_manifest(model: str, version: str, dataset: Dataset, repeats: int, questions: Sequence[str]) -> dict[str, Any]:
    """Written before the first request, so an interrupted recording is resumable."""
    return {
        "model": model,
        "version": version,
        "server_model": None,
        "dataset": {"name": dataset.name, "sha256": dataset.sha256},
        "repeats": repeats,
        "questions": list(questions),
        "source": "recorded",
        "recorded_at": None,
    }


def after_recording(
    manifest: Mapping[str, Any], results: Sequence[Mapping[str, Any]], repeats: int
) -> dict[str, Any] | None:
    """The manifest once this run's results are in; None when this run recorded nothing."""
    recorded = [row for row in results if row.get("recorded")]
    if not recorded:
        return None
    server_models = sorted({row["server_model"] for row in recorded if row.get("server_model")})
    source = manifest["source"]
    updated = {
        **manifest,
        "server_model": ", ".join(server_models) or manifest.get("server_model"),
        "recorded_at": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        "source": source if source == "recorded" else "mixed",
    }
    if not any(row.get("error") for row in results):
        updated["repeats"] = repeats
    return updated
