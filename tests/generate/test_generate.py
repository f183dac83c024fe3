"""The dataset generator: exact p* from each state alone, no leaked answers, determinism, schema, CLI.

The solver below is this file's own code path: it reads nothing but a rendering's `state` (parsed from
the written JSONL with every decimal literal as an exact `Fraction`, prose parsed from its sentences) and
uses other formulas than the generator (odds form for Bayes, dynamic programming for the binomial and the
hypergeometric, the complement rule for a union).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import pytest_sys1cal
from pytest_sys1cal.generate import generate, write_dataset

PUBLIC_FILE = (
    Path(__file__).resolve().parents[2] / "fixtures/sys1cal-v1/v0.1.0_tiny_cleanvars_parallel_primitives.jsonl"
)
PACKAGE_ROOT = Path(pytest_sys1cal.__file__).resolve().parents[1]

# The documented families x representations matrix.
MATRIX = {
    "explicit_probability": {"direct", "ratio", "table", "prose", "nested", "distractor"},
    "frequency": {"direct", "counts", "scaled_counts", "ratio", "table", "prose", "nested", "distractor"},
    "compound": {"direct", "table", "prose", "nested", "distractor"},
    "conditional": {"direct", "counts", "scaled_counts", "table", "prose", "nested", "distractor"},
    "bayes": {"direct", "counts", "scaled_counts", "ratio", "table", "prose", "nested", "distractor"},
    "sequential_bayes": {"direct", "ratio", "table", "prose", "nested", "distractor"},
}
FAMILY_ORDER = list(MATRIX)

# (dataset seed, latent problems): tiny, uneven split, and large enough for several band blocks per family.
DATASETS = [(0, 6), (1, 30), (7, 97), (2024, 1500)]


def _read(path: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(record, exact record) per line; the exact one keeps decimal literals as Fractions."""
    return [
        (json.loads(line), json.loads(line, parse_float=Fraction))
        for line in path.read_text(encoding="ascii").splitlines()
    ]


# The 1,500-problem set takes seconds to generate: it is in the slow tier.
@pytest.fixture(
    scope="module",
    params=[pytest.param(d, marks=pytest.mark.slow) if d[1] >= 1000 else d for d in DATASETS],
    ids=[f"seed{s}-n{n}" for s, n in DATASETS],
)
def dataset(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[dict, dict]]:
    seed, problems = request.param
    path = tmp_path_factory.mktemp("generated") / f"seed{seed}-n{problems}.jsonl"
    write_dataset(path, seed, problems)
    return _read(path)


# ------------------------------------------------------------------------------------------ the solver


def _ratio(text: str) -> Fraction:
    """The ratio "l:r" as the fraction l/r."""
    left, right = (int(part) for part in text.split(":"))
    return Fraction(left, right)


def _share(text: str) -> Fraction:
    """The left side's share of "l:r"."""
    left, right = (int(part) for part in text.split(":"))
    return Fraction(left, left + right)


def _odds_posterior(prior_odds: Fraction, ratios: list[Fraction]) -> Fraction:
    odds = prior_odds * math.prod(ratios, start=Fraction(1))
    return odds / (1 + odds)


def _match(pattern: str, description: str) -> tuple[str, ...]:
    found = re.search(pattern, description)
    assert found, f"{pattern!r} not in {description!r}"
    return found.groups()


def _binomial(trials: int, success: Fraction) -> list[Fraction]:
    """P(j successes), j = 0..trials, by adding one trial at a time."""
    dist = [Fraction(1)]
    for _ in range(trials):
        dist = [
            (dist[j] * (1 - success) if j < len(dist) else 0) + (dist[j - 1] * success if j else 0)
            for j in range(len(dist) + 1)
        ]
    return dist


def _hypergeometric(good: int, bad: int, draws: int) -> list[Fraction]:
    """P(j good items), j = 0..draws, drawing one item at a time from what is left."""
    dist = {0: Fraction(1)}
    for drawn in range(draws):
        step: dict[int, Fraction] = defaultdict(Fraction)
        for j, p in dist.items():
            left = good + bad - drawn
            step[j + 1] += p * Fraction(good - j, left)
            step[j] += p * Fraction(bad - (drawn - j), left)
        dist = step
    return [dist.get(j, Fraction(0)) for j in range(draws + 1)]


