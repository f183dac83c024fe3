"""The `systemone` adapter: Jev's wire against any `/v1/systemone` server, tolerant of what servers vary
and strict about what the analysis needs. Plain tests of the parser, then real pytest runs recording
from the jevcompat mock (in-process, 127.0.0.1) and replaying with the mock stopped, with its faults."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

# pytester's in-process runs forget modules first imported during a run; import the async HTTP stack the
# recorder uses once, before any run (see tests/recording/test_recording.py).
import anyio._backends._asyncio  # noqa: F401
import httpcore._backends.anyio  # noqa: F401
import pytest

from pytest_sys1cal.models import make_adapter
from pytest_sys1cal.models.base import AnswerError, WireResponse
from pytest_sys1cal.models.systemone import SystemOneAdapter
from pytest_sys1cal.questions import ALL_QUESTIONS
from tests.loopback import jevcompat_mock
from tests.runs import sys1cal

# Five renderings of one latent problem (counts, direct, distractor, prose, table).
SELECTION = "bayes__seed_000042 and not sequential"
SELECTED = 5

LEVELS = [f"level {i}" for i in range(10)]
SCORE_Q = [0.0, 0.05, 0.1, 0.3, 0.25, 0.15, 0.1, 0.05, 0.0, 0.0]


def jev_answers() -> dict[str, Any]:
    """A well-formed Jev response body, shaped like the wire contract's example."""
    return {
        "model": "jev-1.13.0",
        "answers": {
            "noul": {"type": "noul", "noul": 0.3},
            "choice": {
                "type": "choice",
                "choice": "False",
                "probabilities": {"False": 0.6, "True": 0.4},
                "confidence": 0.2,
            },
            "choice_swapped": {
                "type": "choice",
                "choice": "False",
                "probabilities": {"True": 0.45, "False": 0.55},
                "confidence": 0.1,
            },
            "score": {
                "type": "score",
                "score": sum(i * q for i, q in enumerate(SCORE_Q)),
                "legend": {str(i): level for i, level in enumerate(LEVELS)},
                "probabilities": {str(i): q for i, q in enumerate(SCORE_Q)},
                "confidence": 0.3,
            },
        },
        "usage": {"input_tokens": 300, "output_tokens": 18},
    }


def parse(body: Any) -> dict[str, Any]:
    adapter = SystemOneAdapter(version=None, base_url=None, environ={})
    content = body if isinstance(body, bytes) else json.dumps(body, allow_nan=True).encode()
    return adapter.parse(ALL_QUESTIONS, [WireResponse(200, {}, content)])


def edited(edit: Any) -> dict[str, Any]:
    body = copy.deepcopy(jev_answers())
    edit(body)
    return body


# ------------------------------------------------------------------------------------------ the parser


def test_a_well_formed_answer_gives_p_true_per_question_and_the_score_distribution() -> None:
    sample = parse(jev_answers())
    assert sample["noul"] == 0.3
    assert sample["choice"] == pytest.approx(0.4)
    assert sample["choice_swapped"] == pytest.approx(0.45)
    assert sample["score"] == pytest.approx(SCORE_Q)


def _noul_probabilities(b: dict) -> None:  # typed-gguf
    b["answers"]["noul"]["probabilities"] = {"yes": 0.3, "no": 0.7}


def _legend_list(b: dict) -> None:  # jev-compatible-server
    b["answers"]["score"]["legend"] = LEVELS


def _integers(b: dict) -> None:
    b["answers"]["noul"]["noul"] = 1
    b["answers"]["choice"].update(probabilities={"False": 0, "True": 1}, choice="True")


def _extensions(b: dict) -> None:  # x_ fields, semif-serve's blocks, OpenRouter's id/provider/cost
    b["x_latency_ms"] = 12
    b["semif"] = {"mode": "shared", "backend": "llamacpp"}
    b["id"], b["provider"], b["usage"]["cost"] = "gen-1", "TypeSafe", 0.00001
    b["answers"]["choice"]["x_option_logits"] = [0.1, -0.2]
    b["answers"]["score"]["semif"] = {"prompt_sha256": "ab"}


