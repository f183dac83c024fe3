"""The replay index (`replay-index.tsv` in a version folder): what replaying each cassette gave, so that a
replay of a large folder hashes each cassette's bytes instead of parsing and checking them (docs/cassettes.md,
"The replay index").

Derived, never a source of truth. An entry is a memo of the replay of one cassette: the row it gave, keyed by
everything that row depends on. It is used only when the sha256 of the cassette's bytes on disk equals the
one it was derived from, the run's requests hash to the ones it was derived for, its answers digest equals the
manifest's, and the stamp (the plugin version, the adapter and its settings, the questions and repeats) is
this run's. The manifest keeps the sha256 of the index file (its `replay_index`), so the index cannot be edited
unseen any more than the answers' digests can. Anything else replays the cassette itself, exactly as without an index: an edited answer is still
refused and an edited request still stops matching. A recording writes the index at its end by replaying the
folder's cassettes through that ordinary path (measure.py)."""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import sys
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .. import __version__
from ..files import write_atomic
from ..results import ResultRow
from ..vocabulary import REPLAY_INDEX_SCHEMA
from .answers import ANSWERS
from .cassette import cassette_name
from .manifest import MANIFEST

if TYPE_CHECKING:
    from ..dataset import Rendering
    from ..models.base import ModelAdapter, WireRequest

INDEX = "replay-index.tsv"
MANIFEST_FIELD = "replay_index"  # the manifest's field: sha256 of the index file
HEADER = "# sys1cal replay index "  # then the stamp as JSON: the first line


def requests_key(requests: Sequence[WireRequest]) -> str:
    """sha256 of one repeat's requests as replay compares them: method, path and body bytes, length-prefixed."""
    digest = hashlib.sha256()
    for request in requests:
        body = request.content()
        digest.update(f"{request.method} {urlsplit(request.url).path} {len(body)}\n".encode())
        digest.update(body)
    return digest.hexdigest()