def _target(dist: list[Fraction], k: int, how: str) -> Fraction:
    assert how in ("exactly", "at_least"), how
    return dist[k] if how == "exactly" else sum(dist[k:], Fraction(0))


def solve_explicit(state: dict[str, Any]) -> Fraction:
    tag = state["representation"]
    if tag in ("direct", "distractor"):
        stats = state["sufficient_statistics"]
        assert stats["p_A"] + stats["p_not_A"] == 1
        return stats["p_A"]
    if tag == "ratio":
        return _share(state["probability_ratio_A_to_not_A"])
    if tag == "table":
        return {row["outcome"]: row["probability"] for row in state["table"]}["A"]
    if tag == "nested_state":
        return state["nested"]["outcomes"]["A"]["probability"]
    (p,) = _match(r"Event A occurs with probability ([\d.]+);", state["description"])
    return Fraction(p)


def solve_frequency(state: dict[str, Any]) -> Fraction:
    tag = state["representation"]
    if tag == "natural_language":
        zor, nif = _match(r"holds (\d+) objects labelled zor and (\d+) objects labelled nif", state["description"])
        counts = {"zor": int(zor), "nif": int(nif)}
    elif tag == "ratio":
        return _share(state["probability_ratio_zor_to_nif"])
    elif tag == "table":
        counts = {row["label"]: row["count"] for row in state["table"]}
    elif tag == "nested_state":
        counts = {label: entry["count"] for label, entry in state["nested"]["collection"].items()}
    else:
        counts = state.get("sufficient_statistics", state)["counts"]
    return Fraction(counts["zor"], counts["zor"] + counts["nif"])


def _compound_from_fields(stats: dict[str, Any]) -> Fraction:
    subtask = stats["subtask"]
    if subtask == "complement":
        assert stats["query"] == "not_A"
        return 1 - stats["p_A"]
    if subtask in ("intersection", "union"):
        assert stats["independent"] is True
        if stats["query"] == "A_and_B":
            return stats["p_A"] * stats["p_B"]
        assert stats["query"] == "A_or_B"
        return 1 - (1 - stats["p_A"]) * (1 - stats["p_B"])
    how = stats["query"].split("_k_")[0]
    if subtask == "repeated_trials":
        return _target(_binomial(stats["n"], stats["success_probability"]), stats["k"], how)
    assert subtask == "hypergeometric"
    dist = _hypergeometric(stats["good"], stats["bad"], stats["draws_without_replacement"])
    return _target(dist, stats["k_good"], how)


def _compound_from_nested(nested: dict[str, Any]) -> Fraction:
    target = nested["target"]
    if "urn" in nested:
        assert nested["draw"]["replacement"] is False
        ((how, k),) = target["good_items"].items()
        return _target(_hypergeometric(nested["urn"]["good"], nested["urn"]["bad"], nested["draw"]["count"]), k, how)
    if "trials" in nested:
        ((how, k),) = target["successes"].items()
        return _target(_binomial(nested["trials"]["count"], nested["trials"]["success_probability"]), k, how)
    p = {name: event["probability"] for name, event in nested["events"].items()}
    if target == {"A": "does not occur"}:
        return 1 - p["A"]
    assert nested["dependence"] == "independent"
    if target == {"A": "occurs", "B": "occurs"}:
        return p["A"] * p["B"]
    assert target == {"at_least_one_of": ["A", "B"]}
    return 1 - (1 - p["A"]) * (1 - p["B"])