def _no_usage_no_confidence(b: dict) -> None:
    del b["usage"]
    del b["answers"]["choice"]["confidence"]
    del b["answers"]["score"]["confidence"]


def _rounded(b: dict) -> None:  # OpenRouter rounds to 2 decimals: sums drift
    b["answers"]["score"]["probabilities"] = {str(i): round(q + 0.004, 2) for i, q in enumerate(SCORE_Q)}


def _boolean(b: dict) -> None:  # the Vercel AI Gateway's name for Noul
    b["answers"]["noul"]["type"] = "boolean"


def _extra_answer_and_nan_elsewhere(b: dict) -> None:
    b["answers"]["unasked"] = {"type": "noul", "noul": 0.5}
    b["x_debug"] = math.nan


@pytest.mark.parametrize(
    "variation",
    [
        _noul_probabilities,
        _legend_list,
        _integers,
        _extensions,
        _no_usage_no_confidence,
        _rounded,
        _boolean,
        _extra_answer_and_nan_elsewhere,
        lambda b: b["answers"]["score"].pop("legend"),
        lambda b: b["answers"]["score"].update(legend={str(i + 1): lv for i, lv in enumerate(LEVELS)}),
        lambda b: b["answers"]["choice"].update(confidence=1.7),  # over 1
        lambda b: b["answers"]["noul"].update(noul=1.0 + 1e-12),  # float noise
    ],
    ids=lambda f: f.__name__.strip("_") if f.__name__ != "<lambda>" else None,
)
def test_documented_variations_are_tolerated(variation: Any) -> None:
    sample = parse(edited(variation))
    assert set(sample) == set(ALL_QUESTIONS)
    assert all(0.0 <= sample[q] <= 1.0 for q in ("noul", "choice", "choice_swapped"))
    assert sum(sample["score"]) == pytest.approx(1.0)


def test_rounded_and_integer_values_are_renormalised_and_kept() -> None:
    assert parse(edited(_integers))["choice"] == 1.0
    assert parse(edited(_integers))["noul"] == 1.0
    assert sum(parse(edited(_rounded))["score"]) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda b: b["answers"]["choice"].update(probabilities={"false": 0.6, "true": 0.4}),
            "answer to 'choice': probability keys ['false', 'true'] are not the options ['False', 'True']; "
            'answer: {"type": "choice"',
        ),
        (
            lambda b: b["answers"]["choice_swapped"].update(probabilities={"True": 0.55, "False": 0.65}),
            "answer to 'choice_swapped': probabilities sum to 1.2000, not 1 (tolerance 0.05)",
        ),
        (
            lambda b: b["answers"]["score"].update(probabilities={str(i + 1): q for i, q in enumerate(SCORE_Q)}),
            "answer to 'score': probability keys ['1', '10', '2',",
        ),
        (lambda b: b["answers"]["noul"].update(noul=1.5), "answer to 'noul': noul = 1.5 is outside [0, 1]"),
        # The wire contract's MUSTs (issue 37): a choice that is not the argmax, a score that is the mode.
        (
            lambda b: b["answers"]["choice"].update(choice="True"),
            "answer to 'choice' contradicts itself: choice = \"True\" but its probabilities make 'False' the top "
            "option (0.600); the wire contract requires choice to be the argmax (docs/wire.md); answer: ",
        ),
        (
            lambda b: b["answers"]["score"].update(score=3.0),
            "answer to 'score' contradicts itself: score = 3.0 but its probabilities give Σ i·p_i = 3.850; the wire "
            "contract requires the expectation (within 0.25, docs/wire.md)",
        ),
        (
            lambda b: b["answers"]["score"].update(score="3.85"),
            "answer to 'score' contradicts itself: score = \"3.85\"",
        ),
        (lambda b: b["answers"]["noul"].update(noul=math.nan), "answer to 'noul': noul is nan, not a finite number"),
        (lambda b: b["answers"]["noul"].update(noul="0.3"), "answer to 'noul': noul is \"0.3\", not a number"),
        (
            lambda b: b["answers"]["score"]["probabilities"].update({"3": math.nan}),
            "answer to 'score': P(3) is nan, not a finite number",
        ),
        (lambda b: b["answers"].pop("choice"), "no answer to question 'choice'; answers: {"),
        (
            lambda b: b["answers"]["noul"].update(type="score"),
            "answer to 'noul' has type 'score', expected 'noul'",
        ),
        (lambda b: b.pop("answers"), "the response has no 'answers' object"),
    ],
)
def test_what_the_analysis_needs_is_checked_strictly(edit: Any, message: str) -> None:
    with pytest.raises(AnswerError) as excinfo:
        parse(edited(edit))
    assert message in str(excinfo.value)


