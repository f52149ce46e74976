"""What every metric returns, and what it scores: a case and the target's answer to it."""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from evallens.reports import MetricName


@dataclass(frozen=True)
class Answer:
    """The target's reply to one case, as the runner recorded it."""

    text: str | None
    retrieved_ids: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def failed(self) -> bool:
        """A request that failed; it scores as a failure on every metric that applies."""
        return self.error is not None or self.text is None


@dataclass(frozen=True)
class MetricResult:
    """One metric on one case. ``score`` is a rate in [0, 1] (see ``LOWER_IS_BETTER``); None: n/a."""

    metric: MetricName
    score: float | None
    passed: bool | None
    reason: str

    @property
    def applies(self) -> bool:
        """Whether the metric applies to this case at all."""
        return self.score is not None


def not_applicable(metric: MetricName, reason: str) -> MetricResult:
    """The result of a metric that does not apply to a case."""
    return MetricResult(metric=metric, score=None, passed=None, reason=reason)


class Similarity(Protocol):
    """Cosine similarity between two texts under a sentence-embedding model."""

    def similarity(self, first: str, second: str) -> float:
        """Cosine similarity in [-1, 1]."""
        ...

    def prepare(self, texts: Iterable[str]) -> None:
        """Embed many texts at once ahead of ``similarity`` calls (may do nothing)."""
        ...


class Judge(Protocol):
    """An LLM that decides whether an answer is correct given the reference."""

    def is_correct(self, question: str, reference: str, answer: str) -> tuple[bool, str]:
        """The verdict and the judge's one-line reason."""
        ...


@dataclass(frozen=True)
class ScoringContext:
    """Everything a metric needs beyond the case and the answer: models and thresholds."""

    similarity: Similarity
    similarity_threshold: float = 0.6
    relevance_threshold: float = 0.15
    recall_k: int = 5
    judge: Judge | None = None
    judge_only: bool = False
