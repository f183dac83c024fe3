"""Other versions of a model, replayed offline: the upgrade gate's baseline (upgrade_baseline.py), one version folder
replayed outside a run (replay.py) and every version side by side (trend.py). Takes plain values, never the
pytest session's Settings."""
