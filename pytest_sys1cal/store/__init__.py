"""The cassette store: one version folder and its life (folder.py), the cassette file format (cassette.py), replay
from a cassette's bytes (replay.py) through the replay cache (replay_cache.py), vcrpy's side (vcrpy_side.py),
the folder's manifest (manifest.py) and the lock a recording holds on it (lock.py). Not the recorded traffic itself, which lives in the repository's cassettes/ folder."""
