"""The README's first screen stays true: its two commands are the ones CI and the tests rely on."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _first_code_block() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert block, "the README must open with a bash block holding the install step and the two commands"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.split("#")[0].strip()]


def test_readme_gives_install_main_job_and_test_command() -> None:
    commands = _first_code_block()
    assert 'pip install -e ".[test]"' in commands
    assert "pytest --sys1cal --model jev" in commands
    assert commands[-1] == "pytest"


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    ci_commands = [line for line in ci if line and not line.startswith("#")]
    assert ci_commands[-1] == _first_code_block()[-1]
