"""The plugin's two roots of error; every exception class in the package derives from one of them.

- `InputError`: a mistake in what the user gave (an option, a file, an environment variable), worded for
  them: where it is and how to fix it. The plugin shows it as one usage error line (exit status 4), the
  commands as one line on stderr (exit 4).
- `MeasurementError`: a rendering (or, `fatal`, the whole run) could not be measured: the server erred,
  an answer was malformed, replay had no recording. It fails its item with one line.

Nothing converts a bare ``ValueError`` into a usage error: only these say they are meant for the user.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

# The exit status of a mistake in the user's input, in a pytest run (pytest's usage error) and in every
# `python -m pytest_sys1cal` command alike; argparse's own refusals of a malformed command line keep its 2.
EXIT_INPUT = 4


class InputError(Exception):
    """A mistake in a file or option the user gave, worded for them: where it is and how to fix it."""


class MeasurementError(Exception):
    """A rendering that could not be measured; `fatal` stops the run (every other item would fail alike)."""

    def __init__(self, message: str, *, fatal: bool = False):
        super().__init__(message)
        self.fatal = fatal


@contextlib.contextmanager
def usage_errors(redact: Callable[[str], str] = str) -> Iterator[None]:
    """Turn an InputError raised inside the block into pytest's usage error: one line, no traceback, its
    text passed through `redact` (the run's redactor: a message may quote a URL with credentials)."""
    try:
        yield
    except InputError as exc:
        import pytest

        raise pytest.UsageError(redact(str(exc))) from None