def file_key(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ReplayIndex:
    """The entries of one folder's index whose stamp is this run's, each still its line's text: parsed only when
    its cassette is replayed (a few microseconds), and dropped then, so the index holds no parsed copy of the
    answers for the whole run."""

    def __init__(self, entries: dict[str, str]):
        self._entries = entries

    @classmethod
    def load(cls, folder: Path, manifest: Mapping[str, Any] | None, stamp: Mapping[str, Any]) -> ReplayIndex | None:
        """The folder's index if it is the one its manifest records and was written for `stamp`; else None (the
        replay then reads every cassette, as without one; `notice` says why)."""
        data, _ = _examine(folder, manifest, stamp)
        if data is None:
            return None
        try:
            lines = data.decode("utf-8").split("\n")
        except UnicodeDecodeError:
            return None
        entries = {}
        for line in lines[1:]:
            name, tab, rest = line.partition("\t")
            if tab:
                entries[name] = rest
        return cls(entries)

    def row(
        self, rendering: Rendering, data: bytes, requests: Sequence[WireRequest], manifest: Mapping[str, Any] | None
    ) -> ResultRow | None:
        """The row replaying the rendering's cassette gives, if its entry was derived from exactly these bytes
        (`data`), for these requests and, where the manifest keeps digests of answers, the answers whose digest it
        keeps; else None (the entry is dropped either way: a rendering is replayed once)."""
        name = cassette_name(rendering)
        entry = self._entries.pop(name, None)
        fields = entry.split("\t") if entry is not None else ()
        if len(fields) != 6:
            return None
        file_sha, requests_sha, answers_sha, server_model, layout, samples = fields
        digests = (manifest or {}).get(ANSWERS)
        if digests is not None and digests.get(name) != answers_sha:
            return None
        if requests_sha != requests_key(requests) or file_sha != file_key(data):
            return None
        try:
            return _row(rendering, json.loads(server_model), layout, samples)
        except ValueError:
            return None


def stamp(adapter: ModelAdapter, question_ids: Sequence[str], repeats: int) -> dict[str, Any] | None:
    """What every entry depends on besides a cassette's bytes and the requests; None for an adapter whose class
    does not itself say that its answers depend on nothing else (ModelAdapter.replay_index: a subclass that
    overrides `parse` does not inherit the promise), or whose code cannot be read."""
    kind = type(adapter)
    code = _code(kind) if vars(kind).get("replay_index") is True else None
    if code is None:
        return None
    return {
        "schema": REPLAY_INDEX_SCHEMA,
        "plugin": __version__,
        "code": code,
        "adapter": f"{kind.__module__}.{kind.__qualname__}",
        "model_version": adapter.version,
        "settings": adapter.settings(),
        "questions": list(question_ids),
        "repeats": repeats,
    }


# The modules that turn a cassette's bytes into a row (besides the adapter's own): any change to them, released
# or not, makes every index written before it unusable, rather than trusted.
REPLAY_CODE = ("pytest_sys1cal.measure", "pytest_sys1cal.results", "pytest_sys1cal.models.base", __name__)


@functools.lru_cache(maxsize=8)
def _code(kind: type) -> str | None:
    """sha256 (first 16 hex digits) of the source of REPLAY_CODE and of the adapter's module and classes; None
    when a source file cannot be read (then no index is written or used)."""
    digest = hashlib.sha256()
    modules = {*REPLAY_CODE, *(base.__module__ for base in kind.__mro__ if base is not object)}
    for name in sorted(modules):
        module = sys.modules.get(name)
        try:
            source = inspect.getsourcefile(module) if module is not None else None
            if source is None:
                return None
            digest.update(name.encode() + b"\0" + Path(source).read_bytes())
        except (TypeError, OSError):
            return None
    return digest.hexdigest()[:16]


def read_stamp(line: str) -> dict[str, Any] | None:
    if not line.startswith(HEADER):
        return None
    try:
        stamp = json.loads(line[len(HEADER) :])
    except ValueError:
        return None
    return stamp if isinstance(stamp, dict) else None


def notice(folder: Path, manifest: Mapping[str, Any] | None, stamp: Mapping[str, Any]) -> str | None:
    """The header's line when the folder has an index this run cannot use (None when it has none, or one it uses)."""
    _, why = _examine(folder, manifest, stamp)
    if why is None:
        return None
    return (
        f"sys1cal: {folder / INDEX} is not used ({why}), so each cassette is read in full (correct, slower); "
        "--sys1cal-record-mode=once on the complete folder sends nothing and rewrites it"
    )


def _examine(
    folder: Path, manifest: Mapping[str, Any] | None, stamp: Mapping[str, Any]
) -> tuple[bytes | None, str | None]:
    """The index file's bytes when a replay may use it; else None and why not (None too when there is none and
    the manifest records none: nothing to say)."""
    expected = (manifest or {}).get(MANIFEST_FIELD)
    try:
        data = (folder / INDEX).read_bytes()
    except FileNotFoundError:
        return None, (None if expected is None else f"it is missing, though {MANIFEST} records one")
    except OSError as exc:
        return None, f"it cannot be read ({type(exc).__name__})"
    found = read_stamp(data.split(b"\n", 1)[0].decode("utf-8", "replace"))
    if found is None:
        return None, "it is not a replay index this plugin wrote"
    if expected is None:
        return None, f"{MANIFEST} records no digest of it"
    if file_key(data) != expected:
        return None, f"it is not the one {MANIFEST} records (edited since it was written?)"
    if found != dict(stamp):
        differs = sorted(key for key in {*found, *stamp} if found.get(key) != stamp.get(key))
        return None, f"it was written for another {', '.join(differs)}"
    return data, None


def entry_line(name: str, data: bytes, requests: Sequence[WireRequest], answers: str, row: ResultRow) -> str:
    """The index line of cassette `name` (its bytes `data`, answering `requests`) that replays as `row`."""
    if row.values is not None:
        layout, samples = ",".join(f"{key}:{count}" for key, count in row.layout), row.values.hex()
    else:
        layout, samples = "-", row.samples_json or "[]"
    fields = (name, file_key(data), requests_key(requests), answers, json.dumps(row.server_model), layout, samples)
    return "\t".join(fields)


def write(folder: Path, stamp: Mapping[str, Any], lines: Iterable[str], *, redact: Callable[[str], str]) -> str:
    """Write the index (its lines sorted, so a re-recording changes only the lines of what it re-recorded) unless
    the file already says exactly that; its sha256, for the manifest. Through the run's redactor like the
    manifest (a no-op: every line is derived from cassettes already scrubbed)."""
    text = redact("\n".join([HEADER + json.dumps(dict(stamp), sort_keys=True), *sorted(lines)]) + "\n")
    path = folder / INDEX
    try:
        unchanged = path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        unchanged = False
    if not unchanged:
        write_atomic(path, text)
    return file_key(text.encode("utf-8"))


def _row(rendering: Rendering, server_model: Any, layout: str, samples: str) -> ResultRow:
    if layout == "-":
        return ResultRow(rendering.instance_id, samples, server_model)
    shape = tuple((key, int(count)) for key, _, count in (part.rpartition(":") for part in layout.split(",")))
    values = bytes.fromhex(samples)
    if not values or len(values) % (array("d").itemsize * sum(max(count, 1) for _, count in shape)):
        raise ValueError("not whole samples of the layout")
    return ResultRow.packed(rendering, shape, values, server_model)
