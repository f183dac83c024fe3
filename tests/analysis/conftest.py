"""Inputs for the analysis tests: the published Jev outputs as replayed items, and a builder for small ones."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_sys1cal.analysis import analyze
from tests.runs import REPO

PUBLISHED = REPO / "fixtures" / "published-jev"


def _bench_analysis():
    """bench/bench_analysis.py, whose loader of the published outputs the tests share (bench/ is a folder of
    scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("bench_analysis", REPO / "bench" / "bench_analysis.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def score_with_mean(mu: float) -> list[float]:
    """A Score distribution on two adjacent levels whose expectation Σ q_j·j/9 is exactly mu."""
    position = mu * 9
    low = min(math.floor(position), 8)
    q = [0.0] * 10
    q[low], q[low + 1] = 1 - (position - low), position - low
    return q


def build_item(latent: str, rendering: str, p_star: float, *, error: str | None = None, **answers: Any) -> dict:
    """One rendering with one sample. answers: noul, choice, choice_swapped, mu (becomes a Score answer)."""
    sample = {key: value for key, value in answers.items() if key != "mu"}
    if "mu" in answers:
        sample["score"] = score_with_mean(answers["mu"])
    return {
        "instance_id": f"{latent}__repr_{rendering}",
        "latent_instance_id": latent,
        "family": latent.split("__")[0],
        "representation": rendering,
        "p_star": p_star,
        "samples": [sample] if sample else [],
        "error": error,
    }


@pytest.fixture
def make_item() -> Callable[..., dict]:
    return build_item


@pytest.fixture(scope="session")
def published_dir() -> Path:
    return PUBLISHED


@pytest.fixture(scope="session")
def published_items() -> list[dict]:
    """The paper's per-item Jev outputs as the bundled cassettes replay them: one sample per rendering."""
    return _bench_analysis().published_items(PUBLISHED / "noul_choice_score_instance_metrics.csv")


@pytest.fixture(scope="session")
def published(published_items: list[dict]) -> dict:
    return analyze(published_items, bootstrap=1000)  # the paper-comparison tests read 1,000-resample intervals
