"""The report document's blocks of the upgrade gate recorded in rounds (--sys1cal-sequential; docs/statistics.md §7):
the report's top-level ``sequential`` block (the design, the round it stopped at, what it cost and saved, each gated
primitive's standing) and the ``sequential`` part of an upgrade-gate row's details. Typed like document.py's
blocks, which it sits beside; docs/report.md says what each key means."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class SequentialDesign(TypedDict):
    """The design the recording follows: its Lan–DeMets spending function, rounds and level, the seed of its
    order of latent problems, how many problems the whole comparison has and how many are recorded by the end
    of each round."""

    spending: str
    rounds: int
    alpha: float
    seed: int
    latent_problems: int
    ends: list[int]


class SequentialStanding(TypedDict):
    """One gated primitive at the round the comparison reached: ``passed``, ``FAILED``, ``continue`` (not decided
    yet: the recording stopped before the design did), ``inconclusive`` (undecided at the last round) or
    ``not measured``; the round it was decided at; Δ̂ and its cluster-robust SE on the problems recorded by then;
    the t statistics of its two tests; and the t critical value of this round at the strictest Holm level
    (α/m), which a test crossing it rejects whatever the other primitives show."""

    standing: str
    decided_at: int | None
    difference: float | None
    se: float | None
    latent_problems: int
    t_noninferior: float | None
    t_worse: float | None
    critical: float | None


class ExpectedCost(TypedDict):
    """The plan's expected cost (docs/statistics.md §7.7): mean requests of the design if the candidate is
    unchanged (Δ = 0) and if it is worse by twice the margin (Δ = −2δ), at the assumed spread `spread`."""

    unchanged: int
    worse: int
    spread: str


class SequentialBlock(TypedDict):
    """The report's ``sequential`` block: where the comparison in rounds stands. `round` is the look it stopped
    at (every gated primitive decided: `decided`), or the last whole round recorded when it has not stopped;
    `early` is a stop before the last round. `requests` are those of the rounds recorded, `full_requests` what
    recording every rendering costs, `saved_requests` the difference; `line` says it in one sentence."""

    design: SequentialDesign
    round: int
    recorded_rounds: int
    decided: bool
    early: bool
    latent_problems: int
    renderings: int
    requests: int
    full_requests: int
    saved_requests: int
    primitives: dict[str, SequentialStanding]
    line: str
    expected: NotRequired[ExpectedCost]