def test_a_body_that_is_not_json_is_a_clear_failure() -> None:
    with pytest.raises(AnswerError, match=r"the response is not JSON: \"\)\]\}'"):
        parse(b")]}'\n{}")


# A typed-gguf 0.3.0 answer to bayes__seed_000042__repr_counts, verbatim from its cassette
# (cassettes/systemone/typed-gguf-smollm2-135m): a Noul `probabilities` block, 6 significant digits.
TYPED_GGUF_BODY = (
    b'{"model": "typed-gguf-smollm2-135m", "answers": {"noul": {"type": "noul", "noul": 0.839578, "probabilities": '
    b'{"yes": 0.839578, "no": 0.160422}}, "choice": {"type": "choice", "choice": "True", "probabilities": {"False": '
    b'0.451015, "True": 0.548985}, "confidence": 0.0979704}, "choice_swapped": {"type": "choice", "choice": "True", '
    b'"probabilities": {"True": 0.764742, "False": 0.235258}, "confidence": 0.529483}, "score": {"type": "score", '
    b'"score": 2.89513, "probabilities": {"0": 0.0348917, "1": 0.480844, "2": 0.0771023, "3": 0.105506, "4": '
    b'0.0458384, "5": 0.0732038, "6": 0.0252906, "7": 0.0666804, "8": 0.0400972, "9": 0.0505454}, "confidence": '
    b'0.42316, "legend": {"0": "Completely false", "1": "Very strongly false", "2": "Strongly false", "3": '
    b'"Moderately false", "4": "Slightly false", "5": "Slightly true", "6": "Moderately true", "7": "Strongly true", '
    b'"8": "Very strongly true", "9": "Completely true"}}}, "usage": {"input_tokens": 739, "output_tokens": 16}}'
)


def test_a_typed_gguf_answer_reads_like_jevs() -> None:
    sample = parse(TYPED_GGUF_BODY)
    assert sample["noul"] == 0.839578
    assert sample["choice"] == pytest.approx(0.548985, abs=1e-6)  # renormalised from 6 significant digits
    assert sample["choice_swapped"] == pytest.approx(0.764742, abs=1e-6)
    assert sum(sample["score"]) == pytest.approx(1.0, abs=1e-12)
    assert sample["score"][1] == pytest.approx(0.480844, abs=1e-5)


@pytest.mark.parametrize(
    ("sides", "message"),
    [
        # P(no) where P(yes) belongs: the block and `noul` disagree.
        (
            {"yes": 0.7, "no": 0.3},
            "answer to 'noul' contradicts itself: noul = 0.3 but its probabilities give P(yes) = 0.7",
        ),
        ({"true": 0.7, "false": 0.3}, "noul = 0.3 but its probabilities give P(true) = 0.7"),
        ({"yes": 0.3, "no": 0.3}, "answer to 'noul': noul probabilities: probabilities sum to 0.6000, not 1"),
        ({"yes": "0.3", "no": 0.7}, "answer to 'noul': noul probabilities: P(yes) is \"0.3\", not a number"),
    ],
)
def test_a_noul_probabilities_block_must_agree_with_noul(sides: dict[str, Any], message: str) -> None:
    with pytest.raises(AnswerError) as excinfo:
        parse(edited(lambda b: b["answers"]["noul"].update(probabilities=sides)))
    assert message in str(excinfo.value)


