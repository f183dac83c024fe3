"""Gates: thresholds.yaml (schema and reader), threshold gates, and the upgrade gate against a baseline."""
