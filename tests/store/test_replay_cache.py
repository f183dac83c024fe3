"""The replay cache (issue 36): what replaying each cassette gave lives under pytest's cache dir, never in a
version folder, is keyed by the sha256 of the cassette's bytes, the run's requests, the manifest's answers
digest and the code's stamp, and is checked like a parsed answer; a replay index an older plugin left in a
folder (and its digest in the manifest) decides nothing. Real replays through pytester of copies of the bundled
recordings, with pytest's cacheprovider on (the cache dir is the pytester folder's .pytest_cache)."""

from __future__ import annotations

import hashlib
import json
import shutil
from array import array
from pathlib import Path

import pytest

from pytest_sys1cal.__main__ import main
from pytest_sys1cal.dataset import load_dataset
from pytest_sys1cal.models.systemone import SystemOneAdapter
from pytest_sys1cal.store.cassette import cassette_name
from pytest_sys1cal.store.replay_cache import CACHE_NAME, requests_key
from tests.field import tree_hashes
from tests.runs import CASSETTES, THRESHOLDS, sys1cal

VERSION = "typed-gguf-smollm2-135m"
MODEL = ("--sys1cal-model=systemone", f"--sys1cal-model-version={VERSION}")
SETS = {
    "jev": ("--model=jev",),
    "semif": ("--model=semif",),
    "gemma": ("--model=semif", "--sys1cal-model-version=gemma-3-270m-q4_k_m"),
    "typed-gguf": MODEL,
}
# Jev's own floors, applied to the small engine's cassettes: they fail all three (0.633, 0.725, 0.694).
FLOORS = "systemone:\n  noul:\n    min_mean_ovl: 0.90\n  choice:\n    min_mean_ovl: 0.735\n  score:\n    min_mean_ovl: 0.865\n"
EDITED = "compound/compound__seed_000042__repr_table.json"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A cassette root holding a copy of the bundled typed-gguf recording (one repeat, the four questions)."""
    shutil.copytree(CASSETTES / "systemone" / VERSION, tmp_path / "cassettes" / "systemone" / VERSION)
    return tmp_path / "cassettes"


def replay(pytester: pytest.Pytester, root: Path, name: str, *extra: str) -> tuple[pytest.RunResult, bytes]:
    """A replay of the copy (with pytest's cache unless `extra` turns it off); its JSON report's bytes."""
    report = pytester.path / f"{name}.json"
    result = sys1cal(pytester, *MODEL, f"--sys1cal-cassettes={root}", f"--sys1cal-report={report}", *extra, cache=True)
    return result, report.read_bytes() if report.exists() else b""


def segments(pytester: pytest.Pytester) -> list[Path]:
    return sorted((pytester.path / ".pytest_cache" / "d" / CACHE_NAME).glob("*/*.tsv"))


def noul_of(report: bytes, name: str = EDITED) -> float:
    instance = name.split("/")[1].removesuffix(".json")
    items = json.loads(report)["items"]
    (item,) = [item for item in items if item["instance_id"] in (instance, f"{instance}__parallel_primitives")]
    return float(item["p_noul"])


def forge_entry(segment: Path, root: Path, name: str, noul: float) -> None:
    """Set the first double (Noul, repeat 1) of the cache entry of cassette `name` (under `root`) to `noul`."""
    key = hashlib.sha256((root / "systemone" / VERSION / name).read_bytes()).hexdigest() + "\t"
    lines = segment.read_text(encoding="utf-8").split("\n")
    (at,) = [i for i, line in enumerate(lines) if line.startswith(key)]
    fields = lines[at].split("\t")
    assert fields[4].startswith("noul:0,"), fields[4]
    fields[5] = array("d", [noul]).tobytes().hex() + fields[5][16:]
    lines[at] = "\t".join(fields)
    segment.write_text("\n".join(lines), encoding="utf-8")


def test_cold_then_warm_replays_give_the_same_bytes_and_a_warm_one_reads_every_row_from_the_cache(
    pytester: pytest.Pytester, root: Path
) -> None:
    folder = tree_hashes(root)
    cold, first = replay(pytester, root, "cold")
    cold.assert_outcomes(passed=365)
    written = segments(pytester)
    assert len(written) == 1 and len(written[0].read_text(encoding="utf-8").splitlines()) == 1 + 365
    assert tree_hashes(root) == folder  # nothing written into, or beside, the version folder
    warm, again = replay(pytester, root, "warm")
    warm.assert_outcomes(passed=365)
    assert again == first
    assert segments(pytester) == written  # every rendering found its entry: a miss would have written a segment
    off, plain = replay(pytester, root, "off", "-p", "no:cacheprovider")
    off.assert_outcomes(passed=365)
    assert plain == first


@pytest.mark.parametrize("name", sorted(SETS))
def test_each_bundled_set_replays_to_the_same_bytes_cold_and_warm(
    pytester: pytest.Pytester, tmp_path: Path, name: str
) -> None:
    reports = []
    for run in ("cold", "warm"):
        path = tmp_path / f"{run}.json"
        result = sys1cal(
            pytester,
            *SETS[name],
            f"--sys1cal-cassettes={CASSETTES}",
            f"--sys1cal-thresholds={THRESHOLDS}",
            f"--sys1cal-report={path}",
            cache=True,
        )
        assert result.ret == 0, result.stdout.str()[-2000:]
        reports.append(path.read_bytes())
    assert reports[0] == reports[1]
    assert segments(pytester), "the cold run filled no cache"


@pytest.mark.parametrize("poison", [5.0, float("nan"), -0.25])
def test_a_poisoned_entry_is_refused_and_the_cassette_decides(
    pytester: pytest.Pytester, root: Path, poison: float
) -> None:
    _, honest = replay(pytester, root, "cold", "-k", "compound__seed_000042")
    (segment,) = segments(pytester)
    forge_entry(segment, root, EDITED, poison)
    result, again = replay(pytester, root, "poisoned", "-k", "compound__seed_000042")
    result.assert_outcomes(passed=3, deselected=362)
    assert again == honest


def test_an_entry_for_other_bytes_is_not_used(pytester: pytest.Pytester, root: Path) -> None:
    """An entry forged in range (Noul 0.125) for the bytes a cassette had: once the file's bytes differ (here
    re-indented, the same answers), its row comes from the file, not from the entry."""
    _, honest = replay(pytester, root, "cold", "-k", "compound__seed_000042")
    (segment,) = segments(pytester)
    forge_entry(segment, root, EDITED, 0.125)
    cassette = root / "systemone" / VERSION / EDITED
    cassette.write_text(json.dumps(json.loads(cassette.read_bytes()), indent=4), encoding="utf-8")
    result, again = replay(pytester, root, "reindented", "-k", "compound__seed_000042")
    result.assert_outcomes(passed=3, deselected=362)
    assert again == honest and noul_of(again) != 0.125


def test_a_torn_segment_and_a_stranger_s_file_are_ignored(pytester: pytest.Pytester, root: Path) -> None:
    """A segment cut short mid-line (a killed writer that did not rename: here by hand) loses that line only,
    and a file that is no segment of this stamp is not read."""
    _, honest = replay(pytester, root, "cold")
    (segment,) = segments(pytester)
    text = segment.read_text(encoding="utf-8")
    segment.write_text(text[: len(text) // 2], encoding="utf-8")  # the middle entry is torn
    (segment.parent / "junk.tsv").write_text("# sys1cal replay cache {}\nnot\tan\tentry\n", encoding="utf-8")
    result, again = replay(pytester, root, "torn")
    result.assert_outcomes(passed=365)
    assert again == honest
    assert len(segments(pytester)) == 3  # the second half, read from the cassettes, was written anew


def test_a_cache_forged_in_range_is_caught_and_stops_the_run(pytester: pytest.Pytester, root: Path) -> None:
    """Every entry forged to a valid but wrong answer under its right key: each cached row is also derived from
    its cassette with probability 1/16, so 365 forged entries pass unseen with probability (15/16)^365 ≈ 6e-11.
    The run stops, saying which file and what to do, and no gate passes."""
    (root.parent / "thresholds.yaml").write_text(FLOORS, encoding="utf-8")
    replay(pytester, root, "cold")
    (segment,) = segments(pytester)
    lines = segment.read_text(encoding="utf-8").split("\n")
    for at in range(1, len(lines)):
        fields = lines[at].split("\t")
        if len(fields) == 6:
            fields[5] = array("d", [0.5]).tobytes().hex() + fields[5][16:]
            lines[at] = "\t".join(fields)
    segment.write_text("\n".join(lines), encoding="utf-8")
    result, _ = replay(pytester, root, "forged", f"--sys1cal-thresholds={root.parent / 'thresholds.yaml'}")
    assert result.ret not in (0, 1)
    result.stdout.fnmatch_lines(["*the replay cache holds a row for it that is not what it replays as*--cache-clear*"])
    assert "every gate in force passed" not in result.stdout.str()


def old_index(folder: Path) -> None:
    """What the finding did: a replay-index.tsv (an older plugin's format) whose every row answers p* exactly,
    and its sha256 written into the manifest's `replay_index`, as that plugin required before it used one."""
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    adapter = SystemOneAdapter(VERSION, None, {})
    questions = tuple(manifest["questions"])
    stamp = {"schema": 1, "plugin": "x", "questions": list(questions), "repeats": manifest["repeats"]}
    lines = ["# sys1cal replay index " + json.dumps(stamp, sort_keys=True)]
    for rendering in load_dataset("sys1cal-v1").renderings:
        name = cassette_name(rendering)
        data = (folder / name).read_bytes()
        p = rendering.p_star
        score = [0.0] * 10
        score[min(9, round(p * 9))] = 1.0
        samples = array("d", [p, p, p, *score]).tobytes().hex()
        requests = requests_key(adapter.requests(rendering, questions))
        fields = (name, hashlib.sha256(data).hexdigest(), requests, manifest["answers"][name], '"x"')
        lines.append("\t".join([*fields, "noul:0,choice:0,choice_swapped:0,score:10", samples]))
    text = "\n".join(sorted(lines[1:])) + "\n"
    (folder / "replay-index.tsv").write_text(lines[0] + "\n" + text, encoding="utf-8")
    manifest["replay_index"] = hashlib.sha256((folder / "replay-index.tsv").read_bytes()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["n0", "n2"])
def test_an_old_index_and_its_manifest_digest_decide_nothing(
    pytester: pytest.Pytester, root: Path, workers: tuple[str, ...]
) -> None:
    """The finding's attack: an index edited to pass and resealed in the manifest. The cassettes decide: the
    folder fails its floors with and without it, the report is the same bytes, and the index is not even read."""
    thresholds = root.parent / "thresholds.yaml"
    thresholds.write_text(FLOORS, encoding="utf-8")
    gates = (f"--sys1cal-thresholds={thresholds}", *workers)
    clean, before = replay(pytester, root, "clean", *gates)
    assert clean.ret == 1
    old_index(root / "systemone" / VERSION)
    shutil.rmtree(pytester.path / ".pytest_cache")
    for run in ("attacked-cold", "attacked-warm"):
        attacked, after = replay(pytester, root, run, *gates)
        assert attacked.ret == 1, attacked.stdout.str()[-2000:]
        assert after == before
        assert "every gate in force passed" not in attacked.stdout.str()
        assert "replay-index" not in attacked.stdout.str()
        failed = [gate for gate in json.loads(after)["gates"] if gate["verdict"] == "FAILED"]
        assert len(failed) == 3


def test_an_old_index_decides_nothing_in_a_trend(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    thresholds = root.parent / "thresholds.yaml"
    thresholds.write_text(FLOORS, encoding="utf-8")
    args = ["trend", "--model=systemone", f"--cassettes={root}", f"--thresholds={thresholds}"]
    assert main([*args, f"--markdown={root.parent / 'before.md'}"]) == 0
    old_index(root / "systemone" / VERSION)
    assert main([*args, f"--markdown={root.parent / 'after.md'}"]) == 0
    capsys.readouterr()
    before = (root.parent / "before.md").read_text(encoding="utf-8")
    assert (root.parent / "after.md").read_text(encoding="utf-8") == before
    assert "| FAILED (3 of 3) |" in before, before[:2000]  # the cassettes' verdict, not the forged rows'
    assert "| 0.633 \\[" in before  # typed-gguf's own Noul mean OVL


def test_a_cache_dir_inside_the_cassette_root_is_not_used(pytester: pytest.Pytester, root: Path) -> None:
    """pytest's cache_dir set inside the cassette root (an ini line a pull request could add, with cached rows
    committed beside the cassettes): the header says so and each cassette is read in full."""
    inside = root / ".cache"
    result, _ = replay(pytester, root, "inside", "-o", f"cache_dir={inside}", "-k", "compound__seed_000042")
    result.assert_outcomes(passed=3, deselected=362)
    result.stdout.fnmatch_lines(
        ["sys1cal: pytest's cache dir lies inside the cassette root *replay cache is not used*"]
    )
    assert not list(inside.glob(f"d/{CACHE_NAME}/*/*.tsv"))
