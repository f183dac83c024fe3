"""`POST /v1/systemone`: TypeSafe's Jev, and any server that speaks its wire format.

One request per repeat carries every question of the rendering: the server reads the state once and
answers the questions in isolation, which is also how the paper queried Jev.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..dataset import SCORE_LEVELS, Rendering
from ..questions import CHOICE_OPTIONS, NOUL, SCORE, build_questions
from .base import (
    AnswerError,
    ModelAdapter,
    WireRequest,
    WireResponse,
    check_distribution,
    check_probability,
    encode_json,
    quote,
)

SCORE_KEYS = [str(j) for j in range(SCORE_LEVELS)]
# The answer types accepted for each question type: Vercel's gateway calls Noul "boolean".
ANSWER_TYPES = {"noul": ("noul", "boolean"), "choice": ("choice",), "score": ("score",)}


class SystemOneAdapter(ModelAdapter):
    """Any `/v1/systemone` server: `--sys1cal-base-url` and `--sys1cal-model-version` say which."""

    name = "systemone"
    default_version = "jev-latest"
    default_base_url = "http://127.0.0.1:8787"
    base_url_env = "SYS1CAL_BASE_URL"
    key_env = "SYS1CAL_API_KEY"

    def requests(self, rendering: Rendering, question_ids: Sequence[str]) -> list[WireRequest]:
        questions = build_questions(rendering, tuple(question_ids))
        # The bytes are spliced from the state's stored compact JSON: the same bytes as encoding the whole
        # body (object keys keep their order, the separators are the same), without parsing the state.
        encoded = (
            f'{{"model":{encode_json(self.version)},"state":{rendering.state_json},'
            f'"questions":{encode_json(questions)}}}'
        ).encode()
        body = _Body(self.version, rendering, questions)
        return [WireRequest("POST", f"{self.base_url}/v1/systemone", body, self.json_headers(), encoded)]

    def parse(self, question_ids: Sequence[str], responses: Sequence[WireResponse]) -> dict[str, Any]:
        (response,) = responses
        try:
            body = response.json()
        except ValueError:
            raise AnswerError(
                f"the response is not JSON: {quote(response.content.decode('utf-8', 'replace'))}"
            ) from None
        answers = body.get("answers") if isinstance(body, dict) else None
        if not isinstance(answers, dict):
            raise AnswerError(f"the response has no 'answers' object: {quote(body)}")
        sample: dict[str, Any] = {}
        for qid in question_ids:
            answer = answers.get(qid)
            if not isinstance(answer, dict):
                raise AnswerError(f"no answer to question {qid!r}; answers: {quote(answers)}")
            sample[qid] = _parse_answer(qid, answer)
        return sample


class _Body(Mapping[str, Any]):
    """The request body as an object, the state parsed only if someone reads it (the bytes sent are
    WireRequest.encoded)."""

    def __init__(self, version: str, rendering: Rendering, questions: dict[str, Any]):
        self._fields: dict[str, Any] = {"model": version, "state": None, "questions": questions}
        self._rendering = rendering

    def __getitem__(self, key: str) -> Any:
        if key == "state":
            return self._rendering.state
        return self._fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)


def _parse_answer(qid: str, answer: dict[str, Any]) -> Any:
    """What the analysis needs from one answer, checked strictly; everything else is left alone.

    Tolerated, because servers that speak this wire differ there (jev-wire-contract.md §3, §8 and
    local-models.md): extra fields in an answer or the envelope (a Noul ``probabilities`` block, a
    ``semif`` block, ``x_`` extensions and unprefixed ones, even a NaN in a field not read), a missing
    ``usage`` or ``confidence``, a confidence out of range or computed another way, a Score legend that
    is an object, a list, 1-based or absent, ``choice``/``score`` fields that disagree with the
    probabilities, integer probabilities, answers nobody asked for, and a Noul answer typed ``boolean``
    (the Vercel AI Gateway's name). Required: the answer's type, a Noul value in [0, 1], and Choice/Score
    ``probabilities`` whose keys are exactly the options (byte for byte) or ``"0".."9"``, each in [0, 1],
    summing to 1 within SUM_TOLERANCE.
    """
    expected = "noul" if qid == NOUL else "score" if qid == SCORE else "choice"
    kind = answer.get("type")
    if kind not in ANSWER_TYPES[expected]:
        raise AnswerError(f"answer to {qid!r} has type {kind!r}, expected {expected!r}: {quote(answer)}")
    if qid == NOUL:
        return check_probability(answer.get("noul"), f"answer to {qid!r}: noul", answer)
    if qid == SCORE:
        # Keys are decimal strings on the wire ("0".."9"); the legend is informational and not checked.
        return check_distribution(answer.get("probabilities"), SCORE_KEYS, f"answer to {qid!r}", answer)
    options = CHOICE_OPTIONS[qid]
    probabilities = check_distribution(answer.get("probabilities"), options, f"answer to {qid!r}", answer)
    return probabilities[options.index("True")]


class JevAdapter(SystemOneAdapter):
    """TypeSafe's Jev, pinned to the version the thresholds were tuned on."""

    name = "jev"
    default_version = "jev-1.13.0"
    default_base_url = "https://api.typesafe.ai"
    base_url_env = "TYPESAFE_BASE_URL"
    key_env = "TYPESAFE_API_KEY"
    key_required = True
