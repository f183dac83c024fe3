"""A server answer that holds one key twice is refused, naming the key (issue 36). Python's JSON reader keeps the
last of two equal keys without a word, so a second ``answers`` or ``logprobs`` decided the measurement unseen.
The bodies here are the loopback servers' own answers, re-encoded with a decoy copy of one key before the real
one, parsed by the real adapters; the recording case sends such a body over HTTP from a loopback server."""

from __future__ import annotations

import json
import math

import pytest

from pytest_sys1cal.dataset import load_dataset
from pytest_sys1cal.models.base import AnswerError, WireResponse, served_models
from pytest_sys1cal.models.semif import SemIfAdapter
from pytest_sys1cal.models.systemone import SystemOneAdapter
from pytest_sys1cal.strict_json import DuplicateKey, loads
from tests.field import subset
from tests.loopback import Behaviour, LoopbackServer
from tests.models.test_semif import FakeOpenAI
from tests.runs import sys1cal

RENDERING = load_dataset("sys1cal-v1").renderings[0]


def with_decoy(body: dict, key: str, decoy: object) -> bytes:
    """`body` encoded with `"key": decoy` written just before its own `key` (the last one is the real answer)."""
    text = json.dumps(body)
    real = f'"{key}": '
    assert real in text
    return text.replace(real, f"{real}{json.dumps(decoy)}, {real}", 1).encode()


def test_strict_reading_names_the_key_and_its_line() -> None:
    with pytest.raises(DuplicateKey, match=r'the key "digest" appears twice in one object \(line 3\)'):
        loads('{\n "digest": "a",\n "digest": "b"\n}')
    assert loads('{"a": {"x": 1}, "b": {"x": 2}}') == {"a": {"x": 1}, "b": {"x": 2}}  # the same key in two objects


def test_a_systemone_answer_with_answers_twice_is_refused() -> None:
    adapter = SystemOneAdapter(version=None, base_url="http://127.0.0.1:9", environ={})
    questions = ("noul",)
    (request,) = adapter.requests(RENDERING, questions)
    server = LoopbackServer.for_renderings([RENDERING])
    server.server.server_close()  # never started: only its answer() is used
    body = server.answer(request.body)
    adapter.parse(questions, [WireResponse(200, {}, json.dumps(body).encode())])  # the real body parses
    decoy = {"noul": {"p_true": 0.999}}
    with pytest.raises(AnswerError, match='the response is refused: the key "answers" appears twice in one object'):
        adapter.parse(questions, [WireResponse(200, {}, with_decoy(body, "answers", decoy))])


@pytest.mark.parametrize("mode", ["chat", "completion"])
def test_a_semif_answer_with_logprobs_twice_is_refused(mode: str) -> None:
    adapter = SemIfAdapter(version=None, base_url="http://127.0.0.1:9", environ={"SYS1CAL_SEMIF_MODE": mode})
    questions = ("noul",)
    (request,) = adapter.requests(RENDERING, questions)
    fake = FakeOpenAI()
    fake.server.server_close()
    path = "/v1/completions" if mode == "completion" else "/v1/chat/completions"
    body = fake.answer(path, request.body)
    adapter.parse(questions, [WireResponse(200, {}, json.dumps(body).encode())])
    decoy = {"content": [{"top_logprobs": [{"token": " A", "logprob": math.log(0.99)}]}]}
    with pytest.raises(AnswerError, match="""answer|response to 'noul' is refused: the key "logprobs" appears twice"""):
        adapter.parse(questions, [WireResponse(200, {}, with_decoy(body, "logprobs", decoy))])


def test_a_model_list_with_a_key_twice_is_not_read_as_a_list() -> None:
    assert served_models(b'{"data": [{"id": "m"}]}') == ["m"]
    assert served_models(b'{"data": [{"id": "decoy"}], "data": [{"id": "m"}]}') is None


def test_a_recording_refuses_the_answer_and_names_the_key(pytester: pytest.Pytester) -> None:
    dataset = pytester.path / "six.jsonl"
    renderings = subset(dataset, 6)
    # Served to whichever request comes first: the key is refused before the answers are read.
    twice = b'{"model": "loopback-1", "answers": {"noul": {"p_true": 0.5}}, "answers": {}}'
    behaviour = Behaviour(script=[(200, {"Content-Type": "application/json"}, twice)])
    root = pytester.path / "cassettes"
    with LoopbackServer.for_renderings(renderings, behaviour) as live:
        result = sys1cal(pytester, "--sys1cal-model=systemone", f"--sys1cal-base-url={live.url}", f"--sys1cal-dataset={dataset}", f"--sys1cal-cassettes={root}", "--sys1cal-repeats=1", "--sys1cal-record-mode=once", "--sys1cal-concurrency=1", "--sys1cal-retry-budget=0")  # fmt: skip
    output = result.stdout.str()
    assert result.ret != pytest.ExitCode.OK
    assert 'the response is refused: the key "answers" appears twice in one object' in output
    assert "Traceback" not in output
    stored = "".join(p.read_text() for p in root.rglob("*.json") if p.name != "manifest.json")
    assert '"answers": {}' not in stored and '\\"answers\\": {}' not in stored  # the refused body is not kept
