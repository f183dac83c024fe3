"""A wrong model name costs seconds (issue 24), and the rules every wire shares hold for an adapter registered
through the hooks too (issue 28): any server's "unknown model" (a 400/404 whose message names the model and
says it is not there, or an error code meaning it) stops the recording at its first such answer, listing the
models ``GET /v1/models`` names. Against the jevcompat mock (the Jev wire), tests/misbehave.py's server on the
OpenAI-compatible wire, and a third-party adapter from a conftest."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

# pytester's in-process runs forget modules first imported during a run; import the async HTTP stack once,
# before any run (see tests/recording/test_recording.py).
import anyio._backends._asyncio  # noqa: F401
import httpcore._backends.anyio  # noqa: F401
import pytest
from jevcompat.mock import MockConfig

from pytest_sys1cal.models.base import WireResponse, names_unknown_model, served_models
from tests.loopback import jevcompat_mock
from tests.misbehave import ENVIRONMENT, Misbehaving, recording, subset
from tests.runs import run


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


def answer(status: int, body: object) -> WireResponse:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return WireResponse(status, {"content-type": "application/json"}, content)


# ------------------------------------------------------------------------------------------ the rule


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, {"detail": {"error_type": "api_usage_error", "message": "Unknown model: jev-1.14.0"}}),  # Jev, jevcompat
        (400, {"error": "Unknown model: jev-1.14.0."}),  # jevcompat's error-flat fault, a full stop after the name
        (404, {"detail": {"error_type": "not_found", "message": "Model not served: jev-1.14.0"}}),
        (
            404,
            {"object": "error", "message": "The model `jev-1.14.0` does not exist.", "type": "NotFoundError"},
        ),  # vLLM
        (404, {"error": 'model "jev-1.14.0" not found, try pulling it first'}),  # Ollama
        (400, {"error": {"message": "jev-1.14.0 is not a valid model ID", "code": 400}}),  # OpenRouter
        (400, {"error": {"message": "Invalid model name passed in model=jev-1.14.0"}}),  # LiteLLM
        (
            404,
            {"error": {"message": "No access.", "type": "invalid_request_error", "code": "model_not_found"}},
        ),  # OpenAI
        (422, {"detail": "E_MODEL_NOT_FOUND: jev-1.14.0 is not in the registry"}),  # typed-gguf
    ],
)
def test_every_servers_way_of_saying_unknown_model_is_recognised(status: int, body: object) -> None:
    assert names_unknown_model(answer(status, body), "jev-1.14.0")


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, {"detail": "Context of 40000 tokens is too long for model jev-1.14.0"}),  # names it, but it exists
        (400, {"detail": "Unknown question type 'boolean'"}),  # unknown, but not the model
        (422, {"detail": [{"loc": ["body", "state"], "msg": "Field required", "input": {"model": "jev-1.14.0"}}]}),
        (500, {"detail": "Unknown model: jev-1.14.0"}),  # a server fault, retried as such
        (400, {"detail": "Unknown model: jev-1.14.0-beta"}),  # another model's name
    ],
)
def test_other_errors_are_not_taken_for_an_unknown_model(status: int, body: object) -> None:
    assert not names_unknown_model(answer(status, body), "jev-1.14.0")


def test_both_shapes_of_model_list_are_read() -> None:
    assert served_models(b'{"models": [{"name": "jev-latest"}, {"name": "mock"}]}') == ["jev-latest", "mock"]
    assert served_models(b'{"object": "list", "data": [{"id": "smollm2"}]}') == ["smollm2"]
    assert served_models(b'{"detail": "no"}') is None and served_models(b"<html>") is None


# ------------------------------------------------------------------------------------------ runs


@pytest.mark.parametrize("model", ["systemone", "jev"])
def test_the_jevcompat_mock_refusing_the_model_stops_the_recording_at_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, model: str
) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test-key-for-the-jev-wire")
    dataset, _ = subset(tmp_path, 30)
    config = MockConfig()
    with jevcompat_mock(config) as mock:
        result = run(
            pytester, *recording(model, mock.url, dataset, tmp_path / "c", "--sys1cal-model-version=jev-1.14.0")
        )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*server error: HTTP 400: Unknown model: jev-1.14.0 (the server does not serve the model 'jev-1.14.0', sent "
         f"from --sys1cal-model-version; it serves: jev-latest, mock (GET {mock.url}/v1/models); send one of them with "
         "--sys1cal-model-id (the version still names the cassette folder)). Stopped at the first such answer: every request names the same model*",
         "*Interrupted: sys1cal: *Unknown model: jev-1.14.0*"]
    )  # fmt: skip
    assert config.requests <= 8  # the requests already in flight at most, not 30
    assert not list((tmp_path / "c").rglob("*/*.json"))


def test_an_openai_compatible_server_refusing_the_model_stops_the_recording_at_once(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    dataset, _ = subset(tmp_path, 10)
    refused = {"object": "error", "message": "The model `gpt-nothing` does not exist.", "type": "NotFoundError"}
    default = ("status", 404, {}, json.dumps(refused).encode())
    with Misbehaving([], default=default, wire="semif", models=["smollm2-135m", "gemma-3-270m"]) as server:
        result = run(
            pytester, *recording("semif", server.url, dataset, tmp_path / "c", "--sys1cal-model-version=gpt-nothing")
        )
        sent = server.requests
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*Interrupted: sys1cal: *HTTP 404: The model `gpt-nothing` does not exist. (the server does not serve the "
         "model 'gpt-nothing', sent from --sys1cal-model-version; it serves: smollm2-135m, gemma-3-270m (GET "
         "http://127.0.0.1:*/v1/models); send one of them with --sys1cal-model-id*"]
    )  # fmt: skip
    assert sent <= 8, sent


ADAPTER = '''
    import json
    import pytest
    from pytest_sys1cal.models.base import ModelAdapter, ServerError, WireRequest

    class Mine(ModelAdapter):
        """A third-party adapter on a wire of its own reading: one request per rendering, its own error
        reading (which knows nothing of unknown models, redirects or waits)."""

        name = "mine"
        default_version = "mine-1"
        default_base_url = "http://127.0.0.1:9"

        def requests(self, rendering, question_ids):
            from pytest_sys1cal.questions import build_questions
            body = {"model": self.version, "state": rendering.state, "questions": build_questions(rendering, tuple(question_ids))}
            return [WireRequest("POST", f"{self.base_url}/v1/systemone", body, self.json_headers())]

        def parse(self, question_ids, responses):
            answers = responses[0].json()["answers"]
            return {"noul": answers["noul"]["noul"], "choice": answers["choice"]["probabilities"]["True"],
                    "choice_swapped": answers["choice_swapped"]["probabilities"]["True"],
                    "score": [answers["score"]["probabilities"][str(j)] for j in range(10)]}

        def error(self, response):
            return ServerError(response.status, "mine says no")

    @pytest.hookimpl(optionalhook=True)
    def pytest_sys1cal_adapters():
        return {"mine": Mine}
'''
OLLAMA_UNKNOWN = ("status", 404, {}, b'{"error": "model \\"mine-1\\" not found, try pulling it first"}')


@pytest.mark.parametrize(
    ("default", "expected"),
    [
        (OLLAMA_UNKNOWN, "*HTTP 404: mine says no (the server does not serve the model 'mine-1'*it serves: mine-2*"),
        (
            ("status", 429, {"Retry-After": "3600"}, b"{}"),
            "*the server asked to wait 3,600 s (1.0 h) (Retry-After: 3600)*",
        ),
        (
            ("hang",),
            "*the server at http://127.0.0.1:* has answered no request successfully for 1 s (* cut at the 0.3 s deadline*",
        ),
        (("status", 308, {"Location": "http://127.0.0.1:9/v2/systemone"}, b""), "*HTTP 308: the server redirects *"),
        (("big", 5_000_000), "*is larger than the 1,000,000 bytes (1 MB) a response may have*"),
    ],
    ids=["unknown-model", "long-wait", "stall", "redirect", "big-body"],
)
def test_an_adapter_registered_through_the_hooks_gets_every_wire_rule(
    pytester: pytest.Pytester, tmp_path: Path, default: tuple[object, ...], expected: str
) -> None:
    pytester.makeconftest(textwrap.dedent(ADAPTER))
    dataset, _ = subset(tmp_path, 6)
    with Misbehaving([], default=default, models=["mine-2"]) as server:
        result = run(
            pytester,
            *recording("mine", server.url, dataset, tmp_path / "c", "--sys1cal-timeout=0.3", "--sys1cal-stall-limit=1"),
        )
    # Each rule stops the recording at once, but an oversized body, which fails only its own rendering.
    stops = default[0] != "big"
    result.assert_outcomes(failed=1 if stops else 6)
    result.stdout.fnmatch_lines([expected])
    assert ("Interrupted: sys1cal:" in result.stdout.str()) == stops
