"""The manifest's digests of each cassette's recorded answers (its `answers` field, docs/cassettes.md): what
they are, the check a replay makes against them, and what a recording leaves in them. A cassette is evidence:
an answer edited after it was recorded is refused, and a deliberate change is a re-recording, which the
manifest's diff shows in a pull request."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence, Set
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cassette import Recorded, cassette_name
from .manifest import MANIFEST

if TYPE_CHECKING:
    from ..dataset import Dataset
    from ..results import ResultRow

ANSWERS = "answers"  # the manifest's field: {cassette path under the folder: digest of its answers}


def answers_digest(responses: Sequence[Any]) -> str:
    """sha256 of what a cassette answers: every interaction's recorded response (status, headers, body), in
    order, as JSON with sorted keys and no spaces. Parsed, not the file's bytes: indentation and the line
    endings a checkout may convert change nothing a replay reads, so they change no digest."""
    return hashlib.sha256(json.dumps(responses, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def changed(manifest: Mapping[str, Any] | None, name: str, recorded: Recorded) -> str | None:
    """None when the cassette `name` (its path under the folder), read as `recorded`, answers what the manifest
    says was recorded, or when the manifest records no digests (written before they were kept); else what is
    wrong, for the item's failure."""
    digests = (manifest or {}).get(ANSWERS)
    if digests is None:
        return None
    expected = digests.get(name)
    if expected is None:
        return f"not among the cassettes whose answers {MANIFEST} records (a cassette added by hand?)"
    found = answers_digest(recorded.responses)
    if found != expected:
        return f"its answers are not the ones recorded (sha256 {found[:12]}…; {MANIFEST} records {expected[:12]}…)"
    return None


def unchecked_notice(folder: Path, manifest: Mapping[str, Any] | None) -> str | None:
    """The header's line for a replay of a folder whose manifest records no digests of its answers."""
    if manifest is None or ANSWERS in manifest:
        return None
    return (
        f"sys1cal: {folder / MANIFEST} records no digests of its cassettes' answers (written before "
        "pytest-sys1cal kept them), so an edited answer would replay unnoticed; the next recording into the "
        "folder records them (on a complete folder, --sys1cal-record-mode=once sends nothing and just adds them)"
    )


def recorded_names(rows: Iterable[ResultRow], dataset: Dataset) -> set[str]:
    """The cassettes (paths under the folder) a recording's `rows` say it recorded into."""
    recorded = {row.instance_id for row in rows if row.recorded}
    return {cassette_name(r) for r in dataset.renderings if r.instance_id in recorded}


def after_recording(
    folder: Path, manifest: Mapping[str, Any] | None, recorded: Set[str] = frozenset()
) -> dict[str, str]:
    """The digests a manifest keeps after a recording: of each cassette this run recorded into (`recorded`,
    their paths under the folder), and of each that had none (a folder recorded before digests were kept: its
    cassettes are taken as they are); a cassette whose answers changed since it was recorded, and that was not
    recorded again, keeps its old digest, so its replay is still refused."""
    known = (manifest or {}).get(ANSWERS) or {}
    answers = {}
    for path in folder.glob("*/*.json"):
        name = f"{path.parent.name}/{path.name}"
        if name in known and name not in recorded:
            answers[name] = known[name]
            continue
        try:
            answers[name] = answers_digest(Recorded.read(str(path)).responses)
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a cassette: its replay fails as damaged, digest or not
    return dict(sorted(answers.items()))
