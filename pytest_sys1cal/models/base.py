"""The one small interface every model adapter implements, and the answer checks they share.

An adapter turns a rendering's questions into HTTP requests and the responses back into one sample
``{"noul": p, "choice": p, "choice_swapped": p, "score": [q_0..q_9]}`` (P(True) throughout). It never
sends anything itself: the run sends the requests (replaying, recording, retrying, concurrently or
not), so every adapter gets cassettes, retries and rate limits for free.
"""

from __future__ import annotations

import functools
import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .. import __version__, strict_json
from ..dataset import Rendering
from ..errors import InputError, MeasurementError

# Servers round probabilities (Jev and OpenRouter to 2 decimals), so a distribution may miss 1 by a few
# hundredths; beyond this it is malformed. Same floor as jevcompat's ε_sum.
SUM_TOLERANCE = 0.05
# Values a hair outside [0, 1] are float noise; anything further is a malformed answer.
RANGE_TOLERANCE = 1e-9
QUOTE_LIMIT = 400
_UNPARSED = object()


@dataclass(frozen=True)
class WireRequest:
    method: str
    url: str
    body: Any  # JSON-serialisable
    # Left out of the repr: they carry the key, and a traceback's --showlocals would show (and cut) it.
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    # The body's bytes when the adapter already built them (they must equal what `body` would encode to).
    encoded: bytes | None = None

    def content(self) -> bytes:
        # Compact JSON, never compressed: a compressed body cannot be matched or read in a cassette.
        if self.encoded is not None:
            return self.encoded
        return encode_json(self.body).encode("utf-8")


def encode_json(value: Any) -> str:
    """The request bodies' JSON: compact, UTF-8 text as is."""
    return _COMPACT.encode(value)


# json.dumps with these options would build an encoder per call.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def is_success(status: int) -> bool:
    """A 2xx answer: the only kind that is parsed, recorded or paid for."""
    return 200 <= status < 300


@dataclass(frozen=True)
class WireResponse:
    status: int
    headers: Mapping[str, str]
    content: bytes

    @property
    def ok(self) -> bool:
        return is_success(self.status)

    def json(self) -> Any:
        """The body parsed (once: the adapter's parse and reported_model both read it)."""
        cached = self.__dict__.get("_json", _UNPARSED)
        if cached is _UNPARSED:
            cached = strict_json.loads(self.content)  # a key twice is refused, never read as its last (DuplicateKey)
            object.__setattr__(self, "_json", cached)
        return cached


class AnswerError(MeasurementError):
    """The server answered, but not with a usable probability; fails the item, quoting the answer."""


class ServerError(MeasurementError):
    """A non-2xx response (or none at all), with the server's own words. `fatal` for problems that repeat on
    every request (authentication; a server that cannot answer anything, as its adapter recognises): the run
    stops rather than fail 365 items alike."""

    def __init__(
        self,
        status: int | None,
        message: str,
        *,
        retry_after: float | None = None,
        retryable: bool = True,
        fatal: bool = False,
    ):
        super().__init__(f"HTTP {status}: {message}" if status else message, fatal=fatal or status in (401, 403))
        self.status = status
        self.message = message
        self.retry_after = retry_after
        # An adapter that recognises a server's deterministic verdict in a 5xx (the same request gets the
        # same error) says so: the recorder then fails the item at once instead of retrying it.
        self.retryable = retryable


