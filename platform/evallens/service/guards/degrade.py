"""Degradation: answer without context when retrieval is slow or failing; fall back to the semantic
cache, else a clear 503, when the engine fails.

Both helpers mark the *current* span (the chat request span) with ``evallens.degraded`` and
``evallens.degraded.reason`` and count ``evallens_degraded_total{reason}``.
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from opentelemetry import trace

from evallens.service.budgets import within
from evallens.service.errors import BudgetExceeded
from evallens.service.guards._metrics import GuardMetrics
from evallens.service.guards.breaker import BreakerOpen, CircuitBreaker
from evallens.service.rag.embeddings import Vectors
from evallens.service.rag.types import RetrievalResult
from evallens.settings import GuardSettings
from evallens.telemetry import attributes as attr

T = TypeVar("T")
F = TypeVar("F")

RETRIEVAL_BUDGET = "retrieval"
RETRIEVAL_TIMEOUT = "retrieval_timeout"
RETRIEVAL_ERROR = "retrieval_error"
RETRIEVAL_BREAKER_OPEN = "retrieval_breaker_open"
ENGINE_FALLBACK_CACHE = "engine_failed_semantic_cache"
ENGINE_UNAVAILABLE_MESSAGE = (
    "The assistant is temporarily unavailable. Please try again in a minute, or contact customer support."
)


class Retriever(Protocol):
    """What the guard needs of a retriever (``HybridRetriever`` or a test double)."""

    async def retrieve(
        self, query: str, *, project: str, query_embedding: Vectors | None = None
    ) -> RetrievalResult:
        """Retrieve context for ``query`` from ``project``'s knowledge base."""
        ...


class ServiceUnavailable(Exception):
    """The engine failed and no cached answer can stand in: a 503. Its message is the service's generic
    words, for an open breaker or an error that says nothing a client may read; the caller answers with
    the engine's own error (its ``__cause__``) where that says what failed."""

    def __init__(self, reason: str) -> None:
        super().__init__(ENGINE_UNAVAILABLE_MESSAGE)
        self.reason = reason


@dataclass(frozen=True)
class RetrievalOutcome:
    """Retrieval's result, or None with the reason the answer goes without context."""

    result: RetrievalResult | None
    degraded: bool
    reason: str | None = None


@dataclass(frozen=True)
class EngineOutcome(Generic[T, F]):
    """The engine's answer, or a cached stand-in (``degraded``) when the engine failed."""

    answer: T | None
    fallback: F | None
    degraded: bool
    reason: str | None = None


def mark_degraded(reason: str, metrics: GuardMetrics) -> None:
    """Mark the current span degraded and count it."""
    span = trace.get_current_span()
    span.set_attributes({attr.DEGRADED: True, attr.DEGRADED_REASON: reason})
    metrics.degraded.labels(reason=reason).inc()


class RetrievalGuard:
    """Runs retrieval within its budget and behind its breaker; never raises for retrieval faults."""

    def __init__(self, settings: GuardSettings, *, breaker: CircuitBreaker, metrics: GuardMetrics) -> None:
        self._budget_s = settings.retrieval_budget_ms / 1000
        self._breaker = breaker
        self._metrics = metrics

    async def retrieve(
        self, retriever: Retriever, query: str, *, project: str, query_embedding: Vectors | None = None
    ) -> RetrievalOutcome:
        """Retrieve from ``project``'s knowledge base, or return a degraded outcome (timeout, error,
        breaker open) and mark the span."""
        try:
            result = await self._breaker.call(
                lambda: within(
                    retriever.retrieve(query, project=project, query_embedding=query_embedding),
                    self._budget_s,
                    BudgetExceeded(RETRIEVAL_BUDGET, self._budget_s),
                )
            )
        except BreakerOpen:
            reason = RETRIEVAL_BREAKER_OPEN
        except BudgetExceeded:
            reason = RETRIEVAL_TIMEOUT
        except Exception as error:
            trace.get_current_span().record_exception(error)
            reason = RETRIEVAL_ERROR
        else:
            return RetrievalOutcome(result=result, degraded=False)
        mark_degraded(reason, self._metrics)
        return RetrievalOutcome(result=None, degraded=True, reason=reason)


class EngineGuard:
    """Runs an engine call behind its breaker; on failure answers from ``fallback`` or raises 503."""

    def __init__(self, *, breaker: CircuitBreaker, metrics: GuardMetrics) -> None:
        self._breaker = breaker
        self._metrics = metrics

    async def generate(
        self, call: Callable[[], Awaitable[T]], *, fallback: Callable[[], Awaitable[F | None]]
    ) -> EngineOutcome[T, F]:
        """``call()``; if it fails or the breaker is open, ``await fallback()`` (e.g. a semantic-cache
        lookup, embedding the question only then), else ``ServiceUnavailable``. Errors meaning "the
        request was bad" should be raised by the caller before this: they would count against the
        breaker."""
        try:
            answer = await self._breaker.call(call)
        except Exception as error:
            reason = "engine_breaker_open" if isinstance(error, BreakerOpen) else "engine_error"
            if not isinstance(error, BreakerOpen):
                trace.get_current_span().record_exception(error)
            stand_in = await fallback()
            if stand_in is None:
                self._metrics.degraded.labels(reason=f"{reason}_unavailable").inc()
                raise ServiceUnavailable(reason) from error
            mark_degraded(ENGINE_FALLBACK_CACHE, self._metrics)
            return EngineOutcome(answer=None, fallback=stand_in, degraded=True, reason=reason)
        return EngineOutcome(answer=answer, fallback=None, degraded=False)
