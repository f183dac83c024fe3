"""The `semif` adapter: SemIf's letter readout over an OpenAI-compatible server.

Plain tests of the prompt and the readout; real pytest runs (pytester) against a small
OpenAI-compatible server on 127.0.0.1 that answers with made-up logprobs (recording, then replaying
with it stopped; no logprobs; no option token; nothing listening); and the committed SmolLM2
cassettes replayed offline, checked against a readout computed here from the cassette files alone.
The real model end to end is tests/live/.
"""

from __future__ import annotations

import hashlib
import json
import math
import socket
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

# pytester's in-process runs forget modules first imported during a run; import the async HTTP stack the
# recorder uses once, before any run (see tests/recording/test_recording.py).
import anyio._backends._asyncio  # noqa: F401
import httpcore._backends.anyio  # noqa: F401
import pytest

from pytest_sys1cal.dataset import load_dataset
from pytest_sys1cal.errors import InputError
from pytest_sys1cal.models import make_adapter
from pytest_sys1cal.models.base import AnswerError, WireResponse
from pytest_sys1cal.models.semif import (
    LETTERS,
    SYSTEM,
    SemIfAdapter,
    TooManyOptions,
    options_of,
    read_options,
    user_prompt,
)
from pytest_sys1cal.questions import ALL_QUESTIONS, build_questions
from tests.loopback import Serving
from tests.runs import REPO, sys1cal

COMMITTED = REPO / "cassettes" / "semif" / SemIfAdapter.default_version
RENDERINGS = load_dataset("sys1cal-v1").renderings
RENDERING = next(r for r in RENDERINGS if r.short_id == "bayes__seed_000042__repr_counts")
SELECTION = "bayes__seed_000042 and not sequential"  # five renderings of one latent problem
SELECTED = 5
ENV = (
    "SYS1CAL_SEMIF_MODE",
    "SYS1CAL_SEMIF_TOP_K",
    "SYS1CAL_SEMIF_PREFILL",
    "SYS1CAL_SEMIF_BASE_URL",
    "SYS1CAL_SEMIF_API_KEY",
)


@pytest.fixture(autouse=True)
def _default_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def adapter(**environ: str) -> SemIfAdapter:
    return make_adapter("semif", [], version=None, base_url=None, environ=environ)  # type: ignore[return-value]


def chat(top: list[tuple[str, float]], model: str = "m") -> dict[str, Any]:
    """A llama.cpp-shaped chat completion whose answer slot has these (token, logprob) alternatives."""
    entries = [{"id": i, "token": t, "logprob": lp} for i, (t, lp) in enumerate(top)]
    first = entries[0] if entries else {"token": "", "logprob": 0.0}
    return {
        "model": model,
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": first["token"]},
                "logprobs": {"content": [{**first, "top_logprobs": entries}]},
            }
        ],
    }


def legacy(top: dict[str, float]) -> dict[str, Any]:
    """An OpenAI legacy completions response (also vLLM's): top_logprobs as token → logprob objects."""
    return {"object": "text_completion", "choices": [{"text": "", "logprobs": {"top_logprobs": [top]}}]}


# ------------------------------------------------------------------------------------------ the prompt


def test_four_requests_one_per_question_in_semifs_prompt_design() -> None:
    requests = adapter().requests(RENDERING, ALL_QUESTIONS)
    assert len(requests) == 4
    questions = build_questions(RENDERING)
    expected_options = {
        "noul": [questions["noul"]["criteria"]["true"], questions["noul"]["criteria"]["false"]],
        "choice": [questions["choice"]["criteria"]["False"], questions["choice"]["criteria"]["True"]],
        "choice_swapped": [questions["choice"]["criteria"]["True"], questions["choice"]["criteria"]["False"]],
        "score": list(RENDERING.score_levels),
    }
    for qid, request in zip(ALL_QUESTIONS, requests, strict=True):
        body = request.body
        assert request.method == "POST" and request.url == "http://127.0.0.1:8080/v1/chat/completions"
        assert {k: body[k] for k in ("model", "max_tokens", "temperature", "cache_prompt")} == {
            "model": "smollm2-135m-instruct-q4_1",
            "max_tokens": 1,
            "temperature": 0,
            "cache_prompt": False,
        }
        assert body["logprobs"] is True and body["top_logprobs"] == 20
        system, user, assistant = body["messages"]
        assert system == {"role": "system", "content": SYSTEM}
        assert assistant == {"role": "assistant", "content": "Answer:"}
        assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
        payload, tail = user["content"].split("\n\n")
        options = expected_options[qid]
        assert json.loads(payload) == {
            "evidence": RENDERING.state,
            "criterion": questions[qid]["instructions"],
            "options": [{"letter": LETTERS[i], "description": d} for i, d in enumerate(options)],
        }
        letters = "A or B" if len(options) == 2 else "A, B, C, D, E, F, G, H, I or J"
        assert tail == f"Answer with only the letter of your choice ({letters})."
    # The swapped Choice is a different prompt: order is part of the question.
    assert requests[1].content() != requests[2].content()


