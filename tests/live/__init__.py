"""Tests against real local model servers (marker live); skipped where the server is not installed."""