def _compound_from_prose(text: str) -> Fraction:
    if "does not occur" in text:
        (p,) = _match(r"Event A occurs with probability ([\d.]+)\.", text)
        return 1 - Fraction(p)
    if text.startswith("Events A and B are independent."):
        a, b = (
            Fraction(x)
            for x in _match(r"A occurs with probability ([\d.]+) and B occurs with probability ([\d.]+)\.", text)
        )
        if text.endswith("both A and B occur."):
            return a * b
        assert text.endswith("at least one of A and B occurs.")
        return 1 - (1 - a) * (1 - b)
    if text.startswith("Each of"):
        n, p, how, k = _match(
            r"Each of (\d+) independent trials succeeds with probability ([\d.]+)\. "
            r"The target event is that the number of successes is (exactly|at least) (\d+)\.",
            text,
        )
        return _target(_binomial(int(n), Fraction(p)), int(k), how.replace(" ", "_"))
    good, bad, draws, how, k = _match(
        r"An urn holds (\d+) good items and (\d+) bad items\. A sample of (\d+) items "
        r"is drawn without replacement\. The target event is that the sample contains "
        r"(exactly|at least) (\d+) good items\.",
        text,
    )
    return _target(_hypergeometric(int(good), int(bad), int(draws)), int(k), how.replace(" ", "_"))


def solve_compound(state: dict[str, Any]) -> Fraction:
    tag = state["representation"]
    if tag in ("direct", "distractor"):
        return _compound_from_fields(state["sufficient_statistics"])
    if tag == "table":
        return _compound_from_fields({row["field"]: row["value"] for row in state["table"]})
    if tag == "nested_state":
        return _compound_from_nested(state["nested"])
    return _compound_from_prose(state["description"])


def solve_conditional(state: dict[str, Any]) -> Fraction:
    tag = state["representation"]
    if tag == "natural_language":
        text = state["description"]
        a_b, _, not_a_b, _ = _match(
            r"(\d+) have both A and B, (\d+) have A but not B, (\d+) have B but not A, "
            r"and (\d+) have neither A nor B\.",
            text,
        )
        assert text.endswith("drawn uniformly at random from the records that have B.")
        return Fraction(int(a_b), int(a_b) + int(not_a_b))
    body = state.get("sufficient_statistics") or state.get("nested") or state
    assert body["query"] == "P(A|B)"
    if tag == "table":
        with_b = {row["row"]: row["B"] for row in state["table"]}
    elif tag == "nested_state":
        with_b = body["records"]["B"]
    else:
        with_b = {row: columns["B"] for row, columns in body["contingency"].items()}
    return Fraction(with_b["A"], with_b["A"] + with_b["not_A"])


def solve_bayes(state: dict[str, Any]) -> Fraction:
    tag = state["representation"]
    if tag == "counts":
        assert state["cases_with_H"] + state["cases_with_not_H"] == state["cases"]
        assert state["cases_with_H_and_E"] <= state["cases_with_H"]
        assert state["cases_with_not_H_and_E"] <= state["cases_with_not_H"]
        h_e, not_h_e = state["cases_with_H_and_E"], state["cases_with_not_H_and_E"]
        return Fraction(h_e, h_e + not_h_e)
    if tag == "ratio":
        return _odds_posterior(_ratio(state["prior_odds_H_to_not_H"]), [_ratio(state["likelihood_ratio_H_to_not_H"])])
    if tag == "natural_language":
        prior_h, prior_not_h, like_h, like_not_h = (
            Fraction(x)
            for x in _match(
                r"H has probability ([\d.]+) and not_H has probability ([\d.]+)\. Event E has "
                r"probability ([\d.]+) if H holds and ([\d.]+) if not_H holds\. E has been observed\.",
                state["description"],
            )
        )
    else:
        if tag == "table":
            rows = {row["hypothesis"]: row for row in state["table"]}
        elif tag == "nested_state":
            rows = state["nested"]["hypotheses"]
        else:
            stats = state["sufficient_statistics"]
            assert stats["observed_event"] is True
            rows = {
                h: {"prior": stats["priors"][h], "P(E|hypothesis)": stats["likelihood_event"][h]}
                for h in ("H", "not_H")
            }
        prior_h, prior_not_h = rows["H"]["prior"], rows["not_H"]["prior"]
        like_h, like_not_h = rows["H"]["P(E|hypothesis)"], rows["not_H"]["P(E|hypothesis)"]
    assert prior_h + prior_not_h == 1
    return _odds_posterior(prior_h / prior_not_h, [like_h / like_not_h])


