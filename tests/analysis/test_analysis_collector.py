"""analyze() runs with Python's cyclic garbage collector paused, and leaves it as it found it."""

from __future__ import annotations

import gc

import pytest

import pytest_sys1cal.analysis as analysis


def test_the_collector_is_off_during_the_analysis_and_restored_after(monkeypatch, published_items):
    seen = []
    real = analysis.aggregate_items

    def watching(items):
        seen.append(gc.isenabled())
        return real(items)

    monkeypatch.setattr(analysis, "aggregate_items", watching)
    assert gc.isenabled()
    analysis.analyze(published_items, bootstrap=0, recalibration_splits=1)
    assert seen == [False]
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off_and_an_error_restores_it():
    gc.disable()
    try:
        with analysis.collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(RuntimeError), analysis.collector_paused():
        raise RuntimeError("in the analysis")
    assert gc.isenabled()
