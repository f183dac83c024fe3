"""From a drawn latent problem to Sys1Cal JSONL records (parallel-primitives schema), plus the read-off guard."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..bands import band_of
from .problem import Family, Problem, Scales

GENERATOR_VERSION = "sys1cal-gen-1"

SCORE_LEVEL_NAMES = (
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
)
NORMALIZED_LEVEL_VALUES = [round(j / (len(SCORE_LEVEL_NAMES) - 1), 10) for j in range(len(SCORE_LEVEL_NAMES))]
CHOICE_QUESTION = "What is the truth status of the following proposition?"
SCORE_QUESTION = "To what degree is the following proposition true?"

# representation -> (the state's own `representation` tag as in Sys1Cal-v1, key holding the view or None to
# merge the view's keys into the state).
STATE_SHAPES: dict[str, tuple[str, str | None]] = {
    "direct": ("direct", "sufficient_statistics"),
    "counts": ("counts", None),
    "scaled_counts": ("counts", None),
    "ratio": ("ratio", None),
    "table": ("table", None),
    "prose": ("natural_language", "description"),
    "nested": ("nested_state", "nested"),
}


@dataclass(frozen=True)
class Presentation:
    """Per-latent choices that change how a problem looks but never its p*."""

    scales: Scales
    irrelevant: dict[str, Any]


def draw_presentation(rng: random.Random) -> Presentation:
    # Random count factors, so that scaled totals are not round numbers a model could read p* off.
    scales = Scales(counts=rng.randint(2, 9), scaled_counts=rng.randint(100, 999))
    irrelevant = {
        "batch_code": f"ZX-{rng.randint(0, 999):03d}",
        "container_temperature_c": rng.randint(100, 300) / 10,
        "operator_shift": rng.choice(("morning", "swing", "night")),
        "sensor_revision": f"rev-{rng.randint(1, 5)}",
        "warehouse_lane": rng.choice("ABCDEF"),
    }
    return Presentation(scales, irrelevant)


def render_states(family: Family, problem: Problem, presentation: Presentation) -> dict[str, dict[str, Any]]:
    """The state sent to the model for each of the family's representations."""
    views = problem.views(presentation.scales)
    states: dict[str, dict[str, Any]] = {}
    for representation in family.representations:
        if representation == "distractor":
            states[representation] = {
                "representation": "distractor",
                "sufficient_statistics": views["direct"],
                "irrelevant": presentation.irrelevant,
            }
            continue
        tag, key = STATE_SHAPES[representation]
        view = views[representation]
        states[representation] = {"representation": tag, key: view} if key else {"representation": tag, **view}
    return states


_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?%?")


def answer_spellings(p: float) -> set[str]:
    """The ways a state could spell p*: repr, fixed and general formats, percentages."""
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


def shows_answer(states: dict[str, dict[str, Any]], p_star: Fraction) -> bool:
    """True when any number in any state (prose included) spells p* (whole tokens: 10.43 is not 0.43)."""
    shown_numbers = _NUMBER.findall(json.dumps(list(states.values())))
    return not answer_spellings(float(p_star)).isdisjoint(shown_numbers)


def build_records(
    family: Family,
    problem: Problem,
    states: dict[str, dict[str, Any]],
    *,
    seed: int,
    index: int,
) -> list[dict[str, Any]]:
    """One record per representation, in the family's representation order.

    The records share their common parts (metadata parameters, queries): treat them as read-only.
    """
    p = problem.p_star
    latent_id = f"{family.name}__seed_{index:06d}"
    gold_true, gold_false = float(p), float(1 - p)
    positive, negative, proposition = family.positive, family.negative, family.proposition
    generator = {"version": GENERATOR_VERSION, "dataset_seed": seed, "latent_index": index}
    # Not sent to the model, so it may hold the answer: exact p* as a fraction.
    parameters = {**problem.parameters(), "p_star": f"{p.numerator}/{p.denominator}"}
    source_prompt = f"{problem.question} Return a normalized probability for each of: {positive}, {negative}."
    queries = _queries(proposition)
    band = band_of(p)
    records = []
    for representation, state in states.items():
        source_id = f"{latent_id}__repr_{representation}"
        records.append(
            {
                "benchmark_version": GENERATOR_VERSION,
                "difficulty": family.difficulty,
                "family": family.name,
                "generator_metadata": {
                    "generator": generator,
                    "parameters": parameters,
                    "parallel_primitives": _parallel_primitives(family, source_id, source_prompt, representation),
                },
                "gold": {"probability_false": gold_false, "probability_true": gold_true},
                # Ties go to the lexicographically larger label, as in Sys1Cal-v1.
                "gold_argmax": "True" if 2 * p >= 1 else "False",
                "gold_distribution": {"False": gold_false, "True": gold_true},
                "instance_id": f"{source_id}__parallel_primitives",
                "latent_instance_id": latent_id,
                "outcomes": ["True", "False"],
                "probability_band": band,
                "prompt": proposition,
                "proposition": proposition,
                "queries": queries,
                "representation": representation,
                "seed": index,
                "state": state,
            }
        )
    return records


def _queries(proposition: str) -> dict[str, Any]:
    """The three questions of a record, as Sys1Cal-v1 asks them."""
    return {
        "noul": {"proposition": proposition},
        "choice": {"options": ["False", "True"], "proposition": proposition, "question": CHOICE_QUESTION},
        "score": {
            "levels": list(SCORE_LEVEL_NAMES),
            "normalized_level_values": NORMALIZED_LEVEL_VALUES,
            "proposition": proposition,
            "question": SCORE_QUESTION,
        },
    }


def _parallel_primitives(family: Family, source_id: str, source_prompt: str, representation: str) -> dict[str, Any]:
    """The metadata block that ties a record to its source question, as in Sys1Cal-v1."""
    positive, negative = family.positive, family.negative
    return {
        "negative_source_outcome": negative,
        "positive_source_outcome": positive,
        "score_levels": len(SCORE_LEVEL_NAMES),
        "score_value_rule": "z_j = j / 9 for j = 0,...,9",
        "source_instance_id": source_id,
        "source_outcomes": [positive, negative],
        "source_prompt": source_prompt,
        "source_representation": representation,
    }
