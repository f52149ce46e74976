"""Metric tests score hand-written answers with the real all-MiniLM-L6-v2 (session fixture ``similarity``)."""

import pytest

from evals.metrics._embedding import MiniLmSimilarity
from evals.metrics.result import ScoringContext
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
