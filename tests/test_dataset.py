"""The dataset loader: the bundled file loads; every kind of bad line is refused with file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_sys1cal.dataset import DatasetError, load_dataset
from tests.runs import REPO, sys1cal

PARALLEL = REPO / "fixtures" / "sys1cal-v1" / "v0.1.0_tiny_cleanvars_parallel_primitives.jsonl"
BINARY = REPO / "fixtures" / "sys1cal-v1" / "v0.1.0_tiny_cleanvars_binary.jsonl"


def test_bundled_dataset_loads_with_its_published_hash() -> None:
    dataset = load_dataset("sys1cal-v1")
    assert dataset.sha256 == "2f31c498debb39891339e018b5c747991e54085ab231cb5a0d981d1fc83b530c"
    assert (len(dataset.renderings), dataset.latent_problems) == (365, 92)
    families = {r.family for r in dataset.renderings}
    assert families == {"explicit_probability", "frequency", "compound", "conditional", "bayes", "sequential_bayes"}
    table = next(r for r in dataset.renderings if r.short_id == "conditional__seed_000045__repr_table")
    assert table.p_star == 40 / 92
    assert table.instance_id == "conditional__seed_000045__repr_table__parallel_primitives"
    assert len(table.score_levels) == 10


def _lines() -> list[dict]:
    return [json.loads(line) for line in PARALLEL.read_text().splitlines()[:6]]


def _write(tmp_path: Path, rows: list) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(row if isinstance(row, str) else json.dumps(row) for row in rows) + "\n")
    return path


def _drop(row: dict, dotted: str) -> dict:
    *parents, key = dotted.split(".")
    target = row
    for parent in parents:
        target = target[parent]
    del target[key]
    return row


def _set(row: dict, dotted: str, value: object) -> dict:
    *parents, key = dotted.split(".")
    target = row
    for parent in parents:
        target = target[parent]
    target[key] = value
    return row


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda rows: rows.__setitem__(2, '{"broken": '), ":3: not valid JSON"),
        (lambda rows: rows.__setitem__(2, "[1, 2]"), ":3: expected a JSON object per line"),
        (lambda rows: _drop(rows[1], "state"), ":2: missing field 'state'"),
        (lambda rows: _drop(rows[1], "queries.score.levels"), ":2: missing field 'queries.score.levels'"),
        (lambda rows: _set(rows[1], "family", 7), ":2: field 'family' has the wrong type (int)"),
        (
            lambda rows: _set(rows[1], "gold_distribution.True", 1.5),
            ":2: field 'gold_distribution.True' = 1.5 is not in [0, 1]",
        ),
        (lambda rows: _set(rows[1], "gold_distribution.False", 0.2), ":2: field 'gold_distribution' sums to"),
        (
            lambda rows: _set(rows[1], "queries.score.levels", ["a", "b"]),
            ":2: field 'queries.score.levels' must list 10",
        ),
        (
            lambda rows: _set(rows[1], "latent_instance_id", "other__seed_1"),
            ":2: field 'latent_instance_id': 'other__seed_1' is not a prefix",
        ),
        (lambda rows: rows.append(dict(rows[0])), ":7: field 'instance_id':"),
    ],
    ids=[
        "json",
        "not-object",
        "missing",
        "missing-nested",
        "type",
        "range",
        "sum",
        "levels",
        "latent-prefix",
        "duplicate",
    ],
)
def test_bad_lines_name_file_line_and_field(tmp_path: Path, edit, message: str) -> None:
    rows: list = _lines()
    edit(rows)
    path = _write(tmp_path, rows)
    with pytest.raises(DatasetError) as excinfo:
        load_dataset(path)
    assert str(excinfo.value).startswith(str(path))
    assert message in str(excinfo.value)


def test_renderings_of_one_latent_problem_must_share_p_star(tmp_path: Path) -> None:
    rows = _lines()
    same_latent = [i for i, r in enumerate(rows) if r["latent_instance_id"] == rows[0]["latent_instance_id"]]
    second = same_latent[1]
    rows[second]["gold_distribution"] = {"True": 0.25, "False": 0.75}
    with pytest.raises(
        DatasetError, match=rf":{second + 1}: field 'gold_distribution': p\*=0.25 differs from p\*=.* on line 1"
    ):
        load_dataset(_write(tmp_path, rows))


def test_the_binary_file_is_refused_with_a_hint() -> None:
    with pytest.raises(
        DatasetError,
        match=r":1: missing field 'queries' \(is this the binary file\? use the parallel-primitives file\)",
    ):
        load_dataset(BINARY)


def test_missing_file_and_empty_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such dataset file .*bundled datasets: sys1cal-v1"):
        load_dataset(tmp_path / "nope.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DatasetError, match="holds no renderings"):
        load_dataset(empty)


def test_a_byte_that_is_not_utf8_is_refused_with_its_line_and_offsets(tmp_path: Path) -> None:
    """Decoded leniently, a Latin-1 "é" inside an otherwise valid record would reach the model as "�"."""
    lines = [json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n" for row in _lines()]
    column = lines[2].index(b'"proposition": "') + len('"proposition": "')
    lines[2] = lines[2][:column] + b"caf\xe9 " + lines[2][column:]  # inside a string value: valid JSON otherwise
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b"".join(lines))
    in_line = column + 3
    in_file = len(lines[0]) + len(lines[1]) + in_line
    with pytest.raises(DatasetError) as excinfo:
        load_dataset(path)
    assert str(excinfo.value) == (
        f"{path}:3: byte 0xe9 at byte offset {in_line} of the line (offset {in_file} of the file) is not UTF-8 "
        "(invalid continuation byte); save the file as UTF-8 (e.g. iconv -f cp1252 -t utf-8) or fix the character there"
    )
    assert path.read_bytes()[in_file] == 0xE9


def test_a_dataset_that_is_not_utf8_is_one_usage_error(pytester: pytest.Pytester, tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(PARALLEL.read_bytes().replace(b"bayes", b"bay\xe9s", 1))
    result = sys1cal(pytester, f"--sys1cal-dataset={path}", "--co")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: {path}:*: byte 0xe9 at byte offset * is not UTF-8 *; save the file as UTF-8*"]
    )
    assert "Traceback" not in result.stderr.str()
