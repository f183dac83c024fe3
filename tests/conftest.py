"""The project's own tests: plain unit tests for pure modules, pytester runs for plugin behaviour."""

import signal
from typing import Any

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True, scope="session")
def _analysis_stack_loaded_once() -> None:
    """pytester's in-process runs drop modules first imported inside a run; numpy and matplotlib cannot be
    imported twice in one process, and httpx's async backends lose their exception mapping when re-imported. So
    load them once, before any nested run: in a fixture, not at import, so `pytest --sys1cal` here does not pay."""
    import importlib.util

    import anyio._backends._asyncio  # noqa: F401
    import httpcore._backends.anyio  # noqa: F401

    import pytest_sys1cal.analysis  # noqa: F401

    # matplotlib too (where the html extra is installed): many tests draw HTML pages in nested runs, and a
    # matplotlib first imported inside one of them is dropped after it and breaks on its second import.
    if importlib.util.find_spec("matplotlib") is not None:
        import pytest_sys1cal.report.figure_registry  # noqa: F401


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The end-to-end tier: every test that drives pytest through pytester is marked ``e2e`` here (the others
    that start processes or servers say so themselves), so ``pytest -m "not e2e"`` is the fast inner loop."""
    for item in items:
        if "pytester" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True)
def _no_github_job_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nested runs must not write to the real job summary when this suite itself runs on GitHub Actions."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_reaches_child_runs() -> None:
    """The runs that tests stop with SIGINT inherit this process's disposition of it, and Python gives a process
    that starts with SIGINT ignored no KeyboardInterrupt: a suite started that way (a background job of a
    non-interactive shell, nohup) had four such runs finish unstopped. Ctrl-C here is then Python's usual."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# Modules whose module-scoped fixtures cost seconds (a wheel built and installed, reports replayed and drawn):
# under xdist each worker that runs one of their tests builds the fixture again, so they run on one worker.
ONE_WORKER_MODULES = frozenset({
    "tests/test_packaging.py",
    "tests/test_readme_engines.py",
    "tests/report/test_html_report.py",
    "tests/report/test_html_upgrade.py",
    "tests/report/test_why_browser.py",
    "tests/test_secrets.py",
    "tests/session/test_sequential_runs.py",
    "tests/generate/test_generate.py",
    "tests/gates/test_gates_distortion.py",
    "tests/generate/test_generated_dataset.py",
})  # fmt: skip


def work_unit(nodeid: str) -> str:
    """What xdist hands a worker at once: the whole module for ONE_WORKER_MODULES, else the test alone."""
    module = nodeid.split("::", 1)[0]
    return module if module in ONE_WORKER_MODULES else nodeid


@pytest.hookimpl(optionalhook=True)  # a hook of xdist's: the suite also runs without it (-p no:xdist)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's load scheduling, with `work_unit`'s units. (`--dist loadgroup` would say it with marks, but xdist
    3.8 renames node ids the way pytest 9.2 no longer reads, so its groups are split.) Only for `-n`'s own load
    scheduling: another `--dist` is left as given."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModulesKeptTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ModulesKeptTogether(config, log)
