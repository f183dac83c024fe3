"""The entry point pytest loads (the ``pytest11`` entry point): the options and the adapters' hooks, and at
configure, with ``--sys1cal``, the run. Without it only the options are registered: an ordinary pytest run
pays nothing (no numpy, scipy, httpx, vcrpy or yaml import; of this package, options.py and the light modules
it reads). With it, session/hooks.py starts the run and registers the plugins that own the hooks from then on.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from . import hookspecs
from .session.options import active, add_model_alias, add_options, given_without_sys1cal


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(parser: pytest.Parser) -> Generator[None, None, None]:
    # The short alias --model is added only once every plugin and the initial conftests have declared
    # their options (still before the command line is parsed), and only if nobody else owns it:
    # two definitions of one flag crash pytest at start-up.
    yield
    if not _option_taken(parser, "--model"):
        add_model_alias(parser)


def _option_taken(parser: pytest.Parser, flag: str) -> bool:
    # pytest has no public way to ask; look at the registered groups (defensively: private attributes).
    groups = [getattr(parser, "_anonymous", None), *getattr(parser, "_groups", [])]
    return any(flag in option.names() for group in groups if group is not None for option in group.options)


@pytest.hookimpl(tryfirst=True)  # before pytest's log file and other plugins' outputs are opened (outputs.py)
def pytest_configure(config: pytest.Config) -> None:
    if not active(config):
        given_without_sys1cal(config)
        _no_node_ids_without_sys1cal(config)
        return
    from .session.hooks import start  # the run's modules are loaded only now, with --sys1cal

    start(config)


def _no_node_ids_without_sys1cal(config: pytest.Config) -> None:
    """A benchmark item's node id given without ``--sys1cal`` (pytest would say the file does not exist)."""
    named = [arg for arg in config.args if arg.startswith("sys1cal::")]
    if named:
        raise pytest.UsageError(f"{named[0]} is a benchmark item, which runs only with --sys1cal; add --sys1cal")
