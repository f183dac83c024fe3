"""Tests of the analysis: pure functions on crafted and published data."""