def solve_sequential(state: dict[str, Any]) -> Fraction:
    tag = state["representation"]
    if tag == "natural_language":
        text = state["description"]
        prior_h, prior_not_h, steps = _match(
            r"H has probability ([\d.]+) and not_H has probability ([\d.]+)\. "
            r"Then (\d+) evidence items are observed",
            text,
        )
        found = re.findall(r"evidence (\d+) has probability ([\d.]+) under H and ([\d.]+) under not_H", text)
        assert [int(n) for n, _, _ in found] == list(range(1, int(steps) + 1))
        assert Fraction(prior_h) + Fraction(prior_not_h) == 1
        return _odds_posterior(
            Fraction(prior_h) / Fraction(prior_not_h), [Fraction(h) / Fraction(n) for _, h, n in found]
        )
    body = state.get("sufficient_statistics") or state.get("nested") or state
    observed = body["observed_prefix_length"]
    assert body["conditional_independence"].startswith("Evidence items are conditionally independent")
    if tag == "ratio":
        ratios = [_ratio(text) for text in body["likelihood_ratios_H_to_not_H"]]
        assert len(ratios) == observed
        return _odds_posterior(_ratio(body["prior_odds_H_to_not_H"]), ratios)
    if tag == "nested_state":
        h, not_h = body["hypotheses"]["H"], body["hypotheses"]["not_H"]
        pairs = list(zip(h["evidence_likelihoods"], not_h["evidence_likelihoods"], strict=True))
        prior_odds = h["prior"] / not_h["prior"]
    else:
        rows = sorted(body["table"], key=lambda row: row["step"]) if tag == "table" else body["evidence_sequence"]
        pairs = [(row["E_given_H"], row["E_given_not_H"]) for row in rows]
        prior_odds = body["prior_H"] / (1 - body["prior_H"])
    assert len(pairs) == observed
    return _odds_posterior(prior_odds, [h / n for h, n in pairs])


SOLVERS: dict[str, Callable[[dict[str, Any]], Fraction]] = {
    "explicit_probability": solve_explicit,
    "frequency": solve_frequency,
    "compound": solve_compound,
    "conditional": solve_conditional,
    "bayes": solve_bayes,
    "sequential_bayes": solve_sequential,
}


def _band(p: Fraction) -> str:
    edges = [
        ("0.10", "[0.01,0.10]"),
        ("0.30", "(0.10,0.30]"),
        ("0.45", "(0.30,0.45]"),
        ("0.55", "(0.45,0.55]"),
        ("0.70", "(0.55,0.70]"),
        ("0.90", "(0.70,0.90]"),
        ("0.99", "(0.90,0.99]"),
    ]
    if p in (0, 1):
        return str(p)
    if p < Fraction("0.01"):
        return "(0,0.01)"
    return next((label for high, label in edges if p <= Fraction(high)), "(0.99,1)")


# --------------------------------------------------------------------------------------- exact p* tests


def test_every_state_alone_gives_the_stored_p_star(dataset: list[tuple[dict, dict]]) -> None:
    by_latent: dict[str, set[Fraction]] = defaultdict(set)
    for record, exact in dataset:
        p = SOLVERS[record["family"]](exact["state"])
        where = record["instance_id"]
        assert float(p) == record["gold_distribution"]["True"] == record["gold"]["probability_true"], where
        assert float(1 - p) == record["gold_distribution"]["False"] == record["gold"]["probability_false"], where
        assert record["probability_band"] == _band(p)
        by_latent[record["latent_instance_id"]].add(p)
    # Equal floats could hide different fractions; the exact values must agree too.
    assert all(len(values) == 1 for values in by_latent.values())


def test_metadata_keeps_the_exact_p_star(dataset: list[tuple[dict, dict]]) -> None:
    for record, exact in dataset:
        p_star = Fraction(record["generator_metadata"]["parameters"]["p_star"])
        assert p_star == SOLVERS[record["family"]](exact["state"])


