"""SemIf-style readout: option probabilities from the answer-slot logprobs of an ordinary language model,
over any OpenAI-compatible server that returns ``top_logprobs`` (llama.cpp's server, vLLM, SGLang). One
request per question, options lettered A, B, … in the order asked, P(option) ∝ the summed probability of
every spelling of its letter, renormalised. The prompt, the prefill, the modes and the settings (mode,
top-K, prefill; environment variables, else the manifest's recorded ones): docs/wire.md §2.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..dataset import Rendering
from ..errors import InputError, MeasurementError
from ..questions import CHOICE_OPTIONS, NOUL, SCORE, build_questions
from ..strict_json import DuplicateKey
from ..vocabulary import SCORE_LEVELS
from .base import (
    AnswerError,
    ModelAdapter,
    ServerError,
    WireRequest,
    WireResponse,
    check_probability,
    names_unknown_model,
    quote,
)

LETTERS = "ABCDEFGHIJKLMNOP"
PROMPT_VERSION = "sys1cal-semif-direct-options-v1"
SYSTEM = (
    "Apply the supplied criterion to the supplied evidence. Choose exactly one listed option. "
    "Respond with only its uppercase letter."
)
MODES = ("chat", "completion")
DEFAULT_TOP_K = 20
DEFAULT_PREFILL = "Answer:"
# SemIf's wording when a Noul question describes only one side, or none.
NOUL_DEFAULTS = {"true": "The answer to the question is yes.", "false": "The answer to the question is no."}
# Characters around a letter that still make the token a spelling of it: whitespace, and the word-start
# markers of SentencePiece (▁) and byte-level BPE (Ġ, Ċ) for servers that return raw token pieces.
SPELLING_PADDING = " \t\r\n\u2581\u0120\u010a"
# exp(logprob) summed over options may exceed 1 only by float noise.
MASS_TOLERANCE = 1e-3
SHOWN_ALTERNATIVES = 8
# Alternatives beyond the top-K asked that an answer may carry: vLLM's legacy completions add the sampled
# token when it is not among the top K.
EXTRA_ALTERNATIVES = 1
# The settings an environment variable sets (which then win over a manifest's recorded ones).
_SETTING_ENV = {"mode": "SYS1CAL_SEMIF_MODE", "top_k": "SYS1CAL_SEMIF_TOP_K", "prefill": "SYS1CAL_SEMIF_PREFILL"}
_ROUTES = {"chat": "/v1/chat/completions", "completion": "/v1/completions"}


class TooManyOptions(MeasurementError):
    """A question with more options than there are answer letters: the rendering cannot be asked this way."""


def options_of(question: Mapping[str, Any]) -> list[Any]:
    """The option descriptions of a `/v1/systemone` question, in the order they are lettered."""
    kind = question.get("type")
    criteria = question.get("criteria")
    if kind == "noul":
        sides = criteria if isinstance(criteria, Mapping) else {}
        options = [sides.get(side) or NOUL_DEFAULTS[side] for side in ("true", "false")]
    elif kind == "choice" and isinstance(criteria, Mapping):
        # SemIf replaces a null description by the option's label.
        options = [label if description is None else description for label, description in criteria.items()]
    elif kind == "score" and isinstance(criteria, list):
        options = list(criteria)
    else:
        raise MeasurementError(
            f"no SemIf readout for this question (type {kind!r}); expected noul, or choice/score with criteria"
        )
    if len(options) > len(LETTERS):
        raise TooManyOptions(
            f"a {kind} question with {len(options)} options cannot be lettered: the SemIf readout supports at "
            f"most {len(LETTERS)} options (answer letters {LETTERS[0]}–{LETTERS[-1]})"
        )
    if len(options) < 2:
        raise MeasurementError(f"a {kind} question needs at least 2 options, got {len(options)}")
    # Descriptions may be structured (objects, arrays): they go into the JSON prompt as they are.
    return options


def letters_hint(count: int) -> str:
    letters = list(LETTERS[:count])
    return " or ".join(letters) if count == 2 else f"{', '.join(letters[:-1])} or {letters[-1]}"


def user_prompt(state: Any, question: Mapping[str, Any]) -> tuple[str, int]:
    """The user message (SemIf's JSON, then the closing sentence) and the number of options."""
    options = options_of(question)
    payload = json.dumps(
        {
            "evidence": state,
            "criterion": question.get("instructions"),
            "options": [{"letter": LETTERS[i], "description": d} for i, d in enumerate(options)],
        },
        ensure_ascii=False,
    )
    return f"{payload}\n\nAnswer with only the letter of your choice ({letters_hint(len(options))}).", len(options)


# ---------------------------------------------------------------------------------------- readout


def answer_slot(body: Any, asked: int | None = None) -> list[tuple[str, float]]:
    """(token, logprob) alternatives of the first generated position, in either shape servers use:
    ``choices[0].logprobs.content[0].top_logprobs`` (chat completions; llama.cpp also for completions)
    or ``choices[0].logprobs.top_logprobs[0]`` as a token → logprob object (OpenAI legacy completions,
    vLLM). AnswerError when there are none, and (fatal: every answer of that server would be alike) when
    there are more than the `asked` top-K allow: such an answer is refused, never stored or trimmed."""
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    logprobs = first.get("logprobs") if first else None
    alternatives: list[tuple[Any, Any]] | None = None
    if isinstance(logprobs, dict):
        content = logprobs.get("content")
        legacy = logprobs.get("top_logprobs")
        if isinstance(content, list) and content and isinstance(content[0], dict):
            top = content[0].get("top_logprobs")
            if isinstance(top, list):
                alternatives = [(entry.get("token"), entry.get("logprob")) for entry in top if isinstance(entry, dict)]
        elif isinstance(legacy, list) and legacy and isinstance(legacy[0], dict):
            alternatives = list(legacy[0].items())
    if not alternatives:
        raise AnswerError(
            "the server returned no logprobs for the answer slot; the SemIf readout needs an "
            "OpenAI-compatible server that returns top_logprobs (llama.cpp's llama-server, vLLM, ...); "
            f"response: {quote(body)}"
        )
    if asked is not None and len(alternatives) > asked + EXTRA_ALTERNATIVES:
        raise AnswerError(
            f"the server returned {len(alternatives):,} answer-slot alternatives where {asked} were asked "
            f"(SYS1CAL_SEMIF_TOP_K); refused, not stored: this server does not honour top_logprobs/logprobs, so "
            "every answer would be as large (use a server that does, such as llama.cpp's llama-server or vLLM)",
            fatal=True,
        )
    slot: list[tuple[str, float]] = []
    for token, logprob in alternatives:
        if not isinstance(token, str):
            raise AnswerError(f"an answer-slot alternative has no token text: {quote(alternatives)}")
        if isinstance(logprob, bool) or not isinstance(logprob, (int, float)) or math.isnan(logprob) or logprob > 1e-6:
            raise AnswerError(
                f"answer-slot logprob of {token!r} is {quote(logprob)}, not a log-probability: {quote(body)}"
            )
        slot.append((token, float(logprob)))
    return slot


def letter_of(token: str, count: int) -> int | None:
    """The option index a token spells (its letter, surrounded by nothing but whitespace), or None."""
    stripped = token.strip(SPELLING_PADDING)
    index = LETTERS.find(stripped) if len(stripped) == 1 else -1
    return index if 0 <= index < count else None


def read_options(body: Any, count: int, asked: int | None = None) -> tuple[list[float], float]:
    """(P(option) renormalised over the `count` options, coverage) from one response body (`asked`: the
    top-K requested, see answer_slot)."""
    slot = answer_slot(body, asked)
    mass = [0.0] * count
    for token, logprob in slot:
        index = letter_of(token, count)
        if index is not None:
            mass[index] += math.exp(logprob)
    coverage = math.fsum(mass)
    if coverage <= 0.0:
        shown = ", ".join(f"{token!r} {logprob:.2f}" for token, logprob in slot[:SHOWN_ALTERNATIVES])
        raise AnswerError(
            f"the answer-slot logprobs hold no option token ({letters_hint(count)}, with or without a leading "
            f"space) among the top {len(slot)}: {shown}{', …' if len(slot) > SHOWN_ALTERNATIVES else ''}; "
            f"the model did not answer with a letter (raise SYS1CAL_SEMIF_TOP_K, or check the prompt mode)"
        )
    if coverage > 1.0 + MASS_TOLERANCE:
        raise AnswerError(f"the option tokens' probabilities sum to {coverage:.4f} > 1; response: {quote(body)}")
    return [m / coverage for m in mass], min(coverage, 1.0)


# ---------------------------------------------------------------------------------------- adapter


class SemIfAdapter(ModelAdapter):
    """SemIf's readout over an OpenAI-compatible server; see the module docstring for its settings."""

    name = "semif"
    replay_cache = True
    default_version = "smollm2-135m-instruct-q4_1"
    default_base_url = "http://127.0.0.1:8080"
    base_url_env = "SYS1CAL_SEMIF_BASE_URL"
    key_env = "SYS1CAL_SEMIF_API_KEY"
    # llama.cpp's server answers whatever model name is sent and lists only the model it loaded: its list is shown
    # by the preflight, not enforced (a server that does refuse the name stops the recording at once).
    strict_model_names = False

    def __init__(self, version: str | None, base_url: str | None, environ: Mapping[str, str]):
        super().__init__(version=version, base_url=base_url, environ=environ)
        self.mode = environ.get("SYS1CAL_SEMIF_MODE", "chat").strip() or "chat"
        if self.mode not in MODES:
            raise InputError(f"SYS1CAL_SEMIF_MODE={self.mode!r}: choose one of {', '.join(MODES)}")
        text = environ.get("SYS1CAL_SEMIF_TOP_K", "").strip()
        try:
            self.top_k = int(text) if text else DEFAULT_TOP_K
        except ValueError:
            raise InputError(f"SYS1CAL_SEMIF_TOP_K={text!r} is not a whole number") from None
        if self.top_k < 1:
            raise InputError(f"SYS1CAL_SEMIF_TOP_K={self.top_k} must be at least 1")
        self.prefill = environ.get("SYS1CAL_SEMIF_PREFILL", DEFAULT_PREFILL)
        self._from_environment = {key for key, name in _SETTING_ENV.items() if name in environ}

    def settings(self) -> dict[str, Any]:
        """What shapes the requests, for manifests and notes."""
        return {"mode": self.mode, "top_k": self.top_k, "prefill": self.prefill, "prompt": PROMPT_VERSION}

    def use_recorded_settings(self, settings: Mapping[str, Any]) -> None:
        """The folder's settings where the environment sets none; one the environment sets differently stops
        the run: a replay would ask what was never recorded, a recording would mix two kinds of interaction
        (chat and completion) in one folder."""
        for key in sorted(self._from_environment):
            recorded = settings.get(key)
            if recorded is not None and recorded != getattr(self, key):
                raise InputError(
                    f"{_SETTING_ENV[key]}={getattr(self, key)!r}, but this folder was recorded with {key} "
                    f"{recorded!r} (its manifest's settings): unset {_SETTING_ENV[key]} to use the folder's, or "
                    "record into another folder (--sys1cal-model-version), or re-record this one whole "
                    "(--sys1cal-record-mode=all)"
                )
        mode, top_k, prefill = settings.get("mode"), settings.get("top_k"), settings.get("prefill")
        if "mode" not in self._from_environment and mode in MODES:
            self.mode = mode
        if "top_k" not in self._from_environment and isinstance(top_k, int) and top_k >= 1:
            self.top_k = top_k
        if "prefill" not in self._from_environment and isinstance(prefill, str):
            self.prefill = prefill

    def error(self, response: WireResponse) -> ServerError:
        """The server's error; a route it does not have (404, 405) is the prompt mode's, the same for every request:
        the run stops at once, naming the setting that asks the other route."""
        error = super().error(response)
        # A 404 that says the model sent is unknown is the model's, not the route's: the recording's own check
        # (recording/give_up.py) names the models the server serves.
        if response.status not in (404, 405) or names_unknown_model(response, self.version, error.message):
            return error
        other = "chat" if self.mode == "completion" else "completion"
        return ServerError(
            response.status,
            f"{error.message} ({self.base_url}{_ROUTES[self.mode]}, asked because SYS1CAL_SEMIF_MODE is {self.mode}): "
            f"if this server serves {_ROUTES[other]}, set SYS1CAL_SEMIF_MODE={other}; else check --sys1cal-base-url "
            "(the origin, without /v1)",
            retryable=False,
            fatal=True,
        )

    def body(self, state: Any, question: Mapping[str, Any]) -> dict[str, Any]:
        """The request body that asks one question."""
        user, _ = user_prompt(state, question)
        common = {"model": self.sent_model, "max_tokens": 1, "temperature": 0, "cache_prompt": False}
        if self.mode == "completion":
            prompt = f"{SYSTEM}\n\n{user}\n\n{self.prefill}"
            return {**common, "prompt": prompt, "logprobs": self.top_k}
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
        body = {**common, "messages": messages, "logprobs": True, "top_logprobs": self.top_k}
        if self.prefill:
            messages.append({"role": "assistant", "content": self.prefill})
            body.update(continue_final_message=True, add_generation_prompt=False)
        return body

    def requests(self, rendering: Rendering, question_ids: Sequence[str]) -> list[WireRequest]:
        headers = self.json_headers()
        route = _ROUTES[self.mode]
        questions = build_questions(rendering, tuple(question_ids))
        return [
            WireRequest("POST", f"{self.base_url}{route}", self.body(rendering.state, questions[qid]), headers)
            for qid in question_ids
        ]

    def parse(self, question_ids: Sequence[str], responses: Sequence[WireResponse]) -> dict[str, Any]:
        if len(responses) != len(question_ids):
            raise AnswerError(f"{len(responses)} responses to {len(question_ids)} questions")
        sample: dict[str, Any] = {}
        coverage: dict[str, float] = {}
        for qid, response in zip(question_ids, responses, strict=True):
            try:
                body = response.json()
            except DuplicateKey as exc:
                text = response.content.decode("utf-8", "replace")
                raise AnswerError(f"the response to {qid!r} is refused: {exc}: {quote(text)}") from None
            except ValueError:
                text = response.content.decode("utf-8", "replace")
                raise AnswerError(f"the response to {qid!r} is not JSON: {quote(text)}") from None
            count = SCORE_LEVELS if qid == SCORE else 2
            try:
                probabilities, coverage[qid] = read_options(body, count, self.top_k)
            except AnswerError as exc:
                raise AnswerError(f"answer to {qid!r}: {exc}", fatal=exc.fatal) from None
            if qid == SCORE:
                sample[qid] = probabilities
            elif qid == NOUL:
                sample[qid] = check_probability(probabilities[0], f"answer to {qid!r}: P(true)", body)
            elif qid in CHOICE_OPTIONS:
                p_true = probabilities[CHOICE_OPTIONS[qid].index("True")]
                sample[qid] = check_probability(p_true, f"answer to {qid!r}: P(True)", body)
            else:
                raise ValueError(f"unknown question id {qid!r}")
        sample["coverage"] = coverage
        return sample
