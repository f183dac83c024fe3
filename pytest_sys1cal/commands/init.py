"""`python -m pytest_sys1cal init`: set a project up for pytest-sys1cal. Writes a starter thresholds.yaml, a
GitHub Actions workflow (.github/workflows/sys1cal.yml) and .gitattributes lines for the cassettes, then prints
the pytest ini snippet and the next steps; it edits no existing file (pyproject.toml included).

It never overwrites: when any of the files exists it writes nothing at all and exits 4 naming them, like
every usage error. The files and why: docs/setup.md.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from .. import __version__
from ..bundled import REFERENCE_MODEL, REFERENCE_VERSION, BundledError
from ..errors import EXIT_INPUT, InputError
from ..models import BUILTIN_ADAPTERS
from .project_files import Project, files, ini_snippet, next_steps

# A version names a cassette folder and goes into YAML and shell lines: keep it to characters safe in all three.
VERSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


class InitError(InputError):
    """Why init wrote nothing: one line naming the file or option and the fix."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        default=REFERENCE_MODEL,
        help=f"the model adapter the project gates: {', '.join(BUILTIN_ADAPTERS)} (default {REFERENCE_MODEL})",
    )
    parser.add_argument(
        "--version",
        help=f"the model version (cassette folder) CI replays; default {REFERENCE_VERSION}, the bundled reference, "
        "for jev; required for other models",
    )
    parser.add_argument(
        "--dir", type=Path, default=Path("."), help="the project's root, where the files go (default: here)"
    )


def main(args: argparse.Namespace) -> int:
    try:
        project = _project(args.model, args.version)
        planned = {args.dir / name: text for name, text in files(project).items()}
        _write_all(args.dir, planned)
    except (InitError, BundledError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    print(_summary(args.dir, list(planned), project))
    return 0


def _project(model: str, version: str | None) -> Project:
    adapter = BUILTIN_ADAPTERS.get(model)
    if adapter is None:
        raise InitError(
            f"--model {model}: init sets up the built-in adapters ({', '.join(BUILTIN_ADAPTERS)}); for an adapter "
            "another plugin registers, run init --model systemone --version NAME and change the model in the files"
        )
    if version is None:
        if model != REFERENCE_MODEL:
            raise InitError(
                f"--model {model} needs --version NAME: the version names the cassette folder and the model id sent "
                "(only jev has a bundled reference to default to)"
            )
        version = REFERENCE_VERSION
    if not VERSION_NAME.fullmatch(version):
        raise InitError(
            f"--version {version!r}: use letters, digits and . _ + - only (it names a folder and goes into YAML "
            "and shell lines), e.g. jev-1.14.0"
        )
    return Project(
        model=model,
        version=version,
        plugin_version=__version__,
        key_env=getattr(adapter, "key_env", None),
        key_required=bool(getattr(adapter, "key_required", False)),
        base_url_env=getattr(adapter, "base_url_env", None),
        # A server on the local machine by default (systemone, semif): a CI recording needs its real address.
        local_server=str(getattr(adapter, "default_base_url", "")).startswith(("http://127.", "http://localhost")),
    )


def _write_all(root: Path, planned: dict[Path, str]) -> None:
    """Write every file, or none: existing files are refused before anything is written, and a failure half
    way (a file appearing meanwhile, a read-only folder) removes what this call wrote."""
    if not root.is_dir():
        raise InitError(f"--dir {root}: no such directory; create it, or run init in the project's root")
    existing = [str(path) for path in planned if path.exists() or path.is_symlink()]
    if existing:
        raise InitError(
            f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; init never overwrites and "
            "wrote nothing: move or delete "
            f"{'it' if len(existing) == 1 else 'them'} and run init again, or merge docs/setup.md's content by hand"
        )
    written: list[Path] = []
    made: list[Path] = []
    try:
        for path, text in planned.items():
            for parent in reversed(path.parents):
                if not parent.exists() and parent.is_relative_to(root):
                    parent.mkdir()
                    made.append(parent)
            with path.open("x", encoding="utf-8", newline="\n") as handle:  # "x": fails rather than overwrite
                written.append(path)
                handle.write(text)
    except OSError as exc:
        for path in reversed(written):
            path.unlink(missing_ok=True)
        for folder in reversed(made):
            folder.rmdir()
        raise InitError(f"{exc.filename or root}: {exc.strerror or exc}; init wrote nothing") from None


def _summary(root: Path, written: list[Path], project: Project) -> str:
    lines = [f"Wrote {', '.join(str(path) for path in written)}.", ""]
    lines += ["Add to pyproject.toml (or, without quotes, to the [pytest] section of pytest.ini):", ""]
    lines += [f"    {line}" for line in ini_snippet(project).splitlines()]
    lines += ["", "Next:"]
    lines += [f"  {number}. {step}" for number, step in enumerate(next_steps(project), start=1)]
    return "\n".join(lines)
