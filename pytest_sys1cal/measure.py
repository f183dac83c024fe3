"""Measuring one rendering: the dispatch between replaying its cassette and recording it, and the one-line
error that fails its item. What the questions are and what their answers make of it is the codec's (codec.py);
replay from a cassette's bytes and the replay cache are the store's (store/replay.py); whatever needs the
network goes to the sender the measurer was handed (the recording engine: retries, pacing and the cost cap in
one place), never to a client of its own."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .codec import Codec
from .dataset import Rendering
from .errors import MeasurementError
from .models.base import WireRequest
from .results import ResultRow
from .store.cassette import AnswersChanged, CassetteMiss, Damaged
from .store.replay import CassetteReplay

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


OpenCassette = Callable[[Rendering], Any]  # a rendering's vcrpy cassette, or its item's one-line error
SenderFactory = Callable[[Codec, OpenCassette], Sender]


class Measurer:
    """What one process needs to measure renderings: the codec, the cassette folder and, when recording, a
    factory for the one sender, made when the first rendering needs it."""

    def __init__(
        self, codec: Codec, folder: CassetteFolder, *, advice: FailureAdvice, sender: SenderFactory | None = None
    ):
        self.codec = codec
        self.folder = folder
        self.advice = advice
        self._make_sender = sender
        self.sender: Sender | None = None  # made on first use
        self.replay = CassetteReplay(folder, codec)

    def use_cache(self, root: Path | None) -> None:
        """Replay through the replay cache under `root` (store/replay_cache.py); a recording uses none."""
        if not self.folder.recording:
            self.replay.use_cache(root)

    def measure(self, rendering: Rendering) -> ResultRow:
        """Every question of `rendering` for every repeat. While recording, a rendering that needs the network
        goes to the sender (which saves its cassette only once every repeat succeeded); the rest replays."""
        if self.folder.recording and self._make_sender is not None:
            sender = self.start_sender()
            if sender.handles(rendering) or self.unanswered(rendering):
                sender.submit([rendering])
                return sender.result(rendering)
        try:
            row = self.replay.row(rendering) if not self.folder.recording else None
            return row if row is not None else self._replay_matched(rendering)
        except MeasurementError as exc:
            failure = self.failure(rendering, exc)
            if failure is None:
                raise
            raise failure from None

    def ask_again(self, rendering: Rendering) -> None:
        """A rendering measured again in this run (its item rerun): a recording that failed is asked afresh,
        not answered with the failure the sender remembers."""
        if self.sender is not None:
            self.sender.forget(rendering)

    def start_sender(self) -> Sender:
        if self.sender is None:
            assert self._make_sender is not None
            self.sender = self._make_sender(self.codec, self.open)
        return self.sender

    def _replay_matched(self, rendering: Rendering) -> ResultRow:
        """Replay through vcrpy's matchers: a request no recording answers fails the item, saying why."""
        from .store.vcrpy_side import matched

        row = self.codec.answered(rendering, matched(self.folder, rendering), self.codec.requests(rendering))
        assert row is not None
        return row

    def unanswered(self, rendering: Rendering) -> list[WireRequest]:
        """The requests of `rendering` (all repeats, in order) its cassette cannot replay in this record mode:
        everything in ``all``; everything or nothing in ``once`` (an existing cassette is replay-only); the
        unplayable remainder in ``new_episodes``; nothing when replaying."""
        mode = self.folder.record_mode
        if mode == "none":
            return []
        wanted = [request for requests in self.codec.ask(rendering) for request in requests]
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
        """What went wrong replaying a rendering, as the one-line error that fails its item; None for an error
        that already is one."""
        path = self.folder.path_for(rendering)
        if isinstance(exc, CassetteMiss):
            return MeasurementError(f"{exc}; {self.advice.missing(rendering, path)}")
        if isinstance(exc, Damaged):
            return MeasurementError(self.damaged(rendering, exc.__cause__ or exc))
        if isinstance(exc, AnswersChanged):
            return MeasurementError(f"{path}: {exc}; {self.advice.damaged(rendering, path)}")
        return self.codec.failure(exc)

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
        self.replay.close()
        if self.sender is not None:
            self.sender.close()
