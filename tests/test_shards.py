"""shards.py: the deal of latent problems into N shards, whole problems only, balanced by priced cost,
deterministic, and the spec's refusals."""

from __future__ import annotations

import random

import pytest

from pytest_sys1cal.dataset import load_dataset
from pytest_sys1cal.models import make_adapter
from pytest_sys1cal.questions import ALL_QUESTIONS
from pytest_sys1cal.recording.plan import estimate_tokens
from pytest_sys1cal.shards import (
    Shard,
    ShardError,
    balance,
    partition,
    partition_digest,
    problem_costs,
    renderings_of_problems,
)

DATASET = load_dataset("sys1cal-v1")


def priced() -> dict[str, float]:
    adapter = make_adapter("systemone", [], version="v1", base_url="http://127.0.0.1:9", environ={})

    def cost(rendering):  # type: ignore[no-untyped-def]
        return float(sum(estimate_tokens(r) for r in adapter.requests(rendering, ALL_QUESTIONS)))

    return problem_costs(DATASET.renderings, cost)


@pytest.mark.parametrize(("text", "index", "count"), [("1/1", 1, 1), ("2/4", 2, 4), (" 4/4 ", 4, 4)])
def test_a_spec_is_read(text: str, index: int, count: int) -> None:
    assert Shard.parse(text) == Shard(index, count)
    assert Shard.parse(text).spec == f"{index}/{count}"


@pytest.mark.parametrize("text", ["0/4", "5/4", "2/0", "2", "2/4/8", "a/b", "-1/4", "2 / 4"])
def test_a_bad_spec_is_refused_with_the_form(text: str) -> None:
    with pytest.raises(ShardError, match=r"I/N"):
        Shard.parse(text)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 8, 92])
def test_every_problem_in_exactly_one_shard_and_never_split(count: int) -> None:
    costs = priced()
    parts = partition(costs, count)
    assert len(parts) == count and all(parts)
    flat = [problem for part in parts for problem in part]
    assert sorted(flat) == sorted(costs) and len(set(flat)) == len(flat)
    shares = [renderings_of_problems(DATASET.renderings, part) for part in parts]
    assert sum(len(share) for share in shares) == len(DATASET.renderings)
    for share, part in zip(shares, parts, strict=True):  # a problem's renderings all in its shard
        assert {r.latent_instance_id for r in share} == set(part)


def test_the_deal_is_balanced_by_priced_cost() -> None:
    costs = priced()
    for count in (2, 3, 4):
        assert balance(partition(costs, count), costs) < 1.03, count
    for count in (8, 23, 46):  # the rule's bound: no shard exceeds the mean by more than one problem's cost
        mean = sum(costs.values()) / count
        assert balance(partition(costs, count), costs) * mean <= mean + max(costs.values()), count
    # by cost, not by count: a problem that costs ten times more is dealt as such
    skewed = {"a": 10.0, "b": 1.0, "c": 1.0, "d": 1.0, "e": 1.0}
    assert partition(skewed, 2) == (("a",), ("b", "c", "d", "e"))


def test_the_deal_is_deterministic_and_independent_of_order() -> None:
    costs = priced()
    shuffled = list(costs.items())
    random.Random(7).shuffle(shuffled)
    assert partition(dict(shuffled), 4) == partition(costs, 4)
    assert partition_digest(partition(costs, 4)) == partition_digest(partition(dict(shuffled), 4))
    assert partition_digest(partition(costs, 4)) != partition_digest(partition(costs, 3))


def test_more_shards_than_problems_is_refused() -> None:
    with pytest.raises(ShardError, match="92 latent problems: a shard holds whole problems, so use at most 92 shards"):
        partition(priced(), 93)


def test_renderings_of_problems_keeps_dataset_order() -> None:
    wanted = {DATASET.renderings[-1].latent_instance_id, DATASET.renderings[0].latent_instance_id}
    chosen = renderings_of_problems(DATASET.renderings, wanted)
    order = {r.instance_id: i for i, r in enumerate(DATASET.renderings)}
    assert [order[r.instance_id] for r in chosen] == sorted(order[r.instance_id] for r in chosen)
    assert {r.latent_instance_id for r in chosen} == wanted