def test_each_latent_is_rendered_in_its_family_row_of_the_matrix(dataset: list[tuple[dict, dict]]) -> None:
    renderings: dict[tuple[str, str], set[str]] = defaultdict(set)
    for record, _ in dataset:
        renderings[record["family"], record["latent_instance_id"]].add(record["representation"])
    assert renderings
    for (family, _), representations in renderings.items():
        assert representations == MATRIX[family]


@pytest.mark.parametrize("problems", [1, 5, 6, 7, 31, 100])
def test_problems_are_split_evenly_first_families_first(problems: int) -> None:
    latents = {(r["family"], r["latent_instance_id"]) for r in generate(3, problems)}
    per_family = Counter(family for family, _ in latents)
    base, extra = divmod(problems, 6)
    assert [per_family[family] for family in FAMILY_ORDER] == [base + (i < extra) for i in range(6)]


def test_the_shared_family_names_and_cell_count_are_the_generators() -> None:
    """vocabulary.FAMILY_NAMES and the contamination check's FILLS_EVERY_CELL (analysis/ may not import the
    generator) agree with the generator: its families in order, and the problems that fill every cell."""
    from pytest_sys1cal.analysis.contamination_sides import FILLS_EVERY_CELL, MIN_FRESH_PER_CELL
    from pytest_sys1cal.generate import FAMILIES
    from pytest_sys1cal.vocabulary import FAMILY_NAMES

    assert tuple(family.name for family in FAMILIES) == FAMILY_NAMES == tuple(FAMILY_ORDER)
    most_bands = max(len(family.bands) for family in FAMILIES)
    assert FILLS_EVERY_CELL == len(FAMILIES) * most_bands * MIN_FRESH_PER_CELL == 330


def test_every_family_covers_every_band_of_the_unit_interval() -> None:
    # 99 latents per family: 11 full blocks of 9 bands (9 of 11 for explicit_probability).
    bands: dict[str, Counter[str]] = defaultdict(Counter)
    for record in generate(5, 594):
        if record["representation"] == "direct":
            bands[record["family"]][record["probability_band"]] += 1
    interior = [
        "(0,0.01)",
        "[0.01,0.10]",
        "(0.10,0.30]",
        "(0.30,0.45]",
        "(0.45,0.55]",
        "(0.55,0.70]",
        "(0.70,0.90]",
        "(0.90,0.99]",
        "(0.99,1)",
    ]
    assert bands["explicit_probability"] == dict.fromkeys(["0", *interior, "1"], 9)
    for family in FAMILY_ORDER[1:]:
        assert bands[family] == dict.fromkeys(interior, 11), family


def test_a_latent_does_not_depend_on_the_dataset_size() -> None:
    small = {r["instance_id"]: r for r in generate(11, 12)}
    large = {r["instance_id"]: r for r in generate(11, 60)}
    assert small.items() <= large.items()


# ----------------------------------------------------------------------------------------------- leaks

_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?%?")


def _spellings(p: float) -> set[str]:
    percent = 100 * p
    return {
        repr(p),
        f"{p:.2f}",
        f"{p:.3f}",
        f"{p:.4f}",
        f"{p:.6g}",
        f"{p:.12g}",
        f"{percent:.0f}%",
        f"{percent:.1f}%",
        f"{percent:.2f}%",
        f"{percent:g}%",
    }


def spelled_p_star(record: dict[str, Any]) -> set[str]:
    """The spellings of p* that occur as whole numbers in what the model is sent.

    Whole numbers, so that 10.43 or the batch code ZX-043 do not contain 0.43, and percentages only with
    their % sign, so that a count of 43 is not "43%". No value is exempt, not even p* = 1/2: the generator
    redraws a latent whose states would show a number that spells p* (e.g. a prior of 0.5 when p* = 0.5),
    so a copied number is never a shortcut to the answer. The constant queries are checked too.
    """
    sent = json.dumps([record["state"], record["proposition"], record["queries"]])
    return _spellings(record["gold_distribution"]["True"]) & set(_NUMBER.findall(sent))


