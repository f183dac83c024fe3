"""Model adapters, one per wire, behind the `ModelAdapter` interface in base.py."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import InputError
from .base import ModelAdapter, check_base_url
from .semif import SemIfAdapter
from .systemone import JevAdapter, SystemOneAdapter

BUILTIN_ADAPTERS: dict[str, Callable[..., ModelAdapter]] = {
    JevAdapter.name: JevAdapter,
    SystemOneAdapter.name: SystemOneAdapter,
    SemIfAdapter.name: SemIfAdapter,
}


class UnknownModel(InputError):
    """No adapter of that name; the message lists the available ones."""


def make_adapter(
    name: str,
    registered: Iterable[Mapping[str, Callable[..., ModelAdapter]] | None],
    *,
    version: str | None,
    base_url: str | None,
    environ: Mapping[str, str],
) -> ModelAdapter:
    """Build the adapter called `name` from the built-ins and the ones plugins registered."""
    available: dict[str, Callable[..., Any]] = dict(BUILTIN_ADAPTERS)
    for mapping in registered:
        available.update(mapping or {})
    if name not in available:
        raise UnknownModel(f"unknown model {name!r}; available models: {', '.join(sorted(available))}")
    adapter = available[name](version=version, base_url=base_url, environ=environ)
    url = getattr(adapter, "base_url", None)
    if isinstance(url, str):  # every adapter, registered ones too: the routes are joined to it alike
        env = getattr(adapter, "base_url_env", None)
        source = "--sys1cal-base-url" if base_url else env if env and environ.get(env) else f"{name}'s default base URL"
        check_base_url(url, source)
    return adapter
