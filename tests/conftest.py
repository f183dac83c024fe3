"""The project's own tests: plain unit tests for pure modules, pytester runs for plugin behaviour."""

pytest_plugins = ["pytester"]
