"""`python -m pytest_sys1cal init`: set a project up for pytest-sys1cal. Writes a starter thresholds.yaml (for
jev the shipped section; for any other model that model's section only, with no gates until `thresholds
--update` writes them from a run of the version the team trusts), a GitHub Actions workflow
(.github/workflows/sys1cal.yml) and .gitattributes lines for the cassettes, then prints the pytest ini snippet
and the next steps.

It never overwrites: when thresholds.yaml or the workflow exists it writes nothing at all and exits 4 naming
them, like every usage error. An existing .gitattributes (most repositories have one) gets the lines it lacks
added at its end, every other line as it was. `--show` prints what it would write, and writes nothing. The
files and why: docs/setup.md.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path

from .. import __version__
from ..bundled import REFERENCE_MODEL, REFERENCE_VERSION, BundledError
from ..errors import EXIT_INPUT, InputError
from ..files import write_atomic
from ..models import BUILTIN_ADAPTERS
from .project_files import WORKFLOW, Project, files, ini_snippet, merged_gitattributes, next_steps
from .workflow_shards import MAX_SHARDS, sharded

GITATTRIBUTES = ".gitattributes"
NEW, ADD, KEEP, EXISTS = "new", "add", "keep", "exists"  # what init does with each file

# A version names a cassette folder and goes into YAML and shell lines: keep it to characters safe in all three.
VERSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
# A model id goes into the same lines (not into a path): a few more characters that server ids use.
MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+:/@-]{0,199}")


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
        "--model-id",
        metavar="ID",
        help="the model id your server answers as, when it is not the version (e.g. prod for every deployment): "
        "the ini snippet sets sys1cal_model_id to it, and a recording sends it",
    )
    parser.add_argument(
        "--dir", type=Path, default=Path("."), help="the project's root, where the files go (default: here)"
    )
    parser.add_argument(
        "--shards",
        type=_shard_count,
        default=0,
        metavar="N",
        help="record on N machines at once: the workflow's recording becomes a matrix of N shards and a merge job "
        "(python -m pytest_sys1cal docs recording)",
    )
    parser.add_argument(
        "--show", action="store_true", help="print what init would write (and which files exist), and write nothing"
    )


def _shard_count(text: str) -> int:
    """--shards: 2 … MAX_SHARDS machines (1 is the one-machine workflow, the default)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 2 <= value <= MAX_SHARDS:
        raise argparse.ArgumentTypeError(f"{value}: give 2 to {MAX_SHARDS} shards (without --shards: one machine)")
    return value


Planned = dict[Path, tuple[str, str]]  # path → (text, what init does: NEW, ADD, KEEP or EXISTS)


def main(args: argparse.Namespace) -> int:
    try:
        project = replace(_project(args.model, args.version, args.model_id), shards=args.shards)
        if not args.dir.is_dir():
            raise InitError(f"--dir {args.dir}: no such directory; create it, or run init in the project's root")
        planned = _plan(args.dir, project)
        if args.show:
            print(_show(planned, project))
            return 0
        _write_all(args.dir, planned)
    except (InitError, BundledError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    print(_summary(planned, project))
    return 0


def _plan(root: Path, project: Project) -> Planned:
    """Each file's text and what init does with it; an existing .gitattributes gets the lines it lacks."""
    planned: Planned = {}
    texts = files(project)
    if project.shards:  # the recording as a matrix of shards and a merge
        texts[WORKFLOW] = sharded(texts[WORKFLOW], project, project.shards)
    for name, text in texts.items():
        path = root / name
        exists = path.exists() or path.is_symlink()
        if name == GITATTRIBUTES and exists and path.is_file() and not path.is_symlink():
            try:
                merged = merged_gitattributes(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                raise InitError(f"{path}: cannot read it ({exc}); init wrote nothing") from None
            planned[path] = (merged, ADD) if merged is not None else (text, KEEP)
        else:
            planned[path] = (text, EXISTS if exists else NEW)
    return planned


def _show(planned: Planned, project: Project) -> str:
    """What init would do, file by file, with each file's text; nothing is written."""
    lines = ["init --show: nothing was written. With these options init would:", ""]
    for path, (text, how) in planned.items():
        if how == KEEP:
            lines += [f"---- {path}: exists and has init's lines already; left as it is", ""]
            continue
        if how == ADD:
            added = text[len(path.read_text(encoding="utf-8")) :]
            lines += [f"---- {path}: exists; these lines would be added at its end", added.rstrip("\n"), ""]
            continue
        what = "would be written" if how == NEW else "EXISTS, so init would stop and write nothing; it would write"
        lines += [f"---- {path}: {what}", text.rstrip("\n"), ""]
    lines += _closing(project)
    return "\n".join(lines)


def _project(model: str, version: str | None, model_id: str | None = None) -> Project:
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
    if model_id is not None and not MODEL_ID.fullmatch(model_id):
        raise InitError(
            f"--model-id {model_id!r}: use letters, digits and . _ + - : / @ only (it goes into YAML, TOML and shell "
            "lines), e.g. prod or org/model:tag"
        )
    return Project(
        model=model,
        version=version,
        model_id=model_id if model_id != version else None,
        plugin_version=__version__,
        key_env=getattr(adapter, "key_env", None),
        key_required=bool(getattr(adapter, "key_required", False)),
        base_url_env=getattr(adapter, "base_url_env", None),
        # A server on the local machine by default (systemone, semif): a CI recording needs its real address.
        local_server=str(getattr(adapter, "default_base_url", "")).startswith(("http://127.", "http://localhost")),
    )


def _write_all(root: Path, planned: Planned) -> None:
    """Write every file, or none: existing files are refused before anything is written, and a failure half
    way (a file appearing meanwhile, a read-only folder) removes what this call wrote and restores what it
    added to."""
    existing = [str(path) for path, (_text, how) in planned.items() if how == EXISTS]
    if existing:
        raise InitError(
            f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; init never overwrites and "
            f"wrote nothing: move or delete {'it' if len(existing) == 1 else 'them'} and run init again, or see what "
            "init would write with --show and merge it by hand (python -m pytest_sys1cal docs setup)"
        )
    written: list[Path] = []
    made: list[Path] = []
    restore: dict[Path, str] = {}
    try:
        for path, (text, how) in planned.items():
            if how == ADD:
                restore[path] = path.read_text(encoding="utf-8")
                write_atomic(path, text)
                continue
            if how == KEEP:
                continue
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
        for path, text in restore.items():
            write_atomic(path, text)
        raise InitError(f"{exc.filename or root}: {exc.strerror or exc}; init wrote nothing") from None


def _summary(planned: Planned, project: Project) -> str:
    wrote = [str(path) for path, (_text, how) in planned.items() if how == NEW]
    lines = [f"Wrote {', '.join(wrote)}."]
    for path, (_text, how) in planned.items():
        if how == ADD:
            lines[0] += f" Added init's lines to the end of {path} (the rest as it was)."
        elif how == KEEP:
            lines[0] += f" {path} has init's lines already."
    return "\n".join([*lines, "", *_closing(project)])


def _closing(project: Project) -> list[str]:
    lines = ["Add to pyproject.toml (or, without quotes, to the [pytest] section of pytest.ini):", ""]
    lines += [f"    {line}" for line in ini_snippet(project).splitlines()]
    lines += ["", "Next:"]
    lines += [f"  {number}. {step}" for number, step in enumerate(next_steps(project), start=1)]
    return lines
