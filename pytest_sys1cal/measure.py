"""Measuring one rendering: ask (or replay) its questions for every repeat and turn the answers into its
`ResultRow`. Replay reads the cassette; whatever needs the network goes to the sender the measurer was
handed (the recording engine: retries, pacing and the cost cap in one place), never to a client of its own."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from .dataset import Rendering
from .errors import MeasurementError
from .models.base import AnswerError, ModelAdapter, ServerError, WireRequest, WireResponse
from .results import ResultRow
from .store import answers, replay_index
from .store.cassette import CassetteMiss, Recorded, cassette_name, read_bytes, recorded_headers

if TYPE_CHECKING:
    from .store.folder import CassetteFolder


class FailureAdvice(Protocol):
    """What a failed item says to do: the part of session/advice.py's Advice that measuring needs (replay.py
    has its own for a version replayed outside a run)."""

    def missing(self, rendering: Rendering, path: Path) -> str: ...

    def damaged(self, rendering: Rendering, path: Path) -> str: ...


class Sender(Protocol):
    """What sends a rendering's requests for real (recording/engine.py's Engine): it is given renderings and
    hands back their rows, replaying what their cassettes already hold and recording the rest."""

    def submit(self, renderings: Sequence[Rendering]) -> None: ...

    def handles(self, rendering: Rendering) -> bool: ...

    def result(self, rendering: Rendering) -> ResultRow: ...

    def forget(self, rendering: Rendering) -> None: ...

    def close(self) -> None: ...


Answer = Callable[[WireRequest], WireResponse | None]  # a request's recorded response; None: none recorded
Requests = Sequence[WireRequest]  # one repeat's
Row = ResultRow | None  # None: some request has no recorded answer


class Measurer:
    """What one process needs to measure renderings: the adapter, the cassette folder, the questions and
    repeats, and (when recording) a factory for the one sender, made when the first rendering needs it."""

    def __init__(
        self,
        adapter: ModelAdapter,
        folder: CassetteFolder,
        question_ids: tuple[str, ...],
        repeats: int,
        *,
        advice: FailureAdvice,
        sender: Callable[[Measurer], Sender] | None = None,
    ):
        self.adapter = adapter
        self.folder = folder
        self.question_ids = question_ids
        self.repeats = repeats
        self.advice = advice
        self._make_sender = sender
        self.sender: Sender | None = None  # made on first use

    @property
    def recording(self) -> bool:
        return self.folder.recording

    def measure(self, rendering: Rendering) -> ResultRow:
        """Every question of `rendering` for every repeat. While recording, a rendering that needs the network
        goes to the sender (which saves its cassette only once every repeat succeeded); the rest replays."""
        if self.recording and self._make_sender is not None:
            sender = self.start_sender()
            if sender.handles(rendering) or self.unanswered(rendering):
                sender.submit([rendering])
                return sender.result(rendering)
        row = self._replay_exact(rendering) if not self.recording else None
        return row if row is not None else self._replay_matched(rendering)

    def ask_again(self, rendering: Rendering) -> None:
        """A rendering measured again in this run (its item rerun): a recording that failed is asked afresh,
        not answered with the failure the sender remembers."""
        if self.sender is not None:
            self.sender.forget(rendering)

    def start_sender(self) -> Sender:
        if self.sender is None:
            assert self._make_sender is not None
            self.sender = self._make_sender(self)
        return self.sender

    # ------------------------------------------------------------------ the repeats of one rendering

    def ask(self, rendering: Rendering) -> list[list[WireRequest]]:
        """The requests of every repeat, in order (the same requests each repeat)."""
        return [self.adapter.requests(rendering, self.question_ids)] * self.repeats

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

    def _answered(self, rendering: Rendering, answer: Answer, requests: Requests) -> Row:
        """The row, each of one repeat's `requests` answered by `answer` in every repeat; None as soon as one
        request has no answer."""
        answers = []
        try:
            for repeat in [requests] * self.repeats:
                responses = [answer(request) for request in repeat]
                if any(response is None for response in responses):
                    return None
                answers.append(responses)
            return self.row(rendering, answers)  # type: ignore[arg-type]
        except MeasurementError as exc:
            failure = self.failure(rendering, exc)
            if failure is None:
                raise
            raise failure from None

    # ------------------------------------------------------------------ replay

    def _replay_exact(self, rendering: Rendering) -> ResultRow | None:
        """Replay requests byte-equal to recorded ones, without vcrpy's objects; None when the cassette is
        missing or some request is not byte-equal to a recording, so that vcrpy's matchers decide (and say
        why a request has no recording). The replay index answers where it may (store/replay_index.py)."""
        path = self.folder.file_for(rendering)
        try:
            data = read_bytes(path)
        except FileNotFoundError:
            return None
        requests, index = self.adapter.requests(rendering, self.question_ids), self.index
        row = index.row(rendering, data, requests, self.folder.manifest) if index is not None else None
        return row if row is not None else self.replay_bytes(rendering, path, data, requests)[0]

    def replay_bytes(self, rendering: Rendering, path: str, data: bytes, requests: Requests) -> tuple[Row, Recorded]:
        """_replay_exact from the cassette's bytes (`data`), without the index: the row, and the cassette read."""
        try:
            recorded = Recorded(json.loads(data))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise MeasurementError(self.damaged(rendering, exc)) from None

        def answer(request: WireRequest) -> WireResponse | None:
            found = recorded.take(request.method, urlsplit(request.url).path, request.content().decode("utf-8"))
            return None if found is None else _wire(found)

        row = self._answered(rendering, answer, requests)  # a cassette without the shape of one fails as damaged
        # Before its row counts (or vcrpy's matchers replay the same file): its answers are the ones recorded.
        changed = answers.changed(self.folder.manifest, cassette_name(rendering), recorded)
        if changed is not None:
            raise MeasurementError(f"{path}: {changed}; {self.advice.damaged(rendering, Path(path))}")
        return row, recorded

    @functools.cached_property
    def index(self) -> replay_index.ReplayIndex | None:
        """The folder's replay index, read on the first replay of this process (None: none this run may use)."""
        stamp = replay_index.stamp(self.adapter, self.question_ids, self.repeats)
        return None if stamp is None else replay_index.ReplayIndex.load(self.folder.path, self.folder.manifest, stamp)

    def _replay_matched(self, rendering: Rendering) -> ResultRow:
        """Replay through vcrpy's matchers: a request no recording answers fails the item, saying why."""
        from vcr.request import Request as VcrRequest

        from .store.vcrpy_side import replay

        cassette = self.open(rendering)

        def answer(request: WireRequest) -> WireResponse:
            vcr_request = VcrRequest(request.method, request.url, request.content(), dict(request.headers))
            found = replay(cassette, vcr_request)
            assert found is not None  # a replay may not record: a request no recording answers raises CassetteMiss
            return _wire(found)

        row = self._answered(rendering, answer, self.adapter.requests(rendering, self.question_ids))
        assert row is not None
        return row

    def unanswered(self, rendering: Rendering) -> list[WireRequest]:
        """The requests of `rendering` (all repeats, in order) its cassette cannot replay in this record mode:
        everything in ``all``; everything or nothing in ``once`` (an existing cassette is replay-only); the
        unplayable remainder in ``new_episodes``; nothing when replaying."""
        mode = self.folder.record_mode
        if mode == "none":
            return []
        wanted = [request for requests in self.ask(rendering) for request in requests]
        if mode == "all":
            return wanted
        exists = self.folder.path_for(rendering).is_file()
        if mode == "once" or not exists:
            return [] if exists else wanted
        from .store.vcrpy_side import playable

        cassette = self.open(rendering)  # new_episodes: play what is there, count the rest
        return [request for request in wanted if not playable(cassette, request)]

    # ------------------------------------------------------------------ failures

    def failure(self, rendering: Rendering, exc: MeasurementError) -> MeasurementError | None:
        """What went wrong measuring a rendering, as the one-line error that fails its item; None for an error
        that already is one."""
        if isinstance(exc, CassetteMiss):
            return MeasurementError(f"{exc}; {self.advice.missing(rendering, self.folder.path_for(rendering))}")
        if isinstance(exc, _Damaged):
            return MeasurementError(self.damaged(rendering, exc.__cause__ or exc))
        if isinstance(exc, ServerError):
            return MeasurementError(f"server error: {exc}", fatal=exc.fatal)
        if isinstance(exc, AnswerError):
            return MeasurementError(f"malformed answer: {exc}")
        return None

    def open(self, rendering: Rendering) -> Any:
        """The rendering's vcrpy cassette; a file that cannot be read as one fails the item in one line."""
        try:
            from .store.vcrpy_side import load_cassette

            return load_cassette(self.folder, rendering)
        except Exception as exc:  # noqa: BLE001 - vcrpy raises whatever its parser met; all mean "damaged"
            raise MeasurementError(self.damaged(rendering, exc)) from None

    def damaged(self, rendering: Rendering, exc: BaseException) -> str:
        path = self.folder.path_for(rendering)
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return f"{path}: not a readable cassette ({what[:200]}); {self.advice.damaged(rendering, path)}"

    def close(self) -> None:
        if self.sender is not None:
            self.sender.close()


