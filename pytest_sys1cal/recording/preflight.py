"""The dry run's checks (``--sys1cal-dry-run``, ``python -m pytest_sys1cal check``): before a recording is paid
for, the key is there and sendable, the server is reachable (through the route the recording would take),
accepts the key, and lists the model name, all from one ``GET /v1/models``, which costs nothing. Nothing
billable is sent. The checks reuse the recording's own client (deadline, size limit, proxy, redirect rule), so
what they find is what the recording would meet (docs/recording.md, "Before paying: the dry run")."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from ..models.base import ModelAdapter, WireResponse, redirect_message, served_models
from .body import BodyRefused
from .policy import Limits
from .proxies import route_for
from .transport import make_client

# Answers that mean "this server has no model list" rather than "something is wrong".
NO_LIST = frozenset({404, 405, 501})


@dataclass
class Checked:
    """What the checks found: lines to print, and the problem that makes the dry run fail (None: none)."""

    lines: list[str] = field(default_factory=list)
    problem: str | None = None


def preflight(adapter: ModelAdapter, limits: Limits) -> Checked:
    """Run the checks (on an event loop of their own: the dry run starts no recording engine)."""
    return asyncio.run(_check(adapter, limits))


async def _check(adapter: ModelAdapter, limits: Limits) -> Checked:
    checked = Checked()
    missing = adapter.missing_key()
    if missing:
        checked.problem = missing
        return checked
    url = adapter.models_url()
    if url is None:
        checked.lines.append(
            f"sys1cal: check: the {adapter.name} wire has no model list, so the server, the key and the model name "
            "are first checked by the recording's first request (which stops it at once if any is wrong)"
        )
        return checked
    path = urlsplit(url).path
    client = make_client(dataclasses.replace(limits, concurrency=1), route_for(adapter.base_url, os.environ))
    headers = {k: v for k, v in adapter.json_headers().items() if k.lower() != "content-type"}
    started = time.monotonic()
    try:
        async with asyncio.timeout(limits.timeout):
            response = await client.get(url, headers=headers)
    except TimeoutError:
        checked.problem = f"no complete answer from {url} within {limits.timeout:g} s (--sys1cal-timeout)"
    except httpx.TransportError as exc:
        checked.problem = (
            f"cannot reach {url}: {type(exc).__name__}: {exc or 'no detail'}; is the server up? check "
            "--sys1cal-base-url"
        )
    except BodyRefused as exc:
        checked.problem = str(exc)
    else:
        seconds = time.monotonic() - started
        wire = WireResponse(response.status_code, dict(response.headers), response.content)
        checked.lines.append(
            f"sys1cal: check: {adapter.base_url} answered GET {path} in {seconds:.2f} s (HTTP {wire.status})"
        )
        _read(adapter, wire, url, checked)
    finally:
        await client.aclose()
    return checked


def _read(adapter: ModelAdapter, wire: WireResponse, url: str, checked: Checked) -> None:
    """The verdicts on the key and the model name from the model list's answer."""
    path = urlsplit(url).path
    key = f"the key in {adapter.key_env}" if adapter.api_key else f"no key ({adapter.key_env} is not set)"
    if wire.status in (401, 403):
        checked.problem = f"the server refused the request with {key} ({adapter.error(wire)}); check the key"
        return
    redirect = redirect_message(wire, url)
    if redirect:
        checked.problem = redirect
        return
    if wire.status in NO_LIST:
        checked.lines.append(
            f"sys1cal: check: the server lists no models (GET {path}: HTTP {wire.status}), so the key and the model "
            f"name {adapter.sent_model!r} are first checked by the recording's first request (it stops at once if "
            "either is wrong)"
        )
        return
    if not wire.ok:
        checked.problem = f"the server answered GET {path} with {adapter.error(wire)}"
        return
    checked.lines.append(f"sys1cal: check: key: {key}; the server accepted the request")
    served = served_models(wire.content)
    if served is None:
        checked.lines.append(
            f"sys1cal: check: the answer to GET {path} is not a model list; the model name is not checked"
        )
    elif adapter.sent_model in served:
        checked.lines.append(
            f"sys1cal: check: model: {adapter.sent_model!r} is among the {len(served)} the server lists"
        )
    elif adapter.strict_model_names:
        # A server may serve more than it lists (jevcompat answers jev-1.13.0 and lists jev-latest, an alias may
        # stand behind a listed name), so a name missing from the list is not refused here: the first answer
        # decides, and an unknown model stops the recording at it.
        checked.lines.append(
            f"sys1cal: check: model: {adapter.sent_model!r} is not among the "
            f"{len(served)} the server lists ({', '.join(served) or 'none'}, GET {path}); a server may serve a model "
            "it does not list, so the check does not refuse it: the recording's first answer decides, and an unknown "
            "model stops it at once, after at most the requests already in flight (--sys1cal-concurrency); if it is "
            "a typo, name one of the listed (with --sys1cal-model-id, the version still names the cassette folder)"
        )
    else:
        checked.lines.append(
            f"sys1cal: check: model: {adapter.sent_model!r} is not among the models the server lists "
            f"({', '.join(served) or 'none'}); a {adapter.name} server may answer any name (llama.cpp's does), and "
            "one that refuses it stops the recording at its first answer"
        )