def test_no_rendering_spells_p_star_outside_explicit_probability(dataset: list[tuple[dict, dict]]) -> None:
    checked = 0
    for record, _ in dataset:
        if record["family"] != "explicit_probability":
            assert not spelled_p_star(record), record["instance_id"]
            checked += 1
    assert checked


def test_the_leak_check_finds_sys1cal_v1s_known_leaks() -> None:
    # v1 prose states p* with :.12g, and every sequential_bayes rendering lists the posterior trajectory.
    public = [json.loads(line) for line in PUBLIC_FILE.read_text(encoding="ascii").splitlines()]
    leaky = [r for r in public if r["representation"] == "prose" or r["family"] == "sequential_bayes"]
    assert len(leaky) == 92 + 60 - 20
    assert all(spelled_p_star(r) for r in leaky)


def test_the_leak_check_sees_p_star_where_explicit_probability_states_it(dataset: list[tuple[dict, dict]]) -> None:
    for record, _ in dataset:
        if record["family"] == "explicit_probability" and record["representation"] == "direct":
            assert repr(record["gold_distribution"]["True"]) in spelled_p_star(record)


def test_no_state_carries_a_posterior(dataset: list[tuple[dict, dict]]) -> None:
    for record, _ in dataset:
        assert "posterior" not in json.dumps(record["state"]).lower(), record["instance_id"]


# ---------------------------------------------------------------------------------------- determinism


def _bytes(tmp_path: Path, seed: int, problems: int) -> bytes:
    path = tmp_path / f"{seed}-{problems}.jsonl"
    write_dataset(path, seed, problems)
    return path.read_bytes()


def test_the_same_seed_gives_the_same_bytes_and_another_seed_does_not(tmp_path: Path) -> None:
    first = _bytes(tmp_path, 42, 60)
    assert _bytes(tmp_path, 42, 60) == first
    assert _bytes(tmp_path, 43, 60) != first


def _run_cli(*args: str, cwd: Path, hash_seed: str = "0") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "pytest_sys1cal", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("hash_seed", ["1", "987654"])
def test_hash_randomisation_does_not_change_the_bytes(tmp_path: Path, hash_seed: str) -> None:
    expected = _bytes(tmp_path, 9, 48)
    done = _run_cli(
        "generate", "--seed", "9", "--problems", "48", "--out", "other.jsonl", cwd=tmp_path, hash_seed=hash_seed
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "other.jsonl").read_bytes() == expected


# --------------------------------------------------------------------------------------------- schema

TOP_LEVEL = {
    "benchmark_version": str,
    "difficulty": int,
    "family": str,
    "generator_metadata": dict,
    "gold": dict,
    "gold_argmax": str,
    "gold_distribution": dict,
    "instance_id": str,
    "latent_instance_id": str,
    "outcomes": list,
    "probability_band": str,
    "prompt": str,
    "proposition": str,
    "queries": dict,
    "representation": str,
    "seed": int,
    "state": dict,
}
LEVELS = [
    "Completely false",
    "Very strongly false",
    "Strongly false",
    "Moderately false",
    "Slightly false",
    "Slightly true",
    "Moderately true",
    "Strongly true",
    "Very strongly true",
    "Completely true",
]


def _key_tree(value: Any) -> Any:
    """The nested key sets of a record (a schema fingerprint), ignoring the family-specific parts."""
    return {k: _key_tree(v) for k, v in value.items()} if isinstance(value, dict) else None


def _fingerprint(record: dict[str, Any]) -> Any:
    tree = _key_tree(record)
    tree["state"] = tree["generator_metadata"]["parameters"] = None
    tree["generator_metadata"].pop("generator", None)  # generated files say which generator made them
    tree["generator_metadata"].pop("posterior_trajectory", None)  # v1 sequential_bayes leaks it here too
    return tree


