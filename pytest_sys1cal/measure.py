"""Measuring one rendering: ask (or replay) its questions for every repeat, and the result row that
carries the answers to the analysis (on the item's test report, so it reaches the xdist controller)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from .cassettes import CassetteMiss, CassetteStore, Recorded, recorded_headers
from .dataset import Dataset, Rendering
from .errors import MeasurementError
from .models.base import AnswerError, ModelAdapter, ServerError, WireRequest, WireResponse

if TYPE_CHECKING:
    from .advice import Advice
    from .recording.transport import LiveClient

TIMEOUT_SECONDS = 60.0


def result_row(
    rendering: Rendering,
    samples: list[dict[str, Any]],
    *,
    server_model: str | None = None,
    recorded: bool = False,
    error: str | None = None,
) -> dict[str, Any]:
    """The one shape of a measured (or failed) rendering, as the analysis reads it."""
    row = {
        "instance_id": rendering.instance_id,
        "latent_instance_id": rendering.latent_instance_id,
        "family": rendering.family,
        "representation": rendering.representation,
        "p_star": rendering.p_star,
        "samples": samples,
    }
    if error is not None:
        return {**row, "error": error}
    return {**row, "server_model": server_model, "recorded": recorded}


def compact_row(row: dict[str, Any]) -> dict[str, Any]:
    """A result row as it travels and waits for the analysis: the rendering's id, its samples as one JSON
    text (floats round-trip exactly), and what recording and failure say; `expand_rows` restores it."""
    out = {key: row[key] for key in ("error", "server_model", "recorded") if key in row}
    return {"instance_id": row["instance_id"], "samples_json": json.dumps(row["samples"]), **out}


def expand_rows(rows: list[dict[str, Any]], dataset: Dataset) -> list[dict[str, Any]]:
    """The analysis's rows from compact ones: the identity from the dataset, the samples parsed."""
    by_id = {rendering.instance_id: rendering for rendering in dataset.renderings}
    out = []
    for row in rows:
        rendering = by_id[row["instance_id"]]
        extra = {key: row[key] for key in ("server_model", "recorded") if key in row}
        out.append({**result_row(rendering, json.loads(row["samples_json"]), error=row.get("error")), **extra})
    return out


class Recorder(Protocol):
    """The concurrent recording engine, as measuring sees it (recording/engine.py)."""

    def handles(self, rendering: Rendering) -> bool: ...

    def result(self, rendering: Rendering) -> dict[str, Any]: ...

    def tick(self) -> None: ...

    def close(self) -> None: ...


