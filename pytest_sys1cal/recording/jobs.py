"""The recording engine's bookkeeping: a rendering's job (its cassette, its answers per repeat and request,
what is still missing), the units it is sent as (one request of one repeat), and the counts the progress
and closing lines read."""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..dataset import Rendering
from ..errors import MeasurementError
from ..models.base import AnswerError, WireRequest, WireResponse
from ..results import ResultRow
from ..store.vcrpy_side import save_cassette
from .plan import estimate_tokens

if TYPE_CHECKING:
    from vcr.cassette import Cassette

    from ..codec import Codec
    from ..measure import OpenCassette


@dataclass
class Job:
    rendering: Rendering
    future: concurrent.futures.Future[ResultRow]
    cassette: Cassette | None = None
    responses: list[list[WireResponse | None]] = field(default_factory=list)
    # Per repeat and request: the interaction to append to the cassette (None when replayed).
    interactions: list[list[Any]] = field(default_factory=list)
    samples: list[dict[str, Any] | None] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)  # per repeat: responses still to come
    remaining: int = 0
    unsent: int = 0

    def prepare(self, open: OpenCassette, codec: Codec) -> list[Unit]:
        """The job's cassette opened (a damaged file: the same one-line error as on replay) and its requests, per
        repeat, as units to send."""
        self.cassette = open(self.rendering)
        return self.units(codec.ask(self.rendering))

    def answered(self, unit: Unit, response: WireResponse, codec: Codec) -> bool:
        """Keep a unit's answer; True once every repeat is answered. A repeat complete is parsed now, not at the
        end: MeasurementError (the codec's words) for a malformed answer."""
        self.responses[unit.repeat][unit.index] = response
        self.missing[unit.repeat] -= 1
        self.remaining -= 1
        if self.missing[unit.repeat] == 0:
            responses = [r for r in self.responses[unit.repeat] if r is not None]
            try:
                self.samples[unit.repeat] = codec.sample(responses)
            except AnswerError as exc:
                raise MeasurementError(codec.malformed(exc), fatal=exc.fatal) from None
        return self.remaining == 0

    def units(self, repeats: list[list[WireRequest]]) -> list[Unit]:
        """The job's requests (per repeat, in order) as units to send; its bookkeeping set up for them."""
        self.responses = [[None] * len(requests) for requests in repeats]
        self.interactions = [[None] * len(requests) for requests in repeats]
        self.samples = [None] * len(repeats)
        self.missing = [len(requests) for requests in repeats]
        self.remaining = self.unsent = sum(self.missing)
        return [
            Unit(self, repeat, index, request, estimate_tokens(request))
            for repeat, requests in enumerate(repeats)
            for index, request in enumerate(requests)
        ]

    def finish(self, codec: Codec) -> ResultRow:
        """Every repeat answered and parsed: the cassette saved, and the rendering's row (the model the server
        reported with it). MeasurementError (fatal) when the cassette cannot be saved."""
        assert self.cassette is not None
        server_model = codec.reported([[r for r in responses if r is not None] for responses in self.responses])
        try:
            recorded = self.save()
        except OSError as exc:
            why = f"[Errno {exc.errno}] {exc.strerror}" if exc.strerror else str(exc)  # the path once, not twice
            raise MeasurementError(f"cannot save {self.cassette.path}: {why}", fatal=True) from None
        samples = [sample for sample in self.samples if sample is not None]
        return ResultRow.measured(self.rendering, samples, server_model=server_model, recorded=recorded)

    def save(self) -> bool:
        """Every repeat answered: append the new interactions in repeat order (replay serves repeats in cassette
        order, so the recording run and a later replay report the same samples in the same order) and save
        the cassette atomically. Whether anything new was recorded; OSError when it cannot be saved."""
        assert self.cassette is not None
        for repeat in self.interactions:
            for kept in repeat:
                if kept is not None:
                    self.cassette.append(*kept)
        recorded = bool(self.cassette.dirty)
        save_cassette(self.cassette)
        return recorded


@dataclass
class Unit:
    job: Job
    repeat: int
    index: int
    request: WireRequest
    tokens: int


@dataclass
class Stats:
    sent_ok: int = 0  # requests answered with 2xx (replayed ones not counted)
    retries: int = 0
    jobs: int = 0
    settled: int = 0
    failed: int = 0
    first_send: float | None = None
    last_answer: float | None = None