@pytest.mark.parametrize(
    "sides",
    [
        {"yes": 0.31, "no": 0.69},  # rounding
        {"yes": 0.304, "no": 0.7},  # 2-decimal rounding plus renormalisation
        {"A": 0.9, "B": 0.1},  # another shape: an extra field like any other, not read
        [0.3, 0.7],
    ],
)
def test_a_noul_probabilities_block_within_rounding_or_of_another_shape_is_tolerated(sides: Any) -> None:
    assert parse(edited(lambda b: b["answers"]["noul"].update(probabilities=sides)))["noul"] == 0.3


def typed_gguf_error(status: int, detail: Any) -> Any:
    adapter = SystemOneAdapter(version="smollm2", base_url=None, environ={})
    return adapter.error(WireResponse(status, {}, json.dumps({"detail": detail}).encode()))


def test_typed_gguf_setup_errors_stop_the_run_without_retrying() -> None:
    # typed-gguf serving a base GGUF (no chat template) on /v1/systemone: every request fails alike.
    error = typed_gguf_error(500, "E_TEMPLATE_UNRESOLVED: no template could render this prompt. …")
    assert (error.status, error.retryable, error.fatal) == (500, False, True)
    assert str(error).startswith("HTTP 500: E_TEMPLATE_UNRESOLVED: no template could render this prompt.")
    assert "the server cannot answer any request; not retried" in str(error)
    assert typed_gguf_error(500, "E_RUNTIME_MISSING: no llama.cpp runtime").fatal


def test_typed_gguf_request_errors_fail_the_item_without_retrying() -> None:
    error = typed_gguf_error(500, "E_CTX_TOO_SMALL: the request needs 9000 tokens")
    assert (error.retryable, error.fatal) == (False, False)
    assert "the same request fails again; not retried" in str(error)


def test_other_server_errors_are_retried_as_before() -> None:
    for status, detail in ((500, "E_INTERNAL: RuntimeError: boom"), (500, "boom"), (503, "E_CTX_TOO_SMALL: x")):
        error = typed_gguf_error(status, detail)
        assert (error.retryable, error.fatal) == (True, False), detail
    # A code in a 4xx is the plain 4xx (not retried because of its status), worded from `detail[]`.
    error = typed_gguf_error(422, [{"type": "value_error", "loc": ["body", "questions", "noul", "criteria"],
                                    "msg": "E_NOUL_CRITERIA: question 'noul': …"}])  # fmt: skip
    assert str(error) == "HTTP 422: body.questions.noul.criteria: E_NOUL_CRITERIA: question 'noul': …"
    assert not error.fatal


def test_an_unknown_model_at_typed_gguf_stops_the_run_naming_the_option() -> None:
    detail = [{"type": "value_error", "loc": ["body", "model"], "input": "smollm2",
               "msg": "E_MODEL_NOT_FOUND: 'smollm2' is not a registry alias or `jev-latest`; known aliases: other"}]  # fmt: skip
    error = typed_gguf_error(422, detail)
    assert error.fatal and error.status == 422
    assert str(error).startswith("HTTP 422: body.model: E_MODEL_NOT_FOUND: 'smollm2' is not a registry alias")
    assert "--sys1cal-model-version" in str(error)


def test_any_base_url_and_model_name() -> None:
    adapter = make_adapter(
        "systemone", [], version="typesafe/jev-1.13", base_url="https://openrouter.ai/api/", environ={}
    )
    (request,) = adapter.requests(_rendering(), ALL_QUESTIONS)
    assert request.url == "https://openrouter.ai/api/v1/systemone"
    assert request.body["model"] == "typesafe/jev-1.13"
    assert list(request.body) == ["model", "state", "questions"]  # typed-gguf rejects any other field
    assert list(request.body["questions"]) == list(ALL_QUESTIONS)
    assert "Authorization" not in request.headers
    keyed = make_adapter("systemone", [], version=None, base_url=None, environ={"SYS1CAL_API_KEY": "k-123"})
    assert keyed.requests(_rendering(), ALL_QUESTIONS)[0].headers["Authorization"] == "Bearer k-123"
    assert keyed.base_url == "http://127.0.0.1:8787" and keyed.version == "jev-latest"
    env = make_adapter("systemone", [], version=None, base_url=None, environ={"SYS1CAL_BASE_URL": "http://h:1/"})
    assert env.base_url == "http://h:1"