def index_lines(measurer: Measurer, renderings: Sequence[Rendering]) -> list[str]:
    """The replay index's lines for the folder as it is: each cassette of `renderings` replayed the ordinary
    way; one that fails, or needs vcrpy's matchers, has none."""
    lines = []
    for rendering in renderings:
        path = measurer.folder.file_for(rendering)
        try:
            data = read_bytes(path)
            requests = measurer.adapter.requests(rendering, measurer.question_ids)
            row, recorded = measurer.replay_bytes(rendering, path, data, requests)
        except Exception:  # noqa: BLE001 - no line: its replay reads the cassette, and fails its item, as without one
            continue
        if row is not None:
            digest = answers.answers_digest(recorded.responses)
            lines.append(replay_index.entry_line(cassette_name(rendering), data, requests, digest, row))
    return lines


def _wire(recorded: dict[str, Any]) -> WireResponse:
    """A recorded response (vcrpy's dict) as the adapters read it."""
    try:
        body = recorded["body"]["string"]
        content = body.encode("utf-8") if isinstance(body, str) else body
        return WireResponse(recorded["status"]["code"], dict(recorded_headers(recorded)), content)
    except (KeyError, TypeError, AttributeError) as exc:
        raise _Damaged() from exc


class _Damaged(MeasurementError):
    """A recorded interaction without the shape of one (raised from the error that found it)."""

    def __init__(self) -> None:
        super().__init__("a recorded interaction without the shape of one")