def test_completion_mode_sends_a_plain_prompt_ending_in_the_prefill() -> None:
    noul, *_ = adapter(SYS1CAL_SEMIF_MODE="completion", SYS1CAL_SEMIF_TOP_K="50").requests(RENDERING, ALL_QUESTIONS)
    assert noul.url == "http://127.0.0.1:8080/v1/completions"
    assert "messages" not in noul.body and noul.body["logprobs"] == 50
    user, _ = user_prompt(RENDERING.state, build_questions(RENDERING)["noul"])
    assert noul.body["prompt"] == f"{SYSTEM}\n\n{user}\n\nAnswer:"


def test_settings_from_the_environment_and_the_options() -> None:
    plain = adapter(SYS1CAL_SEMIF_PREFILL="", SYS1CAL_SEMIF_TOP_K="5", SYS1CAL_SEMIF_BASE_URL="http://h:9/")
    (request,) = plain.requests(RENDERING, ("noul",))
    assert request.url == "http://h:9/v1/chat/completions"
    assert [m["role"] for m in request.body["messages"]] == ["system", "user"]
    assert "continue_final_message" not in request.body and "add_generation_prompt" not in request.body
    assert request.body["top_logprobs"] == 5
    cli = make_adapter(
        "semif", [], version="qwen3-0.6b", base_url="http://cli:1", environ={"SYS1CAL_SEMIF_BASE_URL": "x"}
    )
    assert cli.base_url == "http://cli:1" and cli.requests(RENDERING, ("noul",))[0].body["model"] == "qwen3-0.6b"
    keyed = adapter(SYS1CAL_SEMIF_API_KEY="sk-1").requests(RENDERING, ("noul",))[0]
    assert keyed.headers["Authorization"] == "Bearer sk-1"
    for name, value, message in [
        ("SYS1CAL_SEMIF_MODE", "raw", "SYS1CAL_SEMIF_MODE='raw': choose one of chat, completion"),
        ("SYS1CAL_SEMIF_TOP_K", "many", "SYS1CAL_SEMIF_TOP_K='many' is not a whole number"),
        ("SYS1CAL_SEMIF_TOP_K", "0", "SYS1CAL_SEMIF_TOP_K=0 must be at least 1"),
    ]:
        with pytest.raises(InputError, match=message.replace("(", r"\(")):
            adapter(**{name: value})


def test_at_most_sixteen_options() -> None:
    sixteen = {"type": "choice", "instructions": "?", "criteria": {f"o{i}": None for i in range(16)}}
    user, count = user_prompt("state", sixteen)
    assert count == 16 and '"letter": "P", "description": "o15"' in user  # a null description: the label
    assert "(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O or P)" in user
    seventeen = {**sixteen, "criteria": {f"o{i}": None for i in range(17)}}
    with pytest.raises(TooManyOptions, match="a choice question with 17 options cannot be lettered: the SemIf "
                       "readout supports at most 16 options \\(answer letters A–P\\)"):  # fmt: skip
        options_of(seventeen)
    assert options_of({"type": "noul", "instructions": "?"}) == [
        "The answer to the question is yes.",
        "The answer to the question is no.",
    ]


# ------------------------------------------------------------------------------------------ the readout


