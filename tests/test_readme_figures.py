"""The README's figures of the bundled Jev run (docs/figures/, drawn by scripts/readme_figures.py) are not stale.

They are redrawn here from tests/golden/jev-report.json, which tests/test_golden_reports.py pins to an
offline replay of the bundled cassettes, so a change to the cassettes, the analysis or the figure code that
moves a figure fails here until the script is rerun. SVG bytes depend on the matplotlib version; the test
extra pins the one the committed files name, and with another the test is skipped saying so.
"""

from __future__ import annotations

import importlib.util
import re

import pytest

from tests.reports import golden
from tests.runs import REPO

matplotlib = pytest.importorskip(
    "matplotlib", reason="the figures need the html extra: pip install 'pytest-sys1cal[html]'"
)

FIGURES = REPO / "docs" / "figures"


def _script():
    spec = importlib.util.spec_from_file_location("readme_figures", REPO / "scripts" / "readme_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_shows_the_figures() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in _script().README_FIGURES:
        assert f"](docs/figures/{name})" in readme, name


def test_the_committed_figures_are_those_of_the_bundled_run() -> None:
    script = _script()
    committed = {name: (FIGURES / name).read_text(encoding="utf-8") for name in script.README_FIGURES}
    versions = {re.search(r"matplotlib (\S+) -->", text).group(1) for text in committed.values()}
    if versions != {matplotlib.__version__}:
        pytest.skip(
            f"the committed figures were drawn with matplotlib {', '.join(sorted(versions))}, this is "
            f"{matplotlib.__version__}: their bytes compare only with the same version (pip install '.[test]')"
        )
    drawn = script.draw(golden("jev"))
    stale = [name for name, text in drawn.items() if committed[name] != text]
    assert not stale, f"stale: {', '.join(stale)}; redraw them with: python scripts/readme_figures.py"