class Measurer:
    """What one process needs to measure renderings: the adapter, the cassettes, the questions and
    repeats. Replays straight from the cassette; sends through an HTTP client only when recording."""

    def __init__(
        self,
        adapter: ModelAdapter,
        store: CassetteStore,
        question_ids: tuple[str, ...],
        repeats: int,
        *,
        timeout: float | None = None,
        advice: Advice,
    ):
        self.adapter = adapter
        self.store = store
        self.question_ids = question_ids
        self.repeats = repeats
        self.timeout = timeout or TIMEOUT_SECONDS
        self.advice = advice
        # The concurrent recording engine when this process records ahead of the items; None on replay.
        self.recorder: Recorder | None = None
        self._live: LiveClient | None = None  # the HTTP client, made when the first request goes out

    @property
    def recording(self) -> bool:
        return self.store.record_mode != "none"

    def measure(self, rendering: Rendering) -> dict[str, Any]:
        """Every question of `rendering` for every repeat; the cassette is saved only when all of them
        succeeded, so a failure never leaves a partial recording behind. A rendering being recorded
        concurrently is waited for instead."""
        if self.recorder is not None and self.recorder.handles(rendering):
            return self.recorder.result(rendering)
        if not self.recording:
            row = self._replay_exact(rendering)
            if row is not None:
                return row
        cassette = self.open(rendering)
        samples: list[dict[str, Any]] = []
        server_model = None
        with self._failures(rendering):
            for _ in range(self.repeats):
                requests = self.adapter.requests(rendering, self.question_ids)
                responses = [self._send(cassette, request) for request in requests]
                samples.append(self.adapter.parse(self.question_ids, responses))
                server_model = self.adapter.reported_model(responses) or server_model
        recorded = bool(cassette.dirty)
        from .vcr_store import save_cassette

        save_cassette(cassette)
        return result_row(rendering, samples, server_model=server_model, recorded=recorded)

    def _replay_exact(self, rendering: Rendering) -> dict[str, Any] | None:
        """Replay requests byte-equal to recorded ones, without vcrpy's objects; None when the cassette is
        missing or some request is not byte-equal to a recording, so that vcrpy's matchers decide (and say
        why a request has no recording)."""
        try:
            recorded = Recorded.read(self.store.file_for(rendering))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise MeasurementError(self.damaged(rendering, exc)) from None
        requests = self.adapter.requests(rendering, self.question_ids)  # the same requests every repeat
        keys = [(r.method, urlsplit(r.url).path, r.content().decode("utf-8")) for r in requests]
        samples: list[dict[str, Any]] = []
        server_model = None
        with self._failures(rendering):
            for _ in range(self.repeats):
                answers = [recorded.take(*key) for key in keys]
                if any(answer is None for answer in answers):
                    return None
                responses = [_checked(self.adapter, _wire(answer)) for answer in answers]  # type: ignore[arg-type]
                samples.append(self.adapter.parse(self.question_ids, responses))
                server_model = self.adapter.reported_model(responses) or server_model
        return result_row(rendering, samples, server_model=server_model)

    @contextlib.contextmanager
    def _failures(self, rendering: Rendering) -> Iterator[None]:
        """What can go wrong measuring a rendering, as the one-line error that fails its item."""
        try:
            yield
        except CassetteMiss as exc:
            raise MeasurementError(f"{exc}; {self.advice.missing(rendering, self.store.path_for(rendering))}") from None
        except _Damaged as exc:
            raise MeasurementError(self.damaged(rendering, exc.__cause__ or exc)) from None
        except ServerError as exc:
            raise MeasurementError(f"server error: {exc}", fatal=exc.fatal) from None
        except AnswerError as exc:
            raise MeasurementError(f"malformed answer: {exc}") from None

    def open(self, rendering: Rendering) -> Any:
        """The rendering's cassette; a file that cannot be read as one fails the item in one line."""
        try:
            from .vcr_store import load_cassette

            return load_cassette(self.store, rendering)
        except Exception as exc:  # noqa: BLE001 - vcrpy raises whatever its parser met; all mean "damaged"
            raise MeasurementError(self.damaged(rendering, exc)) from None

    def damaged(self, rendering: Rendering, exc: BaseException) -> str:
        path = self.store.path_for(rendering)
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return f"{path}: not a readable cassette ({what[:200]}); {self.advice.damaged(rendering, path)}"

    def _send(self, cassette: Any, request: WireRequest) -> WireResponse:
        """Replay from the cassette through vcrpy's matchers; go through an HTTP client, its cassette
        transport and the network only when recording."""
        from vcr.request import Request as VcrRequest

        from .vcr_store import replay

        recorded = replay(
            cassette, VcrRequest(request.method, request.url, request.content(), dict(request.headers)), self.recording
        )
        if recorded is not None:
            return _checked(self.adapter, _wire(recorded))
        if self._live is None:
            from .recording.transport import LiveClient

            self._live = LiveClient(self.adapter, self.timeout)
        return _checked(self.adapter, self._live.send(cassette, request))

    def close(self) -> None:
        if self._live is not None:
            self._live.close()


def _wire(recorded: dict[str, Any]) -> WireResponse:
    """A recorded response (vcrpy's dict) as the adapters read it."""
    try:
        body = recorded["body"]["string"]
        content = body.encode("utf-8") if isinstance(body, str) else body
        return WireResponse(recorded["status"]["code"], dict(recorded_headers(recorded)), content)
    except (KeyError, TypeError, AttributeError) as exc:
        raise _Damaged() from exc


def _checked(adapter: ModelAdapter, wire: WireResponse) -> WireResponse:
    if not 200 <= wire.status < 300:
        raise adapter.error(wire)
    return wire


class _Damaged(Exception):
    """A recorded interaction without the shape of one (raised from the error that found it)."""