def test_every_spelling_of_a_letter_counts_and_the_rest_is_coverage() -> None:
    top = [
        (" A", math.log(0.40)),
        ("The", math.log(0.20)),
        ("A", math.log(0.05)),
        ("\nA", math.log(0.05)),
        (" B", math.log(0.10)),
        ("B", math.log(0.10)),
        (" C", math.log(0.03)),  # not an option of a two-option question
        ("a", math.log(0.02)),  # lower case: not the letter
        ("A.", math.log(0.02)),  # punctuation: not the bare letter
        ("AB", math.log(0.01)),
    ]
    probabilities, coverage = read_options(chat(top), 2)
    assert coverage == pytest.approx(0.70)
    assert probabilities == pytest.approx([0.5 / 0.7, 0.2 / 0.7])
    probabilities3, coverage3 = read_options(chat(top), 3)
    assert coverage3 == pytest.approx(0.73) and probabilities3[2] == pytest.approx(0.03 / 0.73)
    # The legacy completions shape gives the same numbers.
    legacy_probabilities, legacy_coverage = read_options(legacy(dict(top)), 2)
    assert legacy_probabilities == pytest.approx(probabilities) and legacy_coverage == pytest.approx(coverage)


def test_a_missing_letter_is_zero_and_a_sample_maps_each_question() -> None:
    top_two = chat([(" A", math.log(0.6)), (" B", math.log(0.2)), ("x", math.log(0.1))])
    top_score = chat([(" C", math.log(0.5)), (" J", math.log(0.25)), ("The", math.log(0.1))])
    responses = [WireResponse(200, {}, json.dumps(b).encode()) for b in (top_two, top_two, top_two, top_score)]
    sample = adapter().parse(ALL_QUESTIONS, responses)
    assert sample["noul"] == pytest.approx(0.75)  # A = true
    assert sample["choice"] == pytest.approx(0.25)  # [False, True]: B = True
    assert sample["choice_swapped"] == pytest.approx(0.75)  # [True, False]: A = True
    assert sample["score"] == pytest.approx([0, 0, 2 / 3, 0, 0, 0, 0, 0, 0, 1 / 3])
    assert sample["coverage"] == pytest.approx({"noul": 0.8, "choice": 0.8, "choice_swapped": 0.8, "score": 0.75})


@pytest.mark.parametrize(
    "body",
    [
        {"choices": [{"message": {"role": "assistant", "content": "A"}, "finish_reason": "length"}]},
        {"choices": [{"message": {"content": "A"}, "logprobs": None}]},
        {"choices": [{"message": {"content": "A"}, "logprobs": {"content": []}}]},
        chat([]),
        {"error": "logprobs are not supported"},
    ],
    ids=["absent", "null", "empty-content", "empty-top", "no-choices"],
)
def test_no_logprobs_is_a_clear_failure(body: dict[str, Any]) -> None:
    with pytest.raises(AnswerError, match="the server returned no logprobs for the answer slot; the SemIf readout "
                       "needs an OpenAI-compatible server that returns top_logprobs"):  # fmt: skip
        read_options(body, 2)


def test_logprobs_without_any_option_token_is_a_clear_failure() -> None:
    body = chat([("The", -0.5), (" The", -1.5), ("a", -2.0), (" C", -3.0)])
    with pytest.raises(AnswerError) as excinfo:
        read_options(body, 2)
    assert str(excinfo.value) == (
        "the answer-slot logprobs hold no option token (A or B, with or without a leading space) among the top 4: "
        "'The' -0.50, ' The' -1.50, 'a' -2.00, ' C' -3.00; the model did not answer with a letter "
        "(raise SYS1CAL_SEMIF_TOP_K, or check the prompt mode)"
    )
    response = WireResponse(200, {}, json.dumps(body).encode())
    with pytest.raises(AnswerError, match="^answer to 'noul': the answer-slot logprobs hold no option token"):
        adapter().parse(ALL_QUESTIONS, [response] * 4)


def test_values_that_are_not_log_probabilities_are_refused() -> None:
    with pytest.raises(AnswerError, match="answer-slot logprob of ' A' is 0.5, not a log-probability"):
        read_options(chat([(" A", 0.5)]), 2)
    with pytest.raises(AnswerError, match="the option tokens' probabilities sum to 1.6"):
        read_options(chat([(" A", math.log(0.8)), ("A", math.log(0.8))]), 2)
    with pytest.raises(AnswerError, match="the response to 'noul' is not JSON"):
        adapter().parse(("noul",), [WireResponse(200, {}, b"<html>")])


# ------------------------------------------------------------------------------------------ a fake server


