"""The project's tests, a package so that they import their helpers (tests.loopback) by name."""
