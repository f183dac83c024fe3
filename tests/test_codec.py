"""The rendering codec (codec.py): a rendering's requests for every repeat, the row their answers give, the
failure texts of an answer, and the stamp that keys the replay cache (what a row depends on besides a
cassette's bytes and the requests)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_sys1cal.codec import Codec
from pytest_sys1cal.dataset import load_dataset
from pytest_sys1cal.errors import MeasurementError
from pytest_sys1cal.models.base import AnswerError, ModelAdapter, ServerError, WireRequest, WireResponse
from pytest_sys1cal.models.systemone import SystemOneAdapter

QUESTIONS = ("noul", "choice", "score")


def answer(noul: float = 0.3) -> WireResponse:
    body = {
        "model": "served-1",
        "answers": {
            "noul": {"type": "noul", "noul": noul},
            "choice": {"type": "choice", "probabilities": {"False": 0.4, "True": 0.6}},
            "score": {"type": "score", "probabilities": {str(j): 0.1 for j in range(10)}},
        },
    }
    return WireResponse(200, {}, json.dumps(body).encode())


def test_every_repeat_asks_the_same_requests_and_the_answers_make_the_row() -> None:
    rendering = load_dataset("sys1cal-v1").renderings[0]
    codec = Codec(SystemOneAdapter("v1", "http://127.0.0.1:9", {}), QUESTIONS, 2)
    asked = codec.ask(rendering)
    assert len(asked) == 2 and asked[0] == asked[1] == codec.requests(rendering)
    said = iter([answer(0.3), answer(0.5)])
    row = codec.answered(rendering, lambda request: next(said), codec.requests(rendering))
    assert row is not None and row.server_model == "served-1"
    assert [sample["noul"] for sample in row.samples] == [0.3, 0.5]
    assert codec.answered(rendering, lambda request: None, codec.requests(rendering)) is None  # none recorded


def test_the_failure_texts_of_an_answer() -> None:
    codec = Codec(SystemOneAdapter("v1", "http://127.0.0.1:9", {}), QUESTIONS, 1)
    malformed = codec.failure(AnswerError("noul is 5.0"))
    assert malformed is not None and str(malformed) == "malformed answer: noul is 5.0" and not malformed.fatal
    refused = codec.failure(ServerError(401, "no key"))
    assert refused is not None and str(refused) == "server error: HTTP 401: no key" and refused.fatal
    assert codec.failure(MeasurementError("anything else")) is None
    with pytest.raises(ServerError, match="HTTP 500"):
        codec.sample([WireResponse(500, {}, b'{"detail": "down"}')])


def test_a_subclass_does_not_inherit_the_promise_and_the_stamp_follows_the_code() -> None:
    """An adapter derived from a built-in one may override `parse` with anything (tests/test_secrets.py's buggy
    adapter reads the environment): no cache unless its own class says so. The stamp carries a digest of the
    code that turns a cassette into a row, so a cache filled before a change to it is not used."""

    class Derived(SystemOneAdapter):
        name = "derived"

    class Declared(SystemOneAdapter):
        name = "declared"
        replay_cache = True

    assert Codec(Derived(None, None, {}), ("noul",), 1).stamp is None
    declared = Codec(Declared(None, None, {}), ("noul",), 1)
    built_in = Codec(SystemOneAdapter(None, None, {}), ("noul",), 1)
    assert declared.stamp is not None and built_in.stamp is not None
    assert declared.stamp["adapter"].endswith("Declared")
    assert declared.stamp["code"] != built_in.stamp["code"]  # its own module (this file) is code its rows depend on
    assert declared.stamp_key != built_in.stamp_key
    assert Codec(SystemOneAdapter(None, None, {}), ("noul",), 2).stamp_key != built_in.stamp_key  # repeats too
    assert len(built_in.stamp["code"]) == 16 and {"plugin", "settings", "questions", "repeats"} <= built_in.stamp.keys()


def test_an_adapter_that_does_not_say_its_answers_are_pure_gets_no_cache() -> None:
    class Own(ModelAdapter):  # a third-party adapter: replay_cache stays off
        name, default_version, default_base_url = "own", "v1", "http://127.0.0.1:9"

        def requests(self, rendering: Any, question_ids: Any) -> list[WireRequest]:
            raise NotImplementedError

        def parse(self, question_ids: Any, responses: Any) -> dict[str, Any]:
            raise NotImplementedError

    codec = Codec(Own(None, None, {}), ("noul",), 1)
    assert codec.stamp is None and codec.stamp_key is None
