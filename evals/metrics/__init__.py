"""The four metrics, one module each; ``score_case`` runs all of them on one answer."""

from collections.abc import Callable

from evallens.reports import MetricName
from evals.metrics import accuracy, harmfulness, irrelevance, recall
from evals.metrics.result import Answer, MetricResult, ScoringContext
from evals.sets.format import CaseSpec

Scorer = Callable[[CaseSpec, Answer, ScoringContext], MetricResult]

SCORERS: dict[MetricName, Scorer] = {
    "accuracy": accuracy.score,
    "irrelevance": irrelevance.score,
    "harmfulness": harmfulness.score,
    "recall": recall.score,
}


def score_case(case: CaseSpec, answer: Answer, context: ScoringContext) -> dict[MetricName, MetricResult]:
    """Every metric on one answer, by metric name."""
    return {name: scorer(case, answer, context) for name, scorer in SCORERS.items()}


__all__ = ["SCORERS", "Answer", "MetricResult", "ScoringContext", "score_case"]
