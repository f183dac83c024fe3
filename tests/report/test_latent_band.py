"""Figures that agree with the tests (issue 37): Table 2 and the HTML report's Score → Choice map show the
latent-uncertainty (T/U/F) band only when the valid test rejects λ = 0 at the λ gate's α; otherwise they say
"no unspoken mass detected (p = …)", and a negative R² is said in words. Read from the pinned reports of the
bundled sets (tests/golden) and from Jev's with the test's p-value set to the issue's 0.649."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from pytest_sys1cal.report.paper_tables import table2
from pytest_sys1cal.report.table import markdown
from tests.reports import golden

BAND_COLOUR = "#7570b3"  # the band's and the fitted curve's colour in report/figures.py


def no_mass(report: dict[str, Any], p: float = 0.649) -> dict[str, Any]:
    out = copy.deepcopy(report)
    out["uncertainty"]["test"]["p_value"] = p
    return out


def rows(report: dict[str, Any]) -> dict[str, list[str]]:
    return {row[0]: row[1:] for row in table2(report).rows}


def test_table2_shows_the_band_where_the_test_rejects_lambda_0() -> None:
    report = golden("jev")  # p ≤ 1e-10 < α 0.01
    jev = rows(report)
    assert jev["λ (global fit)"][0] == f"{report['uncertainty']['lambda']:.3f}"
    assert next(v for k, v in jev.items() if k.startswith("U_max"))[0] != "— (not detected)"
    assert not any(label.startswith("latent uncertainty:") for label in jev)


@pytest.mark.parametrize("model", ["semif", "gemma"])
def test_table2_says_no_unspoken_mass_where_the_test_does_not(model: str) -> None:
    table = rows(golden(model))  # p ≈ 1 ≥ α 0.01: Choice sits below its Score expectation
    assert "latent uncertainty: no unspoken mass detected (p = 1.000 ≥ α = 0.01, the λ gate's)" in table
    assert next(v for k, v in table.items() if k.startswith("U_max"))[:2] == ["— (not detected)", "—"]
    assert "λ (global fit, not detected)" in table


def test_a_fit_the_test_rejects_is_not_drawn_and_the_negative_r2_is_said() -> None:
    """The issue's case: a tight fitted λ, R² < 0, and the valid test's p = 0.649."""
    report = no_mass(golden("typed-gguf"))  # its R² is −0.116
    text = "\n".join(markdown(table2(report)))
    assert "no unspoken mass detected (p = 0.649 ≥ α = 0.01, the λ gate's)" in text
    assert "-0.116 (below 0: worse than a flat line at Choice's mean)" in text
    without_gate = no_mass(golden("typed-gguf"), p=0.03)
    without_gate["gates"] = [g for g in without_gate["gates"] if "lambda" not in g["name"]]
    assert "latent uncertainty:" not in "\n".join(markdown(table2(without_gate)))  # the default α 0.05: 0.03 rejects


def score_choice_figure(report: dict[str, Any], path: Path) -> str:
    pytest.importorskip("matplotlib", reason="the HTML report needs the html extra: pip install 'pytest-sys1cal[html]'")
    from pytest_sys1cal.report.html import write_html
    from pytest_sys1cal.run_report import Report

    write_html(path, Report.read_back(report), None)
    page = path.read_text(encoding="utf-8")
    start = page.index('id="fig-score-choice"')
    return page[start : page.index("</figure>", start)]


@pytest.mark.slow  # two whole HTML reports drawn
def test_the_score_choice_map_draws_the_band_only_where_the_test_finds_it(tmp_path: Path) -> None:
    found = score_choice_figure(golden("jev"), tmp_path / "jev.html")
    assert BAND_COLOUR in found and "no unspoken mass detected" not in found
    absent = score_choice_figure(no_mass(golden("jev")), tmp_path / "none.html")
    assert BAND_COLOUR not in absent  # neither the band nor the fitted curve
    assert "no unspoken mass detected" in absent and "p = 0.649 ≥ α = 0.01, the λ gate" in absent
