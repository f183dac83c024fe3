"""Where an upgrade regressed (analysis/cells.py): Benjamini–Hochberg against scipy's, the per-cell test against
scipy's t-test, and the marks on hand-made paired differences: none for a drop at the fail margin everywhere, the
family a drop beyond it is confined to, its worst renderings named. The false discovery rate and the power over many
simulated comparisons: scripts/cell_fdr_simulation.py."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_sys1cal.analysis.cells import benjamini_hochberg, group_differences, mark_regressed
from pytest_sys1cal.analysis.stats import Clusters

FAIL_MARGIN = 0.01  # δ₀: a cell is marked only where it is shown worse than −δ₀


@pytest.mark.parametrize("seed", range(10))
def test_benjamini_hochberg_is_scipys(seed: int) -> None:
    from scipy.stats import false_discovery_control

    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 1, 30), rng.uniform(0, 0.01, int(rng.integers(0, 10)))])
    rejected, adjusted = benjamini_hochberg(p, 0.10)
    np.testing.assert_allclose(adjusted, false_discovery_control(p, method="bh"), rtol=1e-12)
    assert np.array_equal(rejected, adjusted <= 0.10)


def cells(d: np.ndarray, families: list[str], latent: np.ndarray, seed: int = 0) -> dict:
    clusters = Clusters.of(latent)
    counts = clusters.resample_counts(np.random.default_rng(seed), 2000)
    both = np.ones(d.size, dtype=bool)
    ids = [f"r{i:04d}" for i in range(d.size)]
    by_family = group_differences(families, clusters, counts, d, both, 1 + d, np.ones(d.size), ids, FAIL_MARGIN)
    summary = mark_regressed({"noul": {"by_family": by_family}})
    return {**by_family, "summary": summary}


def paired(shift: dict[str, float], seed: int = 0) -> tuple[np.ndarray, list[str], np.ndarray]:
    """6 families × 15 problems × 4 renderings; D = the family's shift + problem noise + rendering noise."""
    rng = np.random.default_rng(seed)
    families = [f"f{k}" for k in range(6) for _ in range(60)]
    latent = np.repeat([f"f{k}p{j}" for k in range(6) for j in range(15)], 4)
    d = np.array([shift.get(f, -FAIL_MARGIN) for f in families]) + np.repeat(rng.normal(0, 0.03, 90), 4)
    return d + rng.normal(0, 0.02, 360), families, latent


def marked(result: dict) -> list[str]:
    return [name for name, cell in result.items() if name != "summary" and cell["regressed"]]


def test_a_drop_at_the_margin_everywhere_marks_none() -> None:
    assert marked(cells(*paired({}))) == []


def test_a_drop_confined_to_one_family_marks_it_with_its_worst_renderings() -> None:
    d, families, latent = paired({"f2": -0.12})
    result = cells(d, families, latent)
    assert marked(result) == ["f2"]
    cell = result["f2"]
    assert cell["difference"] < -FAIL_MARGIN and cell["p_value"] <= cell["q_value"] <= 0.10
    lowest = np.argsort(np.where(np.array(families) == "f2", d, np.inf))[:3]
    assert [w["instance_id"] for w in cell["worst"]] == [f"r{i:04d}" for i in lowest]
    assert result["summary"] == {"q": 0.10, "tested": 6, "regressed": 1}


def test_the_test_is_students_t_on_the_problems_means() -> None:
    from scipy.stats import ttest_1samp

    d, families, latent = paired({"f2": -0.04})
    cell = cells(d, families, latent)["f2"]
    means = d[np.array(families) == "f2"].reshape(15, 4).mean(axis=1)
    expected = ttest_1samp(means, -FAIL_MARGIN, alternative="less").pvalue
    assert cell["p_value"] == pytest.approx(expected, rel=1e-9)


def test_no_fail_margin_no_test() -> None:
    d, families, latent = paired({})
    clusters = Clusters.of(latent)
    counts = clusters.resample_counts(np.random.default_rng(0), 50)
    cell = group_differences(families, clusters, counts, d, np.ones(d.size, bool), 1 + d, np.ones(d.size))["f0"]
    assert cell["p_value"] is None and "worst" not in cell
