"""The thresholds file this project ships (thresholds.yaml at the repository's root, which pyproject.toml packages
into the wheel's `_bundled` folder) and one model's section cut out of it as text, comments included: `init`
starts a project's thresholds.yaml from it, so the gates of the bundled reference are the ones this repository
tests."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .errors import InputError

PACKAGED = "thresholds.yaml"


class ShippedError(InputError):
    """The shipped thresholds file is missing from the installation, or has no section for a model."""


def shipped_thresholds() -> str:
    """The text of the shipped thresholds.yaml: packaged in a wheel, at the checkout's root in an editable install."""
    packaged = resources.files("pytest_sys1cal") / "_bundled" / PACKAGED
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    checkout = Path(__file__).resolve().parent.parent / "thresholds.yaml"
    if checkout.is_file():
        return checkout.read_text(encoding="utf-8")
    raise ShippedError("the shipped thresholds.yaml is missing from this installation; reinstall pytest-sys1cal")


def preamble(text: str) -> str:
    """The comment lines above the first model: how the shipped limits were chosen."""
    lines = text.splitlines(keepends=True)
    keys = _top_level_keys(lines)
    return "".join(lines[: keys[0][1]] if keys else lines)


def model_section(text: str, model: str) -> str:
    """`model:` and everything under it, up to the comments that introduce the next model (comments at
    column 0 right above the next top-level key belong to that key, not to this section)."""
    lines = text.splitlines(keepends=True)
    keys = _top_level_keys(lines)
    index = next((i for i, (name, _line) in enumerate(keys) if name == model), None)
    if index is None:
        raise ShippedError(f"the shipped thresholds.yaml has no section for {model!r}")
    start = keys[index][1]
    end = keys[index + 1][1] if index + 1 < len(keys) else len(lines)
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    return "".join(lines[start:end])


def _top_level_keys(lines: list[str]) -> list[tuple[str, int]]:
    """(key, line index) of each top-level key of a block-style YAML file."""
    return [
        (line.split(":", 1)[0], number)
        for number, line in enumerate(lines)
        if line[:1] not in ("", " ", "\t", "#", "\n", "\r", "-") and ":" in line
    ]
