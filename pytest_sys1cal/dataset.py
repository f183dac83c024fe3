"""Load and validate a Sys1Cal JSONL file (parallel-primitives schema) into `Rendering` records.

Every problem is reported as a `DatasetError` naming the file, the line and the field, so the plugin
can turn it into a one-line usage error instead of a traceback.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InputError
from .names import ALLOWED, is_plain_name
from .vocabulary import SCORE_LEVELS

PARALLEL_SUFFIX = "__parallel_primitives"
# The gold distribution may carry float rounding; anything further off is a broken file.
GOLD_SUM_TOLERANCE = 1e-9

# Bundled datasets, by the name users pass to --sys1cal-dataset (the file: bundled.py).
BUNDLED = {"sys1cal-v1": "sys1cal-v1.jsonl"}


class DatasetError(InputError):
    """A dataset problem, worded for the user: where it is and how to fix it."""


@dataclass(frozen=True, slots=True)
class Rendering:
    """One rendering of a latent problem: what the model is shown, and the exact answer."""

    instance_id: str
    latent_instance_id: str
    family: str
    representation: str
    p_star: float
    proposition: str
    choice_question: str
    score_question: str
    score_levels: tuple[str, ...]
    state_json: str  # the state as compact JSON text: a third of the memory of the parsed object
    line: int

    @property
    def state(self) -> Any:
        """The state the model is shown, parsed afresh from its compact JSON text."""
        return json.loads(self.state_json)

    @property
    def short_id(self) -> str:
        """The instance id without the schema suffix: used in item ids and cassette file names."""
        return self.instance_id.removesuffix(PARALLEL_SUFFIX)


@dataclass(frozen=True)
class Dataset:
    name: str
    path: Path
    sha256: str
    renderings: tuple[Rendering, ...]

    @property
    def latent_problems(self) -> int:
        return len({r.latent_instance_id for r in self.renderings})


def resolve_path(spec: str | Path) -> tuple[str, Path]:
    """(name, path) for a bundled dataset name or a JSONL path."""
    if isinstance(spec, str) and spec in BUNDLED:
        return spec, _bundled_path(spec)
    path = Path(spec)
    if not path.is_file():
        names = ", ".join(sorted(BUNDLED))
        raise DatasetError(f"{spec}: no such dataset file (bundled datasets: {names})")
    return path.stem, path


def line_ending_hint(path: Path, expected_sha256: str) -> str:
    """'' unless the file at `path` differs from the one whose sha256 is `expected_sha256` only in its line
    endings (git's core.autocrlf rewrites them on checkout): then a clause that says so and how to undo it."""
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    crlf = b"\r\n" in data
    other = data.replace(b"\r\n", b"\n") if crlf else data.replace(b"\n", b"\r\n")
    if hashlib.sha256(other).hexdigest() != expected_sha256:
        return ""
    now, then, tool = ("CRLF", "LF", "dos2unix") if crlf else ("LF", "CRLF", "unix2dos")
    return (
        f" (the only difference is the line endings: this file has {now} line endings where the one recorded "
        f"had {then}, as git's core.autocrlf makes on checkout; convert them back with {tool} {path}, or check "
        f"the file out again after git config core.autocrlf false)"
    )


def _bundled_path(name: str) -> Path:
    from .bundled import bundled

    path = bundled(BUNDLED[name])
    if path is None:
        raise DatasetError(f"bundled dataset {name!r} is missing from this installation; reinstall pytest-sys1cal")
    return path


def load_dataset(spec: str | Path) -> Dataset:
    name, path = resolve_path(spec)
    digest = hashlib.sha256()
    renderings: list[Rendering] = []
    seen: dict[str, int] = {}
    latent_p: dict[str, tuple[float, int]] = {}
    rubrics: dict[tuple[str, ...], tuple[str, ...]] = {}  # one tuple per distinct Score rubric, shared
    offset = 0  # of the line's first byte in the file
    where = str(path)  # formatted once: every line's messages name it
    with path.open("rb") as handle:  # line by line: never the whole file in memory at once
        for number, raw in enumerate(handle, start=1):
            digest.update(raw)
            text = _decode(path, number, raw, offset).rstrip("\r\n")
            offset += len(raw)
            if not text.strip():
                continue
            rendering = _parse_line(where, number, text, rubrics)
            _check_unique(path, number, rendering, seen, latent_p)
            renderings.append(rendering)
    if not renderings:
        raise DatasetError(f"{path}: the file holds no renderings")
    renderings.sort(key=lambda r: (r.family, r.short_id))
    return Dataset(name=name, path=path, sha256=digest.hexdigest(), renderings=tuple(renderings))


def _decode(path: Path, number: int, raw: bytes, offset: int) -> str:
    """The line as text, strictly UTF-8: a byte that is not (a Latin-1 or Windows-1252 export, a truncated
    character) would reach the model as a replacement character, silently changing the question."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = raw[exc.start]
        raise DatasetError(
            f"{path}:{number}: byte 0x{byte:02x} at byte offset {exc.start} of the line (offset {offset + exc.start} "
            f"of the file) is not UTF-8 ({exc.reason}); save the file as UTF-8 (e.g. iconv -f cp1252 -t utf-8) or "
            "fix the character there"
        ) from None


def _check_unique(
    path: Path,
    number: int,
    rendering: Rendering,
    seen: dict[str, int],
    latent_p: dict[str, tuple[float, int]],
) -> None:
    if rendering.instance_id in seen:
        raise DatasetError(
            f"{path}:{number}: field 'instance_id': {rendering.instance_id!r} repeats line "
            f"{seen[rendering.instance_id]}; instance ids must be unique"
        )
    seen[rendering.instance_id] = number
    first = latent_p.setdefault(rendering.latent_instance_id, (rendering.p_star, number))
    if first[0] != rendering.p_star:
        raise DatasetError(
            f"{path}:{number}: field 'gold_distribution': p*={rendering.p_star!r} differs from "
            f"p*={first[0]!r} on line {first[1]} of the same latent problem "
            f"{rendering.latent_instance_id!r}; equivalent renderings must share p*"
        )


def _plain(where: str, key: str, value: str) -> str:
    """A field that names a cassette's folder (family) or file (instance id): a plain name, never a path."""
    if not is_plain_name(value):
        raise DatasetError(
            f"{where}: field '{key}' = {value!r}: it names a cassette's folder or file "
            f"(<cassette root>/<model>/<version>/<family>/<instance id>.json), so it must be a plain name: {ALLOWED}"
        )
    return value


_MISSING = object()
# Compact JSON, UTF-8 text as is (json.dumps with these options builds an encoder per call).
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _field(where: str, container: dict[str, Any], key: str, kind: type | tuple[type, ...], prefix: str = "") -> Any:
    """`container[key]`, of type `kind` (a bool is no number), or DatasetError naming the line and the field."""
    value = container.get(key, _MISSING)
    if type(value) is kind:  # the common case, decided at once (bool is only ever bool)
        return value
    if value is _MISSING:
        hint = " (is this the binary file? use the parallel-primitives file)" if key == "queries" else ""
        raise DatasetError(f"{where}: missing field '{prefix}{key}'{hint}")
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise DatasetError(f"{where}: field '{prefix}{key}' has the wrong type ({type(value).__name__})")
    return value


def _levels(where: str, levels: list[Any], rubrics: dict[tuple[str, ...], tuple[str, ...]]) -> tuple[str, ...]:
    """The Score rubric as one shared tuple per distinct rubric; a rubric seen before was checked then."""
    try:
        known = rubrics.get(tuple(levels))
    except TypeError:  # a level that cannot be hashed is no text either
        known = None
    if known is not None:
        return known
    if len(levels) != SCORE_LEVELS or not all(isinstance(level, str) for level in levels):
        raise DatasetError(f"{where}: field 'queries.score.levels' must list {SCORE_LEVELS} level names")
    return rubrics.setdefault(tuple(levels), tuple(levels))


def _parse_line(path: str, number: int, text: str, rubrics: dict[tuple[str, ...], tuple[str, ...]]) -> Rendering:
    where = f"{path}:{number}"
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{where}: not valid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected a JSON object per line")

    instance_id = _plain(where, "instance_id", _field(where, obj, "instance_id", str))
    latent = _field(where, obj, "latent_instance_id", str)
    if not instance_id.startswith(latent):
        raise DatasetError(
            f"{where}: field 'latent_instance_id': {latent!r} is not a prefix of instance_id {instance_id!r}"
        )
    queries = _field(where, obj, "queries", dict)
    choice = _field(where, queries, "choice", dict, "queries.")
    score = _field(where, queries, "score", dict, "queries.")
    gold = _field(where, obj, "gold_distribution", dict)
    for label in ("True", "False"):
        value = _field(where, gold, label, (int, float), "gold_distribution.")
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise DatasetError(f"{where}: field 'gold_distribution.{label}' = {value!r} is not in [0, 1]")
    if abs(gold["True"] + gold["False"] - 1.0) > GOLD_SUM_TOLERANCE:
        raise DatasetError(f"{where}: field 'gold_distribution' sums to {gold['True'] + gold['False']!r}, not 1")
    levels = _levels(where, _field(where, score, "levels", list, "queries.score."), rubrics)
    if "state" not in obj:
        raise DatasetError(f"{where}: missing field 'state'")
    return Rendering(
        instance_id=instance_id,
        latent_instance_id=latent,
        family=_plain(where, "family", _field(where, obj, "family", str)),
        representation=_field(where, obj, "representation", str),
        p_star=float(gold["True"]),
        proposition=_field(where, obj, "proposition", str),
        choice_question=_field(where, choice, "question", str, "queries.choice."),
        score_question=_field(where, score, "question", str, "queries.score."),
        score_levels=levels,
        state_json=_COMPACT.encode(obj["state"]),
        line=number,
    )
