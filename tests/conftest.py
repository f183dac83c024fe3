"""The project's own tests: plain unit tests for pure modules, pytester runs for plugin behaviour."""

pytest_plugins = ["pytester"]

# pytester's in-process runs drop modules first imported inside a run; numpy cannot be imported twice
# in one process, so load the analysis stack (numpy, scipy) here, once, before any nested run.
import pytest_sys1cal.analysis  # noqa: E402,F401
