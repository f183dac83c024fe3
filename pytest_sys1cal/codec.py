"""The rendering codec: what a rendering's questions are on the wire for one adapter, asked `repeats` times,
and what the answers of every repeat make of it (its `ResultRow`, or the one-line failure of an answer). It
knows nothing of where the answers come from: replaying a cassette (store/replay.py, vcrpy's matchers), or
the recording engine (recording/engine.py) all hand it responses. The `Measurer` (measure.py) decides which."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .dataset import Rendering
from .errors import MeasurementError
from .models.base import AnswerError, ModelAdapter, ServerError, WireRequest, WireResponse
from .results import ResultRow
from .vocabulary import REPLAY_CACHE_SCHEMA

Answer = Callable[[WireRequest], WireResponse | None]  # a request's recorded response; None: none recorded
Requests = Sequence[WireRequest]  # one repeat's
Row = ResultRow | None  # None: some request has no recorded answer


class Codec:
    """One adapter's questions for a rendering, asked `repeats` times, and the row their answers give."""

    def __init__(self, adapter: ModelAdapter, question_ids: tuple[str, ...], repeats: int):
        self.adapter = adapter
        self.question_ids = question_ids
        self.repeats = repeats

    def requests(self, rendering: Rendering) -> list[WireRequest]:
        """One repeat's requests (every repeat asks the same)."""
        return self.adapter.requests(rendering, self.question_ids)

    def ask(self, rendering: Rendering) -> list[list[WireRequest]]:
        """The requests of every repeat, in order."""
        return [self.requests(rendering)] * self.repeats

    def sample(self, responses: Sequence[WireResponse]) -> dict[str, Any]:
        """One repeat's sample from its answered requests (a non-2xx answer raises the server's error)."""
        for response in responses:
            if not response.ok:
                raise self.adapter.error(response)
        return self.adapter.parse(self.question_ids, responses)

    def row(
        self, rendering: Rendering, answers: Sequence[Sequence[WireResponse]], *, recorded: bool = False
    ) -> ResultRow:
        """The rendering's row from the answers of every repeat (the model the server reported: the last said)."""
        samples = [self.sample(responses) for responses in answers]
        return ResultRow.measured(rendering, samples, server_model=self.reported(answers), recorded=recorded)

    def reported(self, answers: Sequence[Sequence[WireResponse]]) -> str | None:
        """The model id the server reported, the last one said over the repeats."""
        server_model = None
        for responses in answers:
            server_model = self.adapter.reported_model(responses) or server_model
        return server_model

    def answered(self, rendering: Rendering, answer: Answer, requests: Requests) -> Row:
        """The row, each of one repeat's `requests` answered by `answer` in every repeat; None as soon as one
        request has no answer. Raises what `answer` raises, and the answers' own errors (`failure` words them)."""
        answers = []
        for repeat in [requests] * self.repeats:
            responses = [answer(request) for request in repeat]
            if any(response is None for response in responses):
                return None
            answers.append(responses)
        return self.row(rendering, answers)  # type: ignore[arg-type]

    @staticmethod
    def malformed(exc: AnswerError) -> str:
        """The failure text of an answer that is not a usable probability."""
        return f"malformed answer: {exc}"

    def failure(self, exc: MeasurementError) -> MeasurementError | None:
        """The one-line error of a replayed answer that failed (a server's error recorded, a malformed answer);
        None for any other error."""
        if isinstance(exc, ServerError):
            return MeasurementError(f"server error: {exc}", fatal=exc.fatal)
        if isinstance(exc, AnswerError):
            return MeasurementError(self.malformed(exc))
        return None

    @functools.cached_property
    def stamp(self) -> dict[str, Any] | None:
        """What a row depends on besides a cassette's bytes and the requests (the replay cache's key holds its
        digest); None for an adapter whose class does not itself say that its answers depend on nothing else
        (ModelAdapter.replay_cache: a subclass that overrides `parse` does not inherit the promise), or whose
        code cannot be read."""
        kind = type(self.adapter)
        code = _code(kind) if vars(kind).get("replay_cache") is True else None
        if code is None:
            return None
        return {
            "schema": REPLAY_CACHE_SCHEMA,
            "plugin": __version__,
            "code": code,
            "adapter": f"{kind.__module__}.{kind.__qualname__}",
            "model_version": self.adapter.version,
            "settings": self.adapter.settings(),
            "questions": list(self.question_ids),
            "repeats": self.repeats,
        }

    @functools.cached_property
    def stamp_key(self) -> str | None:
        """sha256 of the stamp (None: no stamp, so no cache)."""
        stamp = self.stamp
        if stamp is None:
            return None
        return hashlib.sha256(json.dumps(stamp, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@functools.lru_cache(maxsize=8)
def _code(kind: type) -> str | None:
    """sha256 (first 16 hex digits) of the plugin's source, every module of the package (a helper that parsing
    reaches through an import cannot be left out by mistake), and of the modules of the adapter's classes (a
    third party's); None when a source file cannot be read (then nothing is cached). Read once per process,
    about 150 small files."""
    digest = hashlib.sha256()
    package = Path(__file__).parent
    try:
        for path in sorted(package.rglob("*.py")):
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
        for name in sorted({base.__module__ for base in kind.__mro__ if base is not object}):
            source = _source(name)
            if source is None:
                return None
            digest.update(name.encode() + b"\0" + Path(source).read_bytes())
    except (TypeError, ValueError, ImportError, OSError):
        return None
    return digest.hexdigest()[:16]


def _source(name: str) -> str | None:
    """The source file of module `name`: a loaded module's own, else where importing it would read it from
    (found, not run)."""
    module = sys.modules.get(name)
    if module is not None:
        return inspect.getsourcefile(module)
    spec = importlib.util.find_spec(name)
    return spec.origin if spec is not None and spec.origin and spec.origin.endswith(".py") else None