def test_records_have_the_public_files_fields_and_types(dataset: list[tuple[dict, dict]]) -> None:
    public = json.loads(PUBLIC_FILE.read_text(encoding="ascii").splitlines()[0])
    instance_ids = set()
    for record, _ in dataset:
        assert _fingerprint(record) == _fingerprint(public)
        for field, kind in TOP_LEVEL.items():
            assert type(record[field]) is kind, field
        family, seed, representation = record["family"], record["seed"], record["representation"]
        assert record["latent_instance_id"] == f"{family}__seed_{seed:06d}"
        assert record["instance_id"] == f"{family}__seed_{seed:06d}__repr_{representation}__parallel_primitives"
        instance_ids.add(record["instance_id"])
        assert record["benchmark_version"] == "sys1cal-gen-1"
        assert record["generator_metadata"]["generator"]["version"] == "sys1cal-gen-1"
        assert isinstance(record["generator_metadata"]["generator"]["dataset_seed"], int)
        assert record["difficulty"] == FAMILY_ORDER.index(family) + 1
        assert record["outcomes"] == ["True", "False"]
        assert record["prompt"] == record["proposition"]
        gold = [*record["gold"].values(), *record["gold_distribution"].values()]
        assert all(type(value) is float for value in gold)
        p = record["gold_distribution"]["True"]
        assert record["gold_argmax"] == ("True" if p >= 0.5 else "False")
        assert abs(p + record["gold_distribution"]["False"] - 1) <= 1e-12
        queries = record["queries"]
        assert queries["noul"]["proposition"] == queries["choice"]["proposition"] == record["proposition"]
        assert queries["choice"]["options"] == ["False", "True"]
        assert queries["score"]["levels"] == LEVELS
        assert queries["score"]["normalized_level_values"] == [round(j / 9, 10) for j in range(10)]
        assert record["generator_metadata"]["parallel_primitives"]["source_representation"] == representation
    assert len(instance_ids) == len(dataset)


def test_lines_are_sorted_key_ascii_json_with_lf(tmp_path: Path) -> None:
    data = _bytes(tmp_path, 4, 24)
    assert data.endswith(b"\n") and b"\r" not in data
    data.decode("ascii")
    for line in data.decode("ascii").split("\n")[:-1]:
        assert line == json.dumps(json.loads(line), sort_keys=True)


def test_the_plugins_loader_accepts_a_generated_file(tmp_path: Path) -> None:
    dataset_module = pytest.importorskip("pytest_sys1cal.dataset")
    path = tmp_path / "fresh.jsonl"
    written = write_dataset(path, 8, 36)
    loaded = dataset_module.load_dataset(path)
    assert (len(loaded.renderings), loaded.latent_problems, loaded.sha256) == (
        written.renderings,
        written.latent_problems,
        written.sha256,
    )


def test_zero_problems_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        generate(1, 0)


# ------------------------------------------------------------------------------------------------ CLI


def test_the_command_writes_the_file_and_prints_a_summary(tmp_path: Path) -> None:
    done = _run_cli("generate", "--seed", "1", "--problems", "30", "--out", "f.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = (tmp_path / "f.jsonl").read_bytes()
    lines = data.decode("ascii").splitlines()
    latents = {json.loads(line)["latent_instance_id"] for line in lines}
    assert len(latents) == 30
    assert done.stdout == (
        f"f.jsonl: {len(lines)} renderings of 30 latent problems, sha256 {hashlib.sha256(data).hexdigest()}\n"
    )


@pytest.mark.parametrize("value", ["-3", "0", "many"])
def test_a_bad_problem_count_is_a_clean_usage_error(tmp_path: Path, value: str) -> None:
    done = _run_cli("generate", "--seed", "1", "--problems", value, "--out", "f.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    assert "usage:" in done.stderr and "--problems" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "f.jsonl").exists()


def test_an_unwritable_destination_is_a_one_line_error(tmp_path: Path) -> None:
    done = _run_cli("generate", "--seed", "1", "--problems", "6", "--out", "missing/f.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("error: cannot write missing/f.jsonl") and done.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []
