"""The replay cache's entries without pytest runs: a cached row is checked like a parsed answer, segments are
read whole or not at all per line, keys two segments disagree on are dropped, and processes writing at once
leave every entry readable (store/replay_cache.py)."""

from __future__ import annotations

import multiprocessing
import os
import time
from array import array
from pathlib import Path
from typing import Any

import pytest

from pytest_sys1cal.codec import Codec
from pytest_sys1cal.dataset import Rendering, load_dataset
from pytest_sys1cal.models import make_adapter
from pytest_sys1cal.redact import Redactor
from pytest_sys1cal.results import ResultRow
from pytest_sys1cal.store.folder import CassetteFolder
from pytest_sys1cal.store.replay import CassetteReplay
from pytest_sys1cal.store.replay_cache import (
    MAX_SEGMENTS,
    STALE_DAYS,
    ReplayCache,
    checked_packed,
    checked_samples,
)
from tests.runs import REPO

QUESTIONS = ("noul", "choice", "choice_swapped", "score")
SETS = [("jev", "jev-1.13.0"), ("semif", "smollm2-135m-instruct-q4_1"), ("semif", "gemma-3-270m-q4_k_m"),
        ("systemone", "typed-gguf-smollm2-135m")]  # fmt: skip
STAMP = {"schema": 1, "code": "test"}


def good_sample() -> dict[str, Any]:
    return {"noul": 0.25, "choice": 0.5, "choice_swapped": 1.0, "score": [0.1] * 10}


@pytest.mark.parametrize(("model", "version"), SETS)
def test_every_row_a_bundled_set_replays_to_passes_the_check(model: str, version: str) -> None:
    """The check refuses nothing a parse gives: every rendering of the four bundled sets, read from its cassette."""
    adapter = make_adapter(model, [], version=version, base_url=None, environ={})
    folder = CassetteFolder(REPO / "cassettes", model, version, "none", Redactor(), read_only=True)
    adapter.use_recorded_settings(folder.recorded_settings)
    codec = Codec(adapter, folder.questions, folder.repeats(None))
    replay = CassetteReplay(folder, codec)
    for rendering in load_dataset("sys1cal-v1").renderings:
        row = replay.row(rendering)
        assert row is not None and checked_samples(row.samples, codec.repeats, codec.question_ids), rendering
        if row.values is not None:  # the check a cached row of doubles gets
            assert checked_packed(row.layout, row.values, codec.repeats, codec.question_ids), rendering


def cached(tmp_path: Path, sample: dict[str, Any], repeats: int = 1) -> ResultRow | None:
    """What a cache holding `sample` (packed as doubles where it can be, else JSON: results.py) gives back."""
    r = rendering()
    cache = ReplayCache(tmp_path, STAMP, "e" * 64, repeats, QUESTIONS)
    cache.add(key("k"), ResultRow.measured(r, [sample], server_model="m"))
    cache.flush()
    return ReplayCache(tmp_path, STAMP, "e" * 64, repeats, QUESTIONS).row(r, key("k"))


@pytest.mark.parametrize(
    ("change", "value"),
    [
        ("noul", 5.0),
        ("noul", float("nan")),
        ("noul", float("inf")),
        ("noul", -0.25),
        ("noul", 1),  # an int: a parse always gives floats
        ("noul", True),
        ("noul", None),
        ("noul", [0.5]),  # a list where a question's one probability belongs
        ("choice", "0.5"),
        ("score", [0.2] * 10),  # sums to 2
        ("score", [0.5, 0.5]),  # not the 10 levels
        ("score", [float("nan")] + [0.1] * 9),
        ("score", 0.5),
        ("coverage", {"noul": 1.5}),
        ("coverage", {"noul": float("nan")}),
    ],
)
def test_a_value_no_parse_gives_is_refused(tmp_path: Path, change: str, value: Any) -> None:
    """Through a real cache, in whichever form results.py keeps the row: doubles, or JSON text."""
    assert cached(tmp_path / "good", good_sample()) is not None
    assert cached(tmp_path / "coverage", {**good_sample(), "coverage": {"noul": 0.5}}) is not None
    sample = good_sample()
    sample[change] = value
    assert cached(tmp_path / "changed", sample) is None
    assert not checked_samples([sample], 1, QUESTIONS)


