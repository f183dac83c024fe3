"""Model adapters, one per wire, behind the `ModelAdapter` interface in base.py."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import InputError
from .base import ModelAdapter
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
    return available[name](version=version, base_url=base_url, environ=environ)
