"""The package type-checks (mypy, as configured in pyproject.toml), so the report document's typed face
(document.py and its document_*.py siblings) holds every reader to the keys it names: a mistyped key fails
here, not in a user's run."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runs import REPO

# Runs mypy over the package in a subprocess.
pytestmark = pytest.mark.e2e

PACKAGE = REPO / "pytest_sys1cal"
PLUGIN = Path(__file__).with_name("mypy_report_keys.py")  # pyproject.toml loads it: .get() is checked as [] is

pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")

# Per folder of the package ("" is the spine, its top-level modules), a key of the report's document types that the
# folder reads. Every read of it in the folder is changed to read `<key>_renamed`, a key no type declares, and each
# must then be a mypy error at its line. (Renaming the declaration instead would not do: mypy leaves the values of a
# TypedDict literal unchecked once one of its keys is wrong, so a read copied into a literal that writes the same key
# would be hidden by the literal's own error.)
MISREAD = {
    "analysis": "latent_instance_id",
    "gates": "margin",
    "versions": "p_value",
    "report": "difference",
    "commands": "name",
    "session": "headline",
    "": "renderings",
}
READERS = ("get", "pop", "setdefault")


def mypy(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", *args], cwd=cwd, capture_output=True, text=True
    )


def reads(tree: ast.Module, key: str) -> list[ast.Constant]:
    """The string literals by which `tree` reads `key` out of a mapping: ``x["key"]`` (not a store or a del),
    ``x.get("key")`` (pop, setdefault)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            found += [node.slice] if isinstance(node.slice, ast.Constant) and node.slice.value == key else []
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in READERS:
            first = node.args[0] if node.args else None
            found += [first] if isinstance(first, ast.Constant) and first.value == key else []
    return found


def misread(path: Path, key: str) -> set[int]:
    """Change every read of `key` in `path` to read `<key>_renamed`; the lines changed."""
    lines = path.read_bytes().splitlines(keepends=True)  # ast's columns count UTF-8 bytes
    literals = reads(ast.parse(b"".join(lines)), key)
    for literal in sorted(literals, key=lambda node: (node.lineno, node.col_offset), reverse=True):
        text = lines[literal.lineno - 1]
        start, end = literal.col_offset, literal.end_col_offset or 0
        quoted = text[start:end].decode() if literal.end_lineno == literal.lineno else ""
        assert quoted[1:-1] == key and quoted[:1] == quoted[-1:] in ("'", '"'), (path, literal.lineno, text)
        lines[literal.lineno - 1] = text[: start + 1] + f"{key}_renamed".encode() + text[end - 1 :]
    path.write_bytes(b"".join(lines))
    return {literal.lineno for literal in literals}


def folder_modules(package: Path, folder: str) -> list[Path]:
    return sorted((package / folder).glob("*.py")) if folder else sorted(package.glob("*.py"))


def caught_reads(tree: Path) -> dict[str, tuple[set[str], set[str]]]:
    """Misread every folder's key of MISREAD in the package copy under `tree` and run mypy once: per folder, (the
    lines that read its key, those at which mypy reports that key missing), as ``path:line``."""
    package = tree / "pytest_sys1cal"
    changed = {
        folder: {
            f"{path.relative_to(tree)}:{line}"
            for path in folder_modules(package, folder)
            for line in misread(path, key)
        }
        for folder, key in MISREAD.items()
    }
    errors = re.findall(r"^(pytest_sys1cal/\S+?\.py):(\d+): error: (.*)$", mypy(cwd=tree).stdout, re.M)
    return {
        folder or "the spine": (
            lines,
            {f"{path}:{line}" for path, line, said in errors if f'"{MISREAD[folder]}_renamed"' in said} & lines,
        )
        for folder, lines in changed.items()
    }


def copy_of_the_package(tmp_path: Path) -> Path:
    shutil.copytree(PACKAGE, tmp_path / "pytest_sys1cal", ignore=shutil.ignore_patterns("__pycache__", "_bundled"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    (tmp_path / "tests").mkdir()
    shutil.copy(PLUGIN, tmp_path / "tests" / PLUGIN.name)
    return tmp_path


def test_the_package_type_checks() -> None:
    done = mypy()
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_misread_report_key_is_caught_in_every_folder(tmp_path: Path) -> None:
    """Every read of a key the document does not declare is a type error at its line, in every folder: none reads
    the report untyped (a `Mapping[str, Any]`, a `.get()` mypy does not check). Each folder has reads of its key,
    so the check cannot pass by finding none."""
    result = caught_reads(copy_of_the_package(tmp_path))
    escaped = {folder: sorted(lines - caught) for folder, (lines, caught) in result.items() if lines - caught}
    assert not escaped, f"reads of a key no report type declares that mypy did not catch: {escaped}"
    counts = {folder: len(lines) for folder, (lines, _) in result.items()}
    assert min(counts.values()) >= 1, counts


def test_a_get_of_a_key_the_type_does_not_declare_is_caught(tmp_path: Path) -> None:
    """The plugin can fail: ``.get()`` of a key a TypedDict lacks, or of a key that is not a literal, is an error
    with its line (mypy alone says nothing of either)."""
    module = tmp_path / "reader.py"
    module.write_text(
        "from pytest_sys1cal.document import ReportDocument\n\n\n"
        "def seed(report: ReportDocument, key: str) -> object:\n"
        '    return report.get("seeed"), report.get(key)\n',
        encoding="utf-8",
    )
    done = mypy("--config-file", str(REPO / "pyproject.toml"), str(module))
    assert done.returncode == 1
    assert 'reader.py:5: error: TypedDict "ReportDocument" has no key "seeed"' in done.stdout, done.stdout
    assert "reader.py:5: error: TypedDict .get() key must be a string literal" in done.stdout, done.stdout