class FakeOpenAI(Serving):
    """An OpenAI-compatible server on 127.0.0.1 with made-up but deterministic logprobs: each option letter
    gets a weight from a hash of the prompt, spelled " X" and "X"; 30 % of the mass goes to other tokens.

    behaviour: "ok", "no-logprobs" (answers without logprobs), "no-letters" (logprobs, no letter)."""

    def __init__(self, behaviour: str = "ok"):
        self.behaviour = behaviour
        self.paths: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.paths.append(self.path)
                payload = json.dumps(owner.answer(self.path, body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.serve(Handler)

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["prompt"] if path == "/v1/completions" else body["messages"][1]["content"]
        count = prompt.count('"letter": ')
        digest = hashlib.sha256(prompt.encode()).digest()
        weights = [1 + digest[i] for i in range(count)]
        mass = [0.7 * w / sum(weights) for w in weights]
        top = [(" The", 0.2), ("\n", 0.1)]
        if self.behaviour != "no-letters":
            top += [(f" {LETTERS[i]}", 0.8 * m) for i, m in enumerate(mass)]
            top += [(LETTERS[i], 0.2 * m) for i, m in enumerate(mass)]
        top = sorted(top, key=lambda t: -t[1])[: body.get("top_logprobs") or body.get("logprobs")]
        if path == "/v1/completions":
            response = legacy({token: math.log(p) for token, p in top})
        else:
            response = chat([(token, math.log(p)) for token, p in top], model=body["model"])
        if self.behaviour == "no-logprobs":
            del response["choices"][0]["logprobs"]
        return response


def run(pytester: pytest.Pytester, root: Path, *args: str, url: str | None = None) -> pytest.RunResult:
    record = (f"--sys1cal-base-url={url}", "--sys1cal-record-mode=once", "--sys1cal-retry-budget=0") if url else ()
    return sys1cal(
        pytester, "--sys1cal-model=semif", f"--sys1cal-cassettes={root}", "--sys1cal-repeats=1", *record, *args
    )


def items(path: Path) -> dict[str, Any]:
    return {item["instance_id"]: item for item in json.loads(path.read_text())["items"]}


@pytest.mark.parametrize("mode", ["chat", "completion"])
def test_records_one_request_per_question_then_replays_the_same_probabilities_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv("SYS1CAL_SEMIF_MODE", mode)
    monkeypatch.setenv("SYS1CAL_SEMIF_TOP_K", "30")  # every spelling of every letter: coverage exactly 0.7
    root, recorded, replayed = pytester.path / "c", pytester.path / "recorded.json", pytester.path / "replayed.json"
    with FakeOpenAI() as server:
        run(pytester, root, "-k", SELECTION, f"--sys1cal-report={recorded}", url=server.url).assert_outcomes(
            passed=SELECTED
        )
    route = "/v1/chat/completions" if mode == "chat" else "/v1/completions"
    assert server.paths == [route] * (4 * SELECTED)
    manifest = json.loads((root / "semif" / "smollm2-135m-instruct-q4_1" / "manifest.json").read_text())
    assert (manifest["repeats"], manifest["questions"]) == (1, list(ALL_QUESTIONS))
    run(pytester, root, "-k", SELECTION, f"--sys1cal-report={replayed}").assert_outcomes(passed=SELECTED)
    assert items(replayed) == items(recorded)
    for item in items(replayed).values():
        (sample,) = item["samples"]
        assert sample["coverage"] == pytest.approx(dict.fromkeys(ALL_QUESTIONS, 0.7))
        assert item["p_choice"] != item["p_choice_swapped"]
    # Another mode or top-K is another request, which the cassettes never recorded: stopped before any is asked
    # (issue 36; it used to fail every item with "holds no unplayed recording of this request").
    monkeypatch.setenv("SYS1CAL_SEMIF_TOP_K", "7")
    result = run(pytester, root, "-k", SELECTION)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "SYS1CAL_SEMIF_TOP_K=7, but this folder was recorded with top_k 30" in result.stderr.str()


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ("no-logprobs", "malformed answer: answer to 'noul': the server returned no logprobs for the answer slot; "
         "the SemIf readout needs an OpenAI-compatible server that returns top_logprobs (llama.cpp's llama-server, "
         "vLLM, ...); response: {"),
        ("no-letters", "malformed answer: answer to 'noul': the answer-slot logprobs hold no option token (A or B, "
         "with or without a leading space) among the top 2: ' The' -1.61, '\\n' -2.30; the model did not answer "
         "with a letter"),
    ],
)  # fmt: skip
def test_a_server_without_usable_logprobs_fails_each_item_saying_so(
    pytester: pytest.Pytester, behaviour: str, message: str
) -> None:
    root = pytester.path / "c"
    with FakeOpenAI(behaviour) as server:
        result = run(pytester, root, "-k", SELECTION, url=server.url)
    result.assert_outcomes(failed=SELECTED)
    lines = [line for line in result.stdout.lines if line.startswith("bayes__seed_000042__repr_")]
    assert len(lines) == SELECTED and all(message in line for line in lines), result.stdout.str()
    assert "Traceback" not in result.stdout.str()
    assert not list(root.rglob("*__repr_*.json"))  # nothing recorded


