"""The package type-checks (mypy, as configured in pyproject.toml), so the report document's typed face
(document.py) holds every reader to the keys it names: a mistyped key fails here, not in a user's run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runs import REPO

# Runs mypy over the package in a subprocess.
pytestmark = pytest.mark.e2e


pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")


def mypy(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", *args], cwd=cwd, capture_output=True, text=True
    )


def test_the_package_type_checks() -> None:
    done = mypy()
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_mistyped_report_key_is_caught(tmp_path: Path) -> None:
    """The check can fail: a renderer reading a key the document does not have is an error, with the line."""
    package = tmp_path / "pytest_sys1cal"
    shutil.copytree(REPO / "pytest_sys1cal", package, ignore=shutil.ignore_patterns("__pycache__", "_bundled"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    renderer = package / "report" / "interrupted.py"
    text = renderer.read_text(encoding="utf-8")
    assert 'result["counts"]' in text
    renderer.write_text(text.replace('result["counts"]', 'result["count"]', 1), encoding="utf-8")
    done = mypy(cwd=tmp_path)
    assert done.returncode == 1
    assert "report/interrupted.py" in done.stdout and '"count"' in done.stdout, done.stdout