class ModelAdapter(ABC):
    """Base class of the built-in adapters; third-party adapters register through hookspecs.py."""

    name: ClassVar[str]
    default_version: ClassVar[str]
    default_base_url: ClassVar[str]
    base_url_env: ClassVar[str | None] = None
    key_env: ClassVar[str | None] = None
    key_required: ClassVar[bool] = False
    # Where the server lists the models it serves (None: the wire has no such list), and whether a model it
    # does not list is refused (the /v1/systemone contract refuses an unknown model; llama.cpp's
    # OpenAI-compatible server answers whatever name is sent, so a SemIf preflight only shows the list).
    models_path: ClassVar[str | None] = "/v1/models"
    strict_model_names: ClassVar[bool] = True
    # True when `parse` and `reported_model` depend on nothing but the responses, the question ids and
    # `settings()`: then a replay may take a rendering's row from the replay cache (store/replay_cache.py)
    # instead of parsing its cassette. Off unless an adapter's own class says so: a subclass does not inherit
    # it (it may override `parse` with anything).
    replay_cache: ClassVar[bool] = False
    # The model id sent to the server and pinned, where it is not the version (--sys1cal-model-id, or the one a
    # version folder's manifest says it was recorded under): the run sets it; None sends the version.
    model_id: str | None = None

    @property
    def sent_model(self) -> str:
        """The model id every request names and the server-reported model is checked against."""
        return self.model_id or self.version

    @property
    def model_id_source(self) -> str:
        """Where the id sent comes from, for the messages that name it."""
        return "--sys1cal-model-id" if self.model_id else "--sys1cal-model-version"

    def __init__(self, version: str | None, base_url: str | None, environ: Mapping[str, str]):
        self.version = version or self.default_version
        env_url = environ.get(self.base_url_env) if self.base_url_env else None
        self.base_url = (base_url or env_url or self.default_base_url).rstrip("/")
        # Surrounding whitespace is never part of a key (a secret pasted with its line break).
        self._raw_key = environ.get(self.key_env) if self.key_env else None
        self.api_key = (self._raw_key or "").strip() or None

    def missing_key(self) -> str | None:
        """Why this adapter cannot send live requests (None when it can): no key where one is required, or a
        key that no HTTP header can carry (said without quoting it)."""
        if self.key_required and not self.api_key:
            return f"{self.key_env} is not set; export it to record (it is read from the environment only)"
        unsendable = _unsendable(self.api_key or "")
        if unsendable:
            return f"{self.key_env} holds {unsendable}, which no HTTP header can carry; check the value it was set from"
        return None

    @property
    def secrets(self) -> list[str]:
        """Values that must never reach a cassette, report or log: the key, as given and as sent."""
        return [key for key in {self.api_key, getattr(self, "_raw_key", None)} if key]

    def json_headers(self) -> dict[str, str]:
        """Headers of a JSON request, with the bearer key when there is one (scrubbed before recording)."""
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"pytest-sys1cal/{__version__}",
        }
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def settings(self) -> dict[str, Any]:
        """What shapes this adapter's requests beyond the model and the question (kept in the manifest)."""
        return {}

    def use_recorded_settings(self, settings: Mapping[str, Any]) -> None:  # noqa: B027 - optional, no-op here
        """Adopt the settings the cassettes were recorded with (the manifest's), where the environment does
        not set them: a replay then asks exactly what was recorded."""

    @abstractmethod
    def requests(self, rendering: Rendering, question_ids: Sequence[str]) -> list[WireRequest]:
        """The requests that ask every question once (one repeat)."""

    @abstractmethod
    def parse(self, question_ids: Sequence[str], responses: Sequence[WireResponse]) -> dict[str, Any]:
        """One sample from the responses to `requests`, in the same order; raises AnswerError."""

    def reported_model(self, responses: Sequence[WireResponse]) -> str | None:
        """The model id the server says answered, for the manifest: the top-level `model` of the first
        response, which `/v1/systemone` and OpenAI-compatible servers both send (None if it does not say)."""
        try:
            model = responses[0].json().get("model")
        except (ValueError, AttributeError, IndexError):
            return None
        return model if isinstance(model, str) and model else None

    def error(self, response: WireResponse) -> ServerError:
        """The server's error, worded from its body."""
        return ServerError(response.status, _error_message(response))

    def models_url(self) -> str | None:
        """The URL of the server's model list (GET; nothing billable), or None when the wire has none."""
        return f"{self.base_url}{self.models_path}" if self.models_path else None


# ---------------------------------------------------------------------------------- rules for every wire
# What the recording reads the same way on every wire, whatever an adapter's own `error` says: a redirect is
# shown, never followed; an answer that says the model is unknown stops the recording (with the served list).

# An error code that means "no such model" (OpenAI's, typed-gguf's, and the usual spellings).
_MODEL_CODE = re.compile(
    r"\b(model_not_found|unknown_model|invalid_model|model_not_available|E_MODEL_NOT_FOUND)\b", re.I
)
# Words with which servers say a model is not there (Jev and jevcompat, OpenAI, vLLM, Ollama, OpenRouter, LiteLLM).
_MODEL_MISSING = re.compile(
    r"unknown|not found|not served|does not exist|doesn't exist|no such|not a valid|invalid|not available|"
    r"unavailable|not supported|unsupported|not recogni[sz]ed|no access|try pulling",
    re.I,
)


def names_unknown_model(response: WireResponse, model: str | None, message: str = "") -> bool:
    """Whether a non-2xx answer says the model sent is unknown: an error code meaning it (400, 404 or 422), or
    a 400/404 whose message names that model and says it is not there."""
    if response.status not in (400, 404, 422):
        return False
    text = response.content[:4096].decode("utf-8", "replace")
    if _MODEL_CODE.search(text):
        return True
    if response.status == 422 or not model:
        return False
    named = re.compile(rf"(?<![\w.-]){re.escape(model)}(?![\w-])(?!\.\w)", re.I)
    for said in {message, _error_message(response)}:
        if named.search(said) and "model" in said.lower() and _MODEL_MISSING.search(said):
            return True
    return False


def redirect_message(response: WireResponse, url: str) -> str | None:
    """For a 3xx answer: what it says, with its Location (never followed: a redirect could carry the key to
    another host). None for any other status."""
    if not 300 <= response.status < 400:
        return None
    location = {name.lower(): value for name, value in response.headers.items()}.get("location")
    where = f"to {location}" if location else "without a Location"
    return (
        f"HTTP {response.status}: the server redirects {url} {where}; not followed (a redirect could carry the key "
        "to another host): if the server has moved, give its new address with --sys1cal-base-url"
    )


