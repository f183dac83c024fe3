"""`python -m pytest_sys1cal check [pytest options]`: the preflight before a recording is paid for. It runs
the recording command it is given as a dry run (``pytest --sys1cal --sys1cal-dry-run …``), so the options,
the ini keys, ``-k`` and the record mode are read exactly as that recording would read them: the key, the
server and the model name are checked (one ``GET /v1/models``, nothing billable), the plan and its cost are
printed, and nothing is recorded. Exit 0 when everything checked, 4 with one line saying what to fix."""

from __future__ import annotations

import argparse
import subprocess
import sys

RECORD_MODE = "--sys1cal-record-mode"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "python -m pytest_sys1cal check [PYTEST OPTIONS …]"
    parser.epilog = (
        "Give the options of the recording you mean to run (--model, --sys1cal-model-version, --sys1cal-base-url, "
        "-k, --sys1cal-repeats, --sys1cal-max-cost, …); without a record mode, --sys1cal-record-mode=once is "
        "checked. Exit status 0: every check passed; 4: something to fix, said in one line."
    )
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


def command(pytest_args: list[str]) -> list[str]:
    """The dry run's command line: pytest with the benchmark, the dry run and the given options."""
    args = [arg for arg in pytest_args if arg != "--"]
    if not any(arg == RECORD_MODE or arg.startswith(f"{RECORD_MODE}=") for arg in args):
        args.append(f"{RECORD_MODE}=once")
    extra = [flag for flag in ("--sys1cal", "--sys1cal-dry-run") if flag not in args]
    return [sys.executable, "-m", "pytest", *extra, *args]


def passthrough(argv: list[str]) -> int:
    """Run the dry run with `argv` as given (pytest's options, which argparse here would not know)."""
    return subprocess.call(command(argv))


def main(args: argparse.Namespace) -> int:
    return passthrough(list(args.pytest_args))
