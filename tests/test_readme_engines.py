"""The README's table of recorded engines says what replaying each cassette set prints: every number in a
row is recomputed here from a real replay of that set, so the table cannot go stale."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ROWS = {
    "Jev `jev-1.13.0`": ("jev", "jev-1.13.0"),
    "SemIf readout of SmolLM2-135M-Instruct": ("semif", "smollm2-135m-instruct-q4_1"),
    "SemIf readout of Gemma-3-270M": ("semif", "gemma-3-270m-q4_k_m"),
    "typed-gguf 0.3.0 serving SmolLM2-135M-Instruct": ("systemone", "typed-gguf-smollm2-135m"),
}


def readme_row(label: str) -> list[str]:
    table = (REPO / "README.md").read_text().split("## What the bundled cassettes show", 1)[1].split("\n\n", 2)[1]
    (row,) = [line for line in table.splitlines() if line.startswith(f"| {label}")]
    return [cell.strip() for cell in row.strip("|").split("|")][1:]


def signed(value: float, digits: int) -> str:
    return f"{value:+.{digits}f}".replace("-", "−")


def expected_cells(report: dict) -> list[str]:
    p, swap, readout = report["primitives"], report["option_swap"], report["readout"]["choice"]
    recalibrated = report["readout_recalibrated"]["choice"]
    ovl = " / ".join(f"{p[k]['mean_ovl']:.3f}" for k in ("noul", "choice", "score"))
    if swap is None:
        shift = first = "not measured"
    else:
        floor = "≤ 1e-10" if swap["p_value"] <= 1e-10 else f"= {swap['p_value']:.2g}"
        shift, first = f"{signed(swap['mean_shift'], 3)} (p {floor})", f"{swap['first_position_rate']:.3f}"
    margins = f"{signed(readout['offset'], 2)} / {readout['sep']:.2f}".replace("-", "−")
    accuracy = (
        f"{recalibrated['raw']['balanced_accuracy']:.3f} → {recalibrated['recalibrated']['balanced_accuracy']:.3f}"
    )
    return [ovl, shift, first, margins, accuracy]


@pytest.mark.parametrize("label", sorted(ROWS))
def test_each_engine_row_is_what_its_replay_prints(pytester: pytest.Pytester, tmp_path: Path, label: str) -> None:
    model, version = ROWS[label]
    report = tmp_path / "report.json"
    result = pytester.runpytest(
        "--sys1cal",
        f"--model={model}",
        f"--sys1cal-model-version={version}",
        f"--sys1cal-cassettes={REPO / 'cassettes'}",
        f"--sys1cal-report={report}",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    cells = readme_row(label)
    assert [re.sub(r"\s+", " ", c) for c in cells] == expected_cells(json.loads(report.read_text()))
