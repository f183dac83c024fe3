"""Hooks other packages implement to add model adapters (register them from a pytest11 plugin or conftest).

Example, in a ``conftest.py``::

    from pytest_sys1cal.models.base import ModelAdapter

    class MyAdapter(ModelAdapter):
        name = "mine"
        ...

    @pytest.hookimpl(optionalhook=True)   # lets the conftest load even without pytest-sys1cal
    def pytest_sys1cal_adapters():
        return {"mine": MyAdapter}

after which ``pytest --sys1cal --sys1cal-model mine`` uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .models.base import ModelAdapter


@pytest.hookspec
def pytest_sys1cal_adapters() -> Mapping[str, Callable[..., ModelAdapter]] | None:
    """Return ``{model name: adapter class}``; the class is called as
    ``cls(version=..., base_url=..., environ=...)``. All implementations are merged."""


@pytest.hookspec
def pytest_sys1cal_configure_adapter(config: pytest.Config, adapter: ModelAdapter) -> Any:
    """Called for each adapter a run builds, before it makes or replays any request: the run's own, and a
    baseline version's when ``--sys1cal-baseline`` names one (replayed offline, so configure it alike)."""