def test_the_bytes_sent_are_the_body_encoded_for_every_rendering_and_question_order() -> None:
    """The request bytes are spliced from cached pieces (the questions' JSON is cached on the texts they are
    built from); they must be exactly the body encoded whole, for every bundled rendering and any order."""
    from dataclasses import replace

    from pytest_sys1cal.dataset import load_dataset
    from pytest_sys1cal.models.base import encode_json

    adapter = make_adapter("systemone", [], version="jev-1.13.0", base_url=None, environ={})
    renderings = load_dataset("sys1cal-v1").renderings
    for order in (ALL_QUESTIONS, tuple(reversed(ALL_QUESTIONS)), ("score", "noul")):
        for rendering in renderings:
            (request,) = adapter.requests(rendering, order)
            assert request.content() == encode_json(dict(request.body)).encode()
            assert list(request.body["questions"]) == list(order)
    # Each text a question is built from changes the bytes: none is left out of the cache's key.
    first = renderings[0]
    (sent,) = adapter.requests(first, ALL_QUESTIONS)
    for change in (
        {"proposition": first.proposition + " (edited)"},
        {"choice_question": "Is it?"},
        {"score_question": "How true?"},
        {"score_levels": tuple(f"{level}!" for level in first.score_levels)},
    ):
        (other,) = adapter.requests(replace(first, **change), ALL_QUESTIONS)
        assert other.content() != sent.content()
        assert other.content() == encode_json(dict(other.body)).encode()


def _rendering() -> Any:
    from pytest_sys1cal.dataset import load_dataset

    return load_dataset("sys1cal-v1").renderings[0]


# ------------------------------------------------------------------------------------------ the jevcompat mock


@pytest.fixture(scope="module")
def mock() -> Any:
    return pytest.importorskip("jevcompat.mock", reason="jevcompat is an optional test dependency")


def run(pytester: pytest.Pytester, root: Path, *args: str, url: str | None = None) -> pytest.RunResult:
    record = (f"--sys1cal-base-url={url}", "--sys1cal-record-mode=once", "--sys1cal-retry-budget=0") if url else ()
    return sys1cal(pytester, "--sys1cal-model=systemone", f"--sys1cal-cassettes={root}", "-k", SELECTION, "--sys1cal-repeats=2", *record, *args)  # fmt: skip


def report_items(path: Path) -> dict[str, Any]:
    return {item["instance_id"]: item for item in json.loads(path.read_text())["items"]}