def test_the_shape_must_be_the_runs(tmp_path: Path) -> None:
    assert cached(tmp_path / "repeats", good_sample(), repeats=2) is None  # one sample for two repeats
    assert not checked_samples([good_sample()], 2, QUESTIONS)
    missing = good_sample()
    del missing["choice_swapped"]
    assert cached(tmp_path / "missing", missing) is None
    assert not checked_samples([missing], 1, QUESTIONS)
    assert not checked_samples({"noul": 0.5}, 1, ("noul",))
    assert checked_samples([{"noul": 0.0}, {"noul": 1.0}], 2, ("noul",))


def rendering(index: int = 0) -> Rendering:
    return load_dataset("sys1cal-v1").renderings[index]


def key(name: str) -> str:
    """An entry key of the shape entry_key gives: three tab-separated fields (here not hashes)."""
    return f"{name}\t{name}\t-"


def row_of(r: Rendering, noul: float) -> ResultRow:
    return ResultRow.measured(r, [{"noul": noul}], server_model="m")


def test_entries_round_trip_through_a_segment_and_a_warm_cache_writes_nothing(tmp_path: Path) -> None:
    r = rendering()
    cold = ReplayCache(tmp_path, STAMP, "a" * 64, 1, ("noul",))
    assert cold.row(r, key("k1")) is None
    cold.add(key("k1"), row_of(r, 0.25))
    cold.flush()
    (segment,) = tmp_path.glob("*/*.tsv")
    warm = ReplayCache(tmp_path, STAMP, "a" * 64, 1, ("noul",))
    assert warm.row(r, key("k1")) == row_of(r, 0.25)
    assert warm.row(r, key("k1")) is None  # taken once: a rendering is replayed once
    warm.flush()
    assert list(tmp_path.glob("*/*.tsv")) == [segment]
    other = ReplayCache(tmp_path, {**STAMP, "code": "changed"}, "a" * 64, 1, ("noul",))  # same folder, other stamp
    assert other.row(r, key("k1")) is None


def test_a_key_two_segments_disagree_on_is_used_from_neither(tmp_path: Path) -> None:
    r = rendering()
    for noul in (0.25, 0.75):
        cache = ReplayCache(tmp_path, STAMP, "b" * 64, 1, ("noul",))
        cache.add(key("k"), row_of(r, noul))
        cache.add(key(f"k{noul}"), row_of(r, noul))
        cache.flush()
    cache = ReplayCache(tmp_path, STAMP, "b" * 64, 1, ("noul",))
    assert cache.row(r, key("k")) is None
    assert cache.row(r, key("k0.75")) == row_of(r, 0.75)


def test_past_max_segments_a_reader_writes_their_union_as_one(tmp_path: Path) -> None:
    r = rendering()
    for index in range(MAX_SEGMENTS + 1):
        cache = ReplayCache(tmp_path, STAMP, "c" * 64, 1, ("noul",))
        cache.add(key(f"k{index}"), row_of(r, index / 16))
        cache.flush()
    assert len(list(tmp_path.glob("*/*.tsv"))) == MAX_SEGMENTS + 1
    reader = ReplayCache(tmp_path, STAMP, "c" * 64, 1, ("noul",))
    assert reader.row(r, key("k3")) == row_of(r, 3 / 16)
    (merged,) = tmp_path.glob("*/*.tsv")
    assert len(merged.read_text(encoding="utf-8").splitlines()) == 1 + MAX_SEGMENTS + 1
    again = ReplayCache(tmp_path, STAMP, "c" * 64, 1, ("noul",))
    assert [again.row(r, key(f"k{i}")) for i in range(MAX_SEGMENTS + 1)] == [
        row_of(r, i / 16) for i in range(MAX_SEGMENTS + 1)
    ]


def _fill(root: str, worker: int, count: int, start: Any) -> None:
    """One writer process: `count` entries of its own and one every writer shares, flushed at once with the
    others (several flushes, the last ones compacting)."""
    start.wait()
    r = rendering()
    for flush in range(3):
        cache = ReplayCache(Path(root), STAMP, "d" * 64, 1, ("noul",))
        cache.row(r, key("load"))  # read what is there: past MAX_SEGMENTS this reader compacts
        for index in range(count):
            cache.add(key(f"w{worker}-{flush}-{index}"), row_of(r, (index % 100) / 100))
        cache.add(key("shared"), row_of(r, 0.5))
        cache.flush()


