"""`POST /v1/systemone`: TypeSafe's Jev, and any server that speaks its wire format.

One request per repeat carries every question of the rendering: the server reads the state once and
answers the questions in isolation, which is also how the paper queried Jev.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..dataset import Rendering
from ..questions import CHOICE_OPTIONS, NOUL, SCORE, QuestionTexts, build_questions, questions_from
from ..strict_json import DuplicateKey
from ..vocabulary import SCORE_LEVELS
from .base import (
    AnswerError,
    ModelAdapter,
    ServerError,
    WireRequest,
    WireResponse,
    check_distribution,
    check_probability,
    encode_json,
    quote,
)

SCORE_KEYS = tuple(str(j) for j in range(SCORE_LEVELS))
# The answer types accepted for each question type: Vercel's gateway calls Noul "boolean".
ANSWER_TYPES = {"noul": ("noul", "boolean"), "choice": ("choice",), "score": ("score",)}
# A Noul answer may also carry its two-sided distribution (typed-gguf: {"yes": p, "no": 1 − p}); when it
# does, P(yes) must agree with `noul` to within rounding (two 2-decimal roundings and a renormalisation
# stay under 0.01), or the answer contradicts itself and fails the item.
NOUL_SIDES = (("yes", "no"), ("true", "false"))
NOUL_AGREEMENT = 0.02
# The wire contract's MUSTs on the fields that restate the probabilities (docs/wire.md §1): `choice` is the top
# option within the rounding of two decimals, and `score` = Σ i·p_i within 0.02 + r·(1 + n(n−1)/2), r = 0.005
# (0.25 for ten levels). A server that breaks them may have put its probabilities under the wrong keys.
CHOICE_ARGMAX = 0.005
SCORE_EXPECTATION = 0.02 + 0.005 * (1 + SCORE_LEVELS * (SCORE_LEVELS - 1) / 2)
# typed-gguf's errors on /v1/systemone: a 500 whose `detail` is "E_CODE: message". These codes are its
# verdict on the server's setup (every request fails alike: stop the run) or on this request (the same
# request fails again: fail the item at once); any other 5xx is retried as usual.
TYPED_ERROR = re.compile(r"^(E_[A-Z0-9_]+):")
SETUP_ERRORS = frozenset({
    "E_RUNTIME_MISSING", "E_RUNTIME_SYMBOLS", "E_RUNTIME_BUILD_OLD", "E_MODEL_ARCH_UNSUPPORTED",
    "E_TEMPLATE_UNRESOLVED", "E_ROLE_SPLIT_UNSUPPORTED", "E_GGUF_CORRUPT", "E_SHA256_MISMATCH",
    "E_REGISTRY_CORRUPT",
})  # fmt: skip
REQUEST_ERRORS = frozenset({"E_CTX_TOO_SMALL", "E_SEQ_MAX_EXCEEDED", "E_CANDIDATE_COLLISION"})
# typed-gguf's 422 for a `model` that is neither a registry alias nor jev-latest: every request fails alike.
MODEL_NOT_FOUND = re.compile(r"\bE_MODEL_NOT_FOUND\b")


class SystemOneAdapter(ModelAdapter):
    """Any `/v1/systemone` server: `--sys1cal-base-url` and `--sys1cal-model-version` say which."""

    name = "systemone"
    replay_cache = True
    default_version = "jev-latest"
    default_base_url = "http://127.0.0.1:8787"
    base_url_env = "SYS1CAL_BASE_URL"
    key_env = "SYS1CAL_API_KEY"

    def requests(self, rendering: Rendering, question_ids: Sequence[str]) -> list[WireRequest]:
        question_ids = tuple(question_ids)
        # The bytes are spliced from the state's stored compact JSON and the questions' JSON: the same bytes as
        # encoding the whole body (object keys keep their order, the separators are the same), without parsing
        # the state or encoding questions that an earlier rendering with the same texts was asked.
        encoded = (
            f'{{"model":{encode_json(self.sent_model)},"state":{rendering.state_json},'
            f'"questions":{_questions_json(QuestionTexts.of(rendering), question_ids)}}}'
        ).encode()
        body = _Body(self.sent_model, rendering, question_ids)
        return [WireRequest("POST", f"{self.base_url}/v1/systemone", body, self.json_headers(), encoded)]

    def parse(self, question_ids: Sequence[str], responses: Sequence[WireResponse]) -> dict[str, Any]:
        (response,) = responses
        try:
            body = response.json()
        except DuplicateKey as exc:
            raise AnswerError(
                f"the response is refused: {exc}: {quote(response.content.decode('utf-8', 'replace'))}"
            ) from None
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

    def error(self, response: WireResponse) -> ServerError:
        """The server's error; typed-gguf's error codes (in a 500 or 422) say whether retrying, or going on, can help."""
        error = super().error(response)
        message, status = error.message, response.status
        if status < 500 and MODEL_NOT_FOUND.search(message):
            return ServerError(
                status,
                f"{message} (the server does not know the model {self.sent_model!r}, which the plugin sends from "
                f"{self.model_id_source}: name one it serves with --sys1cal-model-id; typed-gguf takes a registry "
                "alias or jev-latest)",
                fatal=True,
            )
        match = TYPED_ERROR.match(message) if status == 500 else None
        code = match.group(1) if match else None
        if code in SETUP_ERRORS:
            return ServerError(
                status, f"{message} (the server cannot answer any request; not retried)", retryable=False, fatal=True
            )
        if code in REQUEST_ERRORS:
            return ServerError(status, f"{message} (the same request fails again; not retried)", retryable=False)
        return error


@functools.lru_cache(maxsize=256)
def _questions_json(texts: QuestionTexts, question_ids: tuple[str, ...]) -> str:
    """The questions' JSON text. Cached on the texts they are built from (a handful of distinct ones in a
    dataset: the renderings of a latent problem share them), as an immutable string."""
    return encode_json(questions_from(texts, question_ids))


class _Body(Mapping[str, Any]):
    """The request body as an object, the state and the questions built only if someone reads them (the
    bytes sent are WireRequest.encoded)."""

    def __init__(self, version: str, rendering: Rendering, question_ids: tuple[str, ...]):
        self._fields: dict[str, Any] = {"model": version, "state": None, "questions": None}
        self._rendering = rendering
        self._question_ids = question_ids

    def __getitem__(self, key: str) -> Any:
        if key == "state":
            return self._rendering.state
        if key == "questions":
            return build_questions(self._rendering, self._question_ids)
        return self._fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)


def _parse_answer(qid: str, answer: dict[str, Any]) -> Any:
    """What the analysis needs from one answer, checked strictly; everything else is left alone.

    Tolerated, because servers that speak this wire differ there (docs/wire.md §1, docs/engines.md):
    extra fields in an answer or the envelope (a ``semif`` block, ``x_`` extensions and unprefixed ones,
    even a NaN in a field not read), a missing ``usage`` or ``confidence``, a confidence out of range or
    computed another way, a Score legend that is an object, a list, 1-based or absent, a missing ``choice`` or
    ``score`` field, integer probabilities, answers nobody asked for, and a Noul answer typed ``boolean`` (the
    Vercel AI Gateway's name). Required: the answer's type, a Noul value in [0, 1], Choice/Score
    ``probabilities`` whose keys are exactly the options (byte for byte) or ``"0".."9"``, each in [0, 1],
    summing to 1 within SUM_TOLERANCE, and ``choice``/``score`` fields, where present, that agree with them as
    the wire contract requires (CHOICE_ARGMAX, SCORE_EXPECTATION): one that disagrees is refused, never averaged
    in, since its probabilities may be under the wrong keys. A Noul ``probabilities`` block with
    sides yes/no or true/false (typed-gguf's) is checked too: a valid distribution whose yes side agrees
    with ``noul`` (NOUL_AGREEMENT), so a server that put P(no) in either place is caught, not averaged in.
    """
    expected = "noul" if qid == NOUL else "score" if qid == SCORE else "choice"
    what = _what(qid)
    kind = answer.get("type")
    if kind not in ANSWER_TYPES[expected]:
        raise AnswerError(f"{what} has type {kind!r}, expected {expected!r}: {quote(answer)}")
    if qid == NOUL:
        noul = check_probability(answer.get("noul"), f"{what}: noul", answer)
        _check_noul_sides(qid, noul, answer)
        return noul
    if qid == SCORE:
        # Keys are decimal strings on the wire ("0".."9"); the legend is informational and not checked.
        levels = check_distribution(answer.get("probabilities"), SCORE_KEYS, what, answer)
        _check_score_field(what, levels, answer)
        return levels
    options = CHOICE_OPTIONS[qid]
    probabilities = check_distribution(answer.get("probabilities"), options, what, answer)
    _check_choice_field(what, options, probabilities, answer)
    return probabilities[options.index("True")]


def _check_choice_field(
    what: str, options: tuple[str, ...], probabilities: list[float], answer: dict[str, Any]
) -> None:
    """`choice`, where present, must be an option whose probability is the top one (within CHOICE_ARGMAX)."""
    if "choice" not in answer:
        return
    said, top = answer["choice"], max(probabilities)
    if said not in options or probabilities[options.index(said)] < top - CHOICE_ARGMAX:
        best = options[probabilities.index(top)]
        raise AnswerError(
            f"{what} contradicts itself: choice = {quote(said)} but its probabilities make {best!r} the top option "
            f"({top:.3f}); the wire contract requires choice to be the argmax (docs/wire.md); answer: {quote(answer)}"
        )


def _check_score_field(what: str, levels: list[float], answer: dict[str, Any]) -> None:
    """`score`, where present, must be the distribution's expectation Σ i·p_i (within SCORE_EXPECTATION)."""
    if "score" not in answer:
        return
    said = answer["score"]
    expectation = sum(i * p for i, p in enumerate(levels))
    number = isinstance(said, int | float) and not isinstance(said, bool) and math.isfinite(said)
    if not number or abs(said - expectation) > SCORE_EXPECTATION:
        raise AnswerError(
            f"{what} contradicts itself: score = {quote(said)} but its probabilities give Σ i·p_i = "
            f"{expectation:.3f}; the wire contract requires the expectation (within {SCORE_EXPECTATION:g}, "
            f"docs/wire.md); answer: {quote(answer)}"
        )


@functools.lru_cache(maxsize=64)
def _what(qid: str) -> str:
    """How an error names the answer to `qid` (built once per question id, not per answer)."""
    return f"answer to {qid!r}"


def _check_noul_sides(qid: str, noul: float, answer: dict[str, Any]) -> None:
    """A Noul `probabilities` block with yes/no (or true/false) sides must agree with `noul`; one of any other
    shape is left alone, like any extra field."""
    sides = answer.get("probabilities")
    if not isinstance(sides, dict):  # no block (the common case), or one of another shape
        return
    keys = next((pair for pair in NOUL_SIDES if set(sides) == set(pair)), None)
    if keys is None:
        return
    p_yes = check_distribution(sides, keys, f"{_what(qid)}: noul probabilities", answer)[0]
    if abs(p_yes - noul) > NOUL_AGREEMENT:
        raise AnswerError(
            f"{_what(qid)} contradicts itself: noul = {noul:g} but its probabilities give "
            f"P({keys[0]}) = {p_yes:g}; answer: {quote(answer)}"
        )


class JevAdapter(SystemOneAdapter):
    """TypeSafe's Jev, pinned to the version the thresholds were tuned on."""

    name = "jev"
    replay_cache = True
    default_version = "jev-1.13.0"
    default_base_url = "https://api.typesafe.ai"
    base_url_env = "TYPESAFE_BASE_URL"
    key_env = "TYPESAFE_API_KEY"
    key_required = True
