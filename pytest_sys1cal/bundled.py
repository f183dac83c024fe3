"""What the package carries besides its code (pyproject.toml packages them into the wheel's `_bundled` folder;
an editable install reads them from the checkout): the Sys1Cal-v1 dataset, the reference cassettes of Jev
jev-1.13.0 (reconstructed from the paper's published outputs) and the thresholds file this project ships, with
one model's section cut out of it as text, comments included (`init` starts a project's thresholds.yaml from
it, so the gates of the bundled reference are the ones this repository tests)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .errors import InputError

REFERENCE_MODEL = "jev"
REFERENCE_VERSION = "jev-1.13.0"  # the bundled reference cassettes, reconstructed from the paper's outputs
# Where each bundled file lives in the wheel (under _bundled/) and in a checkout of the repository.
FILES = {
    "sys1cal-v1.jsonl": "fixtures/sys1cal-v1/v0.1.0_tiny_cleanvars_parallel_primitives.jsonl",
    "thresholds.yaml": "thresholds.yaml",
    "cassettes": "cassettes",  # in the wheel: the reference folder only (cassettes/jev/jev-1.13.0)
}


class BundledError(InputError):
    """A bundled file is missing from the installation, or the shipped thresholds have no section for a model."""


def bundled(name: str) -> Path | None:
    """The bundled file or folder `name` (a key of FILES): packaged in a wheel, in the checkout in an editable
    install; None when neither has it."""
    packaged = resources.files("pytest_sys1cal") / "_bundled" / name
    if packaged.is_file() or packaged.is_dir():
        return Path(str(packaged))
    checkout = Path(__file__).resolve().parent.parent / FILES[name]
    return checkout if checkout.exists() else None


def reference_cassettes() -> Path | None:
    """The cassette root that holds the bundled reference folder ``jev/jev-1.13.0`` (and only that is used)."""
    root = bundled("cassettes")
    return (
        root if root is not None and (root / REFERENCE_MODEL / REFERENCE_VERSION / "manifest.json").is_file() else None
    )


def shipped_thresholds_path() -> Path:
    path = bundled("thresholds.yaml")
    if path is None:
        raise BundledError("the shipped thresholds.yaml is missing from this installation; reinstall pytest-sys1cal")
    return path


def shipped_thresholds() -> str:
    """The text of the shipped thresholds.yaml."""
    return shipped_thresholds_path().read_text(encoding="utf-8")


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
        raise BundledError(f"the shipped thresholds.yaml has no section for {model!r}")
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