def served_models(content: bytes) -> list[str] | None:
    """The model names in a model list: OpenAI's ``{"data": [{"id": …}]}`` or Jev's ``{"models": [{"name": …}]}``
    (Ollama's too); None when the body is neither."""
    try:
        body = strict_json.loads(content)
    except ValueError:
        return None
    entries = next(
        (body[key] for key in ("data", "models") if isinstance(body, dict) and isinstance(body.get(key), list)), None
    )
    if entries is None:
        return None
    names = []
    for entry in entries:
        name = (
            entry
            if isinstance(entry, str)
            else next(
                (
                    entry[k]
                    for k in ("id", "name", "model")
                    if isinstance(entry, dict) and isinstance(entry.get(k), str)
                ),
                None,
            )
        )
        if name:
            names.append(name)
    return names


def check_base_url(url: str, source: str) -> None:
    """A base URL the plugin can join its routes to: http(s), a host, and no query string or fragment (the
    route would be appended after them, and a query often carries a key). InputError naming `source` and the
    fix; the message names the query's parameters, never their values, and no credentials."""
    from urllib.parse import parse_qsl, urlsplit

    parts = urlsplit(url)
    try:
        host = parts.hostname
    except ValueError:
        host = None
    origin = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"  # without credentials
    if parts.scheme not in ("http", "https") or not host:
        raise InputError(
            f"{source}: {origin if parts.scheme else url.split('@')[-1]} is not an http:// or https:// address "
            "with a host; give the server's origin, such as http://localhost:8080"
        )
    if parts.query or "?" in url:
        names = sorted({name for name, _ in parse_qsl(parts.query, keep_blank_values=True)})
        what = "a query string" + (f" (parameters: {', '.join(names)})" if names else "")
    elif parts.fragment or "#" in url:
        what = "a fragment"
    else:
        return
    raise InputError(
        f"{source}: the base URL has {what}, which the plugin cannot join its routes to (it appends /v1/… to "
        f"the origin); give the origin alone, {origin}, and pass a key through the environment, never in the URL"
    )


def _unsendable(key: str) -> str | None:
    """What in `key` an HTTP header cannot carry (httpx sends header values as printable ASCII), and where."""
    for index, char in enumerate(key):
        if not "!" <= char <= "~":
            what = "a control or non-ASCII character"
            if char.isspace():
                what = "a line break" if char in "\r\n" else "a space"
            return f"{what} at position {index + 1} of {len(key)}"
    return None


def _error_message(response: WireResponse) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.content.decode("utf-8", errors="replace")[:QUOTE_LIMIT] or "(empty body)"
    # The shapes seen in the wild: {"detail": str | {message} | [{loc, msg}]}, {"error": str | {message}}.
    for key in ("detail", "error", "message"):
        value = body.get(key) if isinstance(body, dict) else None
        if isinstance(value, str):
            return value
        if isinstance(value, dict):
            return str(value.get("message") or value.get("error_type") or value)
        if isinstance(value, list) and value:
            return "; ".join(
                f"{'.'.join(str(p) for p in d.get('loc', []))}: {d.get('msg')}" if isinstance(d, dict) else str(d)
                for d in value
            )
    return json.dumps(body)[:QUOTE_LIMIT]


def quote(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= QUOTE_LIMIT else text[: QUOTE_LIMIT - 1] + "…"


def check_probability(value: Any, what: str, answer: Any) -> float:
    """A finite number in [0, 1] (clipping float noise), or AnswerError quoting the answer."""
    if type(value) is float and 0.0 <= value <= 1.0:  # the common case, decided at once (NaN fails it)
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AnswerError(f"{what} is {quote(value)}, not a number; answer: {quote(answer)}")
    value = float(value)
    if not math.isfinite(value):
        raise AnswerError(f"{what} is {value}, not a finite number; answer: {quote(answer)}")
    if not -RANGE_TOLERANCE <= value <= 1 + RANGE_TOLERANCE:
        raise AnswerError(f"{what} = {value} is outside [0, 1]; answer: {quote(answer)}")
    return min(1.0, max(0.0, value))


@functools.lru_cache(maxsize=64)
def _key_set(keys: tuple[str, ...]) -> frozenset[str]:
    """The options as a set, built once per option list (a replay checks three distributions per rendering)."""
    return frozenset(keys)


def check_distribution(probabilities: Any, keys: tuple[str, ...], what: str, answer: Any) -> list[float]:
    """Probabilities for `keys`, in that order, renormalised; AnswerError when the keys or sum are wrong."""
    if not isinstance(probabilities, dict):
        raise AnswerError(f"{what}: 'probabilities' is missing or not an object; answer: {quote(answer)}")
    if probabilities.keys() != _key_set(keys):
        raise AnswerError(
            f"{what}: probability keys {sorted(probabilities)} are not the options {list(keys)}; "
            f"answer: {quote(answer)}"
        )
    values = [probabilities[k] for k in keys]
    if not all(type(v) is float and 0.0 <= v <= 1.0 for v in values):  # else each checked, and named if wrong
        values = [check_probability(v, f"{what}: P({k})", answer) for k, v in zip(keys, values, strict=True)]
    total = sum(values)
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise AnswerError(
            f"{what}: probabilities sum to {total:.4f}, not 1 (tolerance {SUM_TOLERANCE}); answer: {quote(answer)}"
        )
    return [v / total for v in values]