def test_nothing_listening_is_one_clear_error_that_stops_the_run(pytester: pytest.Pytester) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    result = run(pytester, pytester.path / "c", url=f"http://127.0.0.1:{port}")  # all 365 renderings
    assert time.monotonic() - started < 30
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*: cannot connect to http://127.0.0.1:{port}/v1/chat/completions: All connection attempts failed "
            "(1 attempt in *; is the server up? check --sys1cal-base-url)",
            "*Interrupted: sys1cal: *cannot connect*",
        ]
    )
    # Once each where it belongs, never once per rendering: the failure, the report's stop reason, pytest's
    # "Interrupted" line and the short summary (which pytest cuts to the terminal width, except under CI).
    assert len([line for line in result.stdout.lines if "cannot connect to" in line]) <= 4, result.stdout.str()
    assert "Traceback" not in result.stdout.str()


def test_a_bad_setting_is_a_usage_error(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYS1CAL_SEMIF_MODE", "raw")
    result = run(pytester, pytester.path / "c")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: SYS1CAL_SEMIF_MODE='raw': choose one of chat, completion"])


# ------------------------------------------------------------------------------------------ the committed cassettes


def readout_from_file(path: Path) -> dict[str, Any]:
    """P(True) per question and the Score distribution, from a cassette file alone (no plugin code):
    each letter's probability summed over its spellings, renormalised over the options."""
    interactions = json.loads(path.read_text())["interactions"]
    assert len(interactions) == 4
    values: dict[str, Any] = {}
    for qid, interaction in zip(ALL_QUESTIONS, interactions, strict=True):
        request = json.loads(interaction["request"]["body"])
        n = 10 if qid == "score" else 2
        assert request["messages"][1]["content"].count('"letter": ') == n
        body = json.loads(interaction["response"]["body"]["string"])
        top = body["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        mass = [sum(math.exp(t["logprob"]) for t in top if t["token"].strip() == "ABCDEFGHIJ"[i]) for i in range(n)]
        p = [m / sum(mass) for m in mass]
        values[qid] = p if qid == "score" else p[1] if qid == "choice" else p[0]
        values[f"coverage_{qid}"] = sum(mass)
    return values


@pytest.mark.skipif(not COMMITTED.is_dir(), reason=f"{COMMITTED} is not recorded yet (scripts/record_semif.py)")
def test_the_committed_smollm2_cassettes_replay_offline_with_the_probabilities_they_hold(
    pytester: pytest.Pytester,
) -> None:
    manifest = json.loads((COMMITTED / "manifest.json").read_text())
    assert manifest["repeats"] == 1 and "deterministic" in manifest["note"]
    assert manifest["questions"] == list(ALL_QUESTIONS) and manifest["server_model"] == SemIfAdapter.default_version
    report = pytester.path / "report.json"
    result = sys1cal(pytester, "--sys1cal-model=semif", f"--sys1cal-cassettes={REPO / 'cassettes'}", f"--sys1cal-report={report}")  # fmt: skip
    result.assert_outcomes(passed=len(RENDERINGS))
    replayed = items(report)
    assert len(replayed) == len(RENDERINGS)
    for rendering in RENDERINGS:
        expected = readout_from_file(COMMITTED / rendering.family / f"{rendering.short_id}.json")
        (sample,) = replayed[rendering.instance_id]["samples"]
        for qid in ALL_QUESTIONS:
            assert sample[qid] == pytest.approx(expected[qid], abs=1e-12), (rendering.short_id, qid)
            assert sample["coverage"][qid] == pytest.approx(expected[f"coverage_{qid}"], abs=1e-12)