def test_records_from_the_mock_then_replays_with_it_stopped(pytester: pytest.Pytester, mock: Any) -> None:
    root = pytester.path / "cassettes"
    recorded, replayed = pytester.path / "recorded.json", pytester.path / "replayed.json"
    config = mock.MockConfig()
    with jevcompat_mock(config) as server:
        result = run(pytester, root, f"--sys1cal-report={recorded}", url=server.url)
        result.assert_outcomes(passed=SELECTED)
    assert config.requests == SELECTED * 2  # one request per repeat, all four questions in it
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json"))
    assert "systemone/jev-latest/manifest.json" in files and len(files) == SELECTED + 1
    manifest = json.loads((root / "systemone" / "jev-latest" / "manifest.json").read_text())
    assert manifest["server_model"] == "jevcompat-mock-0.1" and manifest["repeats"] == 2

    result = run(pytester, root, f"--sys1cal-report={replayed}")  # the mock is gone: replay only
    result.assert_outcomes(passed=SELECTED)
    items = report_items(replayed)
    assert items == report_items(recorded)
    assert all(len(item["samples"]) == 2 for item in items.values())


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("choice-key-case", "malformed answer: answer to 'choice': probability keys ['false', 'true'] are not the "
         "options ['False', 'True']; answer: {\"type\": \"choice\", \"choice\": "),
        ("choice-sum", "malformed answer: answer to 'choice': probabilities sum to 1."),  # then "…, not 1 (tolerance"
        ("score-keys-1-based", "malformed answer: answer to 'score': probability keys ['1', '10', '2', '3', '4', '5', "
         "'6', '7', '8', '9'] are not the options ['0', "),
        ("score-sum", "malformed answer: answer to 'score': probabilities sum to 0.8000, not 1 (tolerance 0.05)"),
        ("noul-range", "malformed answer: answer to 'noul': noul = 1."),
        ("first-question-only", "malformed answer: no answer to question 'choice'; answers: {\"noul\": {\"type\": "),
        ("xssi-200", "malformed answer: the response is not JSON: \")]}'"),
        # The wire contract's MUSTs on the fields that restate the probabilities (issue 37: never accepted silently).
        ("choice-second", "malformed answer: answer to 'choice' contradicts itself: choice = "),
        ("score-argmax", "malformed answer: answer to 'score' contradicts itself: score = "),
    ],
)  # fmt: skip
def test_faults_that_break_what_the_analysis_needs_fail_each_item_quoting_the_answer(
    pytester: pytest.Pytester, mock: Any, fault: str, message: str
) -> None:
    root = pytester.path / "cassettes"
    with jevcompat_mock(mock.MockConfig(faults=frozenset({fault}))) as server:
        result = run(pytester, root, url=server.url)
    result.assert_outcomes(failed=SELECTED)
    lines = [line for line in result.stdout.lines if line.startswith("bayes__seed_000042__repr_")]
    assert len(lines) == SELECTED, result.stdout.str()  # one message per item, no traceback
    assert all(message in line for line in lines), lines[0]
    assert "Traceback" not in result.stdout.str()
    assert not list((root / "systemone" / "jev-latest").glob("*/*.json"))  # nothing half-recorded


@pytest.mark.parametrize(
    "fault",
    [
        "no-usage",
        "float-usage",
        "unprefixed-extra",
        "nan",  # NaN in an x_ field the analysis never reads
        "score-no-legend",
        "legend-1-based",
        "confidence-over",
        "confidence-margin",
        "choice-no-confidence",
        "extra-answer",
        "boolean-type",
        "plain-content-type",
    ],
)
def test_faults_in_what_the_analysis_does_not_read_are_tolerated(
    pytester: pytest.Pytester, mock: Any, fault: str
) -> None:
    root, recorded = pytester.path / "cassettes", pytester.path / "recorded.json"
    with jevcompat_mock(mock.MockConfig(faults=frozenset({fault}))) as server:
        result = run(pytester, root, f"--sys1cal-report={recorded}", url=server.url)
    result.assert_outcomes(passed=SELECTED)
    replayed = pytester.path / "replayed.json"
    run(pytester, root, f"--sys1cal-report={replayed}").assert_outcomes(passed=SELECTED)
    assert report_items(replayed) == report_items(recorded)


def test_an_unknown_model_name_is_the_servers_error_and_stops_the_recording(
    pytester: pytest.Pytester, mock: Any
) -> None:
    """The server's words on the item, and the recording stops at the first such answer (issue 24: every request
    names the same model), listing the models the server serves."""
    root = pytester.path / "cassettes"
    with jevcompat_mock(mock.MockConfig()) as server:
        result = run(pytester, root, "--sys1cal-model-version=not-a-model", url=server.url)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*server error: HTTP 400: Unknown model: not-a-model (the server does not serve the model 'not-a-model', "
         "sent from --sys1cal-model-version; it serves: jev-latest, mock (GET http://127.0.0.1:*/v1/models); send one "
         "of them with --sys1cal-model-id (the version still names the cassette folder))*", "*Interrupted: sys1cal: *Unknown model: not-a-model*"]
    )  # fmt: skip
