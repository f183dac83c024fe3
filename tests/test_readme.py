"""The README stays a ten-minute read whose first screen is true: for users of the package, the install and the
main job; for a clone, the two commands CI and the tests rely on (the step-by-step commands run in
tests/test_packaging.py; the links and the docs index are checked in tests/test_docs.py)."""

from __future__ import annotations

import re

from tests.runs import REPO

FIRST_SCREEN = 40  # lines
# Reference lives in docs/ (docs/index.md lists it): the README keeps the pitch, the install, the main job, the
# step-by-step path, the options and the index of the docs.
MAX_LINES = 300


def _block_under(heading: str) -> list[str]:
    text = (REPO / "README.md").read_text()
    assert text.index(heading) < len("\n".join(text.splitlines()[:FIRST_SCREEN])), (
        f"{heading} is not on the first screen"
    )
    block = re.search(r"```bash\n(.*?)```", text.split(heading, 1)[1], re.S)
    assert block, f"{heading} must hold a bash block"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.split("#")[0].strip()]


def _first_code_block() -> list[str]:
    return _block_under("## Work on it")


def test_readme_gives_install_main_job_and_test_command() -> None:
    commands = _first_code_block()
    assert 'pip install -e ".[test]"' in commands
    assert "pytest --sys1cal --model jev" in commands
    assert commands[-1] == "pytest -n 2"  # the whole suite, on the two cores CI has


def test_readme_gives_users_the_install_and_the_main_job() -> None:
    commands = _block_under("## Use it in your project")
    assert commands[:2] == ['pip install "pytest-sys1cal[html]"', "pytest --sys1cal --model jev"]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    ci_commands = [line for line in ci if line and not line.startswith("#")]
    assert ci_commands[-1] == _first_code_block()[-1]


def test_the_readme_is_at_most_300_lines() -> None:
    lines = len((REPO / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"README.md has {lines} lines; move reference to a docs/ page (at most {MAX_LINES})"
