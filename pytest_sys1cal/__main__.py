"""`python -m pytest_sys1cal COMMAND ...`: work outside a test run.

Each command lives in its own module exposing ``add_arguments(parser)`` and ``main(args) -> int`` (and
``passthrough(argv) -> int`` when it hands its arguments on untouched, as check does to pytest); only the
chosen command's module is imported, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "generate": ("pytest_sys1cal.commands.generate", "write a fresh Sys1Cal dataset from a seed"),
    "contamination": ("pytest_sys1cal.commands.contamination", "compare mean OVL on public vs fresh items"),
    "power": ("pytest_sys1cal.commands.power", "how many problems and repeats detect a given drop in mean OVL"),
    "html": ("pytest_sys1cal.commands.html", "the HTML report (tables and figures) of a saved JSON report"),
    "thresholds": (
        "pytest_sys1cal.commands.thresholds",
        "a thresholds.yaml section from a saved JSON report; --update rewrites it in the file, with a diff",
    ),
    "recalibrate": (
        "pytest_sys1cal.commands.recalibrate",
        "the monotone recalibration map of each primitive, fitted on a saved JSON report, as a file to apply and to "
        "replay through (--sys1cal-recalibration)",
    ),
    "trend": (
        "pytest_sys1cal.commands.trend",
        "replay every recorded version of a model offline and show them side by side, with the upgrade verdicts",
    ),
    "check": (
        "pytest_sys1cal.commands.check",
        "before paying for a recording: check the key, the server and the model name, print the plan and its cost "
        "(a dry run: nothing billable is sent)",
    ),
    "merge": (
        "pytest_sys1cal.commands.merge",
        "join the folders of a recording's shards (--sys1cal-shard=I/N) into one version folder, checking each",
    ),
    "init": (
        "pytest_sys1cal.commands.init",
        "set a project up: starter thresholds.yaml, GitHub Actions workflow, .gitattributes",
    ),
    "docs": (
        "pytest_sys1cal.commands.docs",
        "print the docs' index, or a page the messages cite (docs/setup.md, …)",
    ),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMMANDS and argv[1:2] not in (["-h"], ["--help"]):
        # A command that hands its arguments on untouched (check: pytest's options) takes them as given.
        passthrough = getattr(importlib.import_module(COMMANDS[argv[0]][0]), "passthrough", None)
        if passthrough is not None:
            return int(passthrough(argv[1:]))
    chosen = next((arg for arg in argv if not arg.startswith("-")), None)
    parser = argparse.ArgumentParser(prog="python -m pytest_sys1cal")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            importlib.import_module(module).add_arguments(command_parser)
    args = parser.parse_args(argv)
    try:
        return int(importlib.import_module(COMMANDS[args.command][0]).main(args))
    except BrokenPipeError:
        raise
    except OSError as exc:  # a read-only folder, a full disk: what a command did not word itself is one line too
        from .errors import EXIT_INPUT
        from .files import written_for

        where = written_for(exc) or "a file"
        print(
            f"error: {where}: {exc.strerror or type(exc).__name__}; the command stopped there (a file it writes is "
            "written whole or not at all)",
            file=sys.stderr,
        )
        return EXIT_INPUT


def run() -> int:
    """main() as the command line runs it: output cut short by its reader (`... docs | head`) ends the command
    quietly with status 1, not with a traceback."""
    try:
        code = main()
        sys.stdout.flush()  # a reader gone away shows here, inside the handler, not at interpreter exit
        return code
    except BrokenPipeError:
        # Python flushes stdout again at exit; pointed at devnull, that flush cannot raise a second time.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(run())
