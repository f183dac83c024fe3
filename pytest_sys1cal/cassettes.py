"""The VCR store: one vcrpy JSON cassette per rendering, a manifest per model version, atomic writes.

Replay reads a cassette as plain JSON (`Recorded`); vcrpy's objects and matchers (vcr_store.py) and the
HTTP transports that record (recording/transport.py) are imported only when a run needs them, so a replay
pays for neither. The format is vcrpy's: ``vcr.use_cassette(path, serializer="json")`` reads every file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .dataset import Rendering
from .files import write_atomic
from .manifest import MANIFEST, read_manifest
from .vocabulary import MANIFEST_SCHEMA, RECORD_MODES

if TYPE_CHECKING:
    from vcr.request import Request as VcrRequest

EXTENSION_KEY = "sys1cal_cassette"
INTERACTION_KEY = "sys1cal_interaction"
REDACTED = "<REDACTED>"
# Headers that carry or may carry credentials, matched case-insensitively on the name.
SECRET_HEADER = re.compile(r"authorization|cookie|api[-_]?key|token|secret|session|signature|credential|password", re.I)


class CassetteMiss(Exception):
    """A request that replay cannot answer; the message names the cassette file."""


class CassetteStore:
    """Cassette files of one model version: paths, loading, saving, the manifest."""

    def __init__(self, root: Path, model: str, version: str, record_mode: str, secrets: Iterable[str] = ()):
        if record_mode not in RECORD_MODES:
            raise ValueError(f"record mode {record_mode!r} is not one of {', '.join(RECORD_MODES)}")
        self.root = root
        self.model, self.version = model, version
        self.folder = root / model / version
        self._folder = str(self.folder)
        self.record_mode = record_mode
        self._secrets = [s for s in secrets if s]

    def path_for(self, rendering: Rendering) -> Path:
        return Path(self.file_for(rendering))

    def file_for(self, rendering: Rendering) -> str:
        """path_for as text, for the replay path (pathlib's joins cost more than reading a small file)."""
        return f"{self._folder}/{rendering.family}/{rendering.short_id}.json"

    def read_manifest(self) -> dict[str, Any] | None:
        """The folder's validated manifest (manifest.py), None when there is none."""
        return read_manifest(self.folder / MANIFEST, self.model, self.version)

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        text = json.dumps({"schema": MANIFEST_SCHEMA, **manifest}, indent=2, sort_keys=True) + "\n"
        write_atomic(self.folder / MANIFEST, self._redact(text))

    def remove_empty_folder(self) -> None:
        """Undo a recording that saved nothing: the manifest it wrote, and the folders it left empty."""
        if any(self.folder.glob("*/*.json")):
            return
        (self.folder / MANIFEST).unlink(missing_ok=True)
        for directory in [*sorted(self.folder.glob("*/"), reverse=True), self.folder, self.folder.parent, self.root]:
            if directory.is_dir() and not any(directory.iterdir()):
                directory.rmdir()

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def scrub_request(self, request: VcrRequest) -> VcrRequest:
        for name in list(request.headers):
            if SECRET_HEADER.search(name):
                del request.headers[name]
        return request

    def scrub_response(self, response: dict[str, Any]) -> dict[str, Any]:
        response["headers"] = {k: v for k, v in response["headers"].items() if not SECRET_HEADER.search(k)}
        body = response["body"]["string"]
        if self._secrets and isinstance(body, bytes):
            for secret in self._secrets:
                body = body.replace(secret.encode(), REDACTED.encode())
            response["body"]["string"] = body
        return response


class Recorded:
    """A cassette read for replay only, without vcrpy's objects (building them is most of a replayed item's
    cost): its interactions as stored, each played once, in order. It answers a request whose method, path
    and body bytes equal a recorded one's, the common case; anything else is left to vcrpy's matchers."""

    __slots__ = ("_played", "_requests", "_responses")

    def __init__(self, data: Any):
        interactions = data["interactions"]
        requests = [interaction["request"] for interaction in interactions]
        self._requests = [(r["method"], urlsplit(r["uri"]).path, r["body"]) for r in requests]
        self._responses = [interaction["response"] for interaction in interactions]
        self._played = [False] * len(interactions)

    @classmethod
    def read(cls, path: str) -> Recorded:
        """Raises FileNotFoundError, or ValueError/KeyError/TypeError for a file that is not a cassette."""
        with open(path, "rb") as handle:
            return cls(json.loads(handle.read()))

    def take(self, method: str, path: str, body: str) -> dict[str, Any] | None:
        """The first unplayed response recorded for exactly this request, marked played; None if none is."""
        for index, (m, p, b) in enumerate(self._requests):
            if b == body and m == method and p == path and not self._played[index]:
                self._played[index] = True
                return self._responses[index]
        return None


def recorded_headers(recorded: dict[str, Any]) -> list[tuple[str, str]]:
    return [(name, value) for name, values in recorded["headers"].items() for value in values]
