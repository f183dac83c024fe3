"""The plugin's two kinds of error: a mistake in what the user gave it (`InputError`, shown as one usage
error naming the file and the fix) and a rendering that could not be measured (`MeasurementError`,
which fails its item, or stops the run when every other item would fail alike)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


class InputError(ValueError):
    """A mistake in a file or option the user gave, worded for them: where it is and how to fix it."""


class MeasurementError(Exception):
    """A rendering that could not be measured; `fatal` stops the run (every other item would fail alike)."""

    def __init__(self, message: str, *, fatal: bool = False):
        super().__init__(message)
        self.fatal = fatal


@contextlib.contextmanager
def usage_errors(*also: type[Exception]) -> Iterator[None]:
    """Turn an InputError (or one of `also`) raised inside the block into pytest's usage error: one
    line, no traceback."""
    try:
        yield
    except (InputError, *also) as exc:
        import pytest

        raise pytest.UsageError(str(exc)) from None
