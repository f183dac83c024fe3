"""`python -m pytest_sys1cal COMMAND ...`: work outside a test run.

Each command lives in its own module exposing ``add_arguments(parser)`` and ``run(args) -> int``;
the module is imported only when its command is chosen, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "generate": ("pytest_sys1cal.generate", "write a fresh Sys1Cal dataset from a seed"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_sys1cal")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, description=help_text)
    # Parse the command name first, then let its module declare its own arguments.
    known, _ = parser.parse_known_args(argv)
    module = importlib.import_module(COMMANDS[known.command][0])
    command_parser = sub.choices[known.command]
    module.add_arguments(command_parser)
    args = parser.parse_args(argv)
    return int(module.run(args))


if __name__ == "__main__":
    sys.exit(main())