@pytest.mark.e2e  # starts processes
def test_processes_filling_the_cache_at_once_lose_and_tear_nothing(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    writers = [context.Process(target=_fill, args=(str(tmp_path), w, 500, start)) for w in range(4)]
    for writer in writers:
        writer.start()
    start.set()
    for writer in writers:
        writer.join(60)
        assert writer.exitcode == 0
    assert not list(tmp_path.glob("*/.*.tmp"))  # every write was renamed into place
    cache = ReplayCache(tmp_path, STAMP, "d" * 64, 1, ("noul",))
    r = rendering()
    assert cache.row(r, key("shared")) == row_of(r, 0.5)
    for worker in range(4):
        for flush in range(3):
            for index in (0, 499):
                assert cache.row(r, key(f"w{worker}-{flush}-{index}")) == row_of(r, (index % 100) / 100)


def test_a_cached_row_that_disagrees_with_its_cassette_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The audit: a cached row is also derived from its cassette now and then; a row that differs raises a fatal
    error naming the cassette and the cache folder (here the audit is made certain)."""
    import pytest_sys1cal.store.replay as replay_module
    from pytest_sys1cal.store.replay import CacheDisagrees

    adapter = make_adapter("jev", [], version="jev-1.13.0", base_url=None, environ={})
    folder = CassetteFolder(REPO / "cassettes", "jev", "jev-1.13.0", "none", Redactor(), read_only=True)
    codec = Codec(adapter, folder.questions, folder.repeats(None))
    replay = CassetteReplay(folder, codec)
    replay.use_cache(tmp_path)
    r = rendering()
    honest = replay.row(r)
    replay.close()
    (segment,) = tmp_path.glob("*/*.tsv")
    lines = segment.read_text(encoding="utf-8").split("\n")
    fields = lines[1].split("\t")
    fields[5] = array("d", [0.5]).tobytes().hex() + fields[5][16:]
    segment.write_text("\n".join([lines[0], "\t".join(fields)]), encoding="utf-8")
    replay.use_cache(tmp_path)
    monkeypatch.setattr(replay_module, "AUDIT", 1)  # randbelow(1) is 0: every cached row is audited
    with pytest.raises(CacheDisagrees, match="the replay cache holds a row for it") as caught:
        replay.row(r)
    assert caught.value.fatal and str(folder.path_for(r)) in str(caught.value)
    assert honest is not None and honest.samples[0]["noul"] != 0.5


def test_a_manifest_written_anew_leaves_an_old_index_digest_out(tmp_path: Path) -> None:
    """A folder an older plugin recorded keeps its `replay_index` until a recording rewrites the manifest, which
    then no longer records it (docs/cassettes.md): the field is read by nothing."""
    folder = CassetteFolder(tmp_path, "jev", "v1", "once", Redactor())
    folder.write_manifest({"model": "jev", "version": "v1", "replay_index": "ab" * 32, "repeats": 1})
    written = (tmp_path / "jev" / "v1" / "manifest.json").read_text(encoding="utf-8")
    assert "replay_index" not in written and '"repeats": 1' in written


def test_a_stamp_no_replay_used_for_two_weeks_is_removed_when_another_is_written(tmp_path: Path) -> None:
    """Every edit of the plugin's source or new adapter setting starts a stamp; the old ones would pile up."""
    r = rendering()
    old, recent, used = "a" * 32, "b" * 32, "c" * 32
    for stamp in (old, recent, used):
        cache = ReplayCache(tmp_path, STAMP, stamp + "0" * 32, 1, QUESTIONS)
        cache.add(key("k"), ResultRow.measured(r, [good_sample()], server_model="m"))
        cache.flush()
    (tmp_path / "notes").mkdir()  # not a stamp's folder: never touched
    weeks_ago = time.time() - (STALE_DAYS + 1) * 86400
    for name in (old, used, "notes"):
        os.utime(tmp_path / name, (weeks_ago, weeks_ago))
    os.utime(tmp_path / recent, (weeks_ago + 2 * 86400,) * 2)  # 13 days: kept
    assert ReplayCache(tmp_path, STAMP, used + "0" * 32, 1, QUESTIONS).row(r, key("k")) is not None  # read: used
    fresh = ReplayCache(tmp_path, STAMP, "d" * 64, 1, QUESTIONS)
    fresh.add(key("k"), ResultRow.measured(r, [good_sample()], server_model="m"))
    fresh.flush()
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([recent, used, "d" * 32, "notes"])
