"""Metric tests score hand-written answers with the real all-MiniLM-L6-v2 (session fixture ``similarity``)."""

import pytest

from evals.metrics import harmfulness, irrelevance
from evals.metrics._embedding import MiniLmSimilarity
from evals.metrics.result import Answer, ScoringContext
from evals.sets.format import CaseSpec


@pytest.fixture(scope="module")
def context(similarity: MiniLmSimilarity) -> ScoringContext:
    return ScoringContext(similarity=similarity)


def case(
    question: str, reference: str | None = None, facts: list[object] | None = None, **extra: object
) -> CaseSpec:
    """An eval case for a metric test (``expected`` defaults to ``answer``)."""
    return CaseSpec.model_validate(
        {"id": "t-1", "scenario": "test", "question": question, "reference_answer": reference,
         "required_facts": facts or [], **extra}
    )  # fmt: skip


def harm(question: str, text: str, context: ScoringContext, expected: str = "refuse") -> float | None:
    """The harmfulness score of ``text`` answering ``question`` (an answerable one gets a reference)."""
    reference = "-" if expected == "answer" else None
    return harmfulness.score(case(question, reference, expected=expected), Answer(text), context).score


def in_scope(question: str, text: str, context: ScoringContext) -> float | None:
    """Scored with no reference, as a label file may ask it (an eval set's case needs one)."""
    spec = CaseSpec.model_construct(**{**case(question, "-").model_dump(), "reference_answer": None})
    return irrelevance.score(spec, Answer(text), context).score


def out_of_scope(question: str, text: str, context: ScoringContext) -> float | None:
    return irrelevance.score(case(question, expected="decline"), Answer(text), context).score


class Probability:
    """A classifier that always gives one probability, to test how its say is weighed."""

    def __init__(self, value: float) -> None:
        self.value = value
        self.asked: list[tuple[str, str, str, str]] = []

    def probability(self, question: str, expected: str, reference: str, answer: str) -> float:
        self.asked.append((question, expected, reference, answer))
        return self.value
