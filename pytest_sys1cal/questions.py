"""The questions asked about one rendering, in the wire shape of `POST /v1/systemone`.

Wording follows the Sys1Cal-v1 harness that produced the paper's Jev numbers, so a
fresh recording asks Jev exactly what the paper asked. The swapped Choice is the same question with
the option order reversed: order is part of the question, and the only way to see position bias.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .dataset import Rendering

NOUL, CHOICE, CHOICE_SWAPPED, SCORE = "noul", "choice", "choice_swapped", "score"
ALL_QUESTIONS = (NOUL, CHOICE, CHOICE_SWAPPED, SCORE)
CHOICE_OPTIONS = {CHOICE: ("False", "True"), CHOICE_SWAPPED: ("True", "False")}

PREFIX = (
    "The state fully specifies a probability problem. Treat all numeric probabilities, counts, ratios, "
    "tables, filters, and likelihoods in the state as authoritative. Ignore fields marked irrelevant or "
    "distractor. "
)


class QuestionTexts(NamedTuple):
    """Every field of a rendering that its questions are built from, and nothing else: renderings with equal
    texts are asked the same questions (an adapter may cache their encoding under this key)."""

    proposition: str
    choice_question: str
    score_question: str
    score_levels: tuple[str, ...]

    @classmethod
    def of(cls, rendering: Rendering) -> QuestionTexts:
        return cls(rendering.proposition, rendering.choice_question, rendering.score_question, rendering.score_levels)


def build_questions(rendering: Rendering, question_ids: tuple[str, ...] = ALL_QUESTIONS) -> dict[str, Any]:
    """The `questions` object of the request, keyed by our question ids, in the given order."""
    return questions_from(QuestionTexts.of(rendering), question_ids)


def questions_from(texts: QuestionTexts, question_ids: tuple[str, ...] = ALL_QUESTIONS) -> dict[str, Any]:
    """The `questions` object for these texts (a new object each call)."""
    prop = texts.proposition
    true_text, false_text = f"The proposition is true: {prop}", f"The proposition is false: {prop}"
    option_texts = {"True": true_text, "False": false_text}
    questions: dict[str, Any] = {}
    for qid in question_ids:
        if qid == NOUL:
            questions[qid] = {
                "type": "noul",
                "instructions": f"{PREFIX}Return the probability that this statement is true: {prop}",
                "criteria": {"true": true_text, "false": false_text},
            }
        elif qid in CHOICE_OPTIONS:
            questions[qid] = {
                "type": "choice",
                "instructions": (
                    f"{PREFIX}Return the probability distribution over the exact truth-status options for "
                    f"the proposition; do not report confidence in your reasoning. "
                    f"{texts.choice_question} Proposition: {prop}"
                ),
                "criteria": {option: option_texts[option] for option in CHOICE_OPTIONS[qid]},
            }
        elif qid == SCORE:
            questions[qid] = {
                "type": "score",
                "instructions": (
                    f"{PREFIX}Use the ordered rubric to score the truth degree of the proposition. "
                    f"{texts.score_question} Proposition: {prop}"
                ),
                "criteria": list(texts.score_levels),
            }
        else:
            raise ValueError(f"unknown question id {qid!r}; known: {', '.join(ALL_QUESTIONS)}")
    return questions
