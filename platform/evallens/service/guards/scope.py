"""Scope guard: decline politely when the knowledge base holds nothing relevant to the question."""

from dataclasses import dataclass

from opentelemetry import trace

from evallens.service.rag.types import RetrievalResult
from evallens.settings import GuardSettings
from evallens.telemetry import attributes as attr

OUT_OF_SCOPE_MESSAGE = (
    "I'm sorry, but I can only help with questions about Acme Home & Outdoor: our products, orders,"
    " shipping, returns and refunds, warranty, and your account and payments. Is there anything"
    " about those I can help you with?"
)
TRACER_NAME = "evallens.service.guards"


@dataclass(frozen=True)
class ScopeVerdict:
    """Whether to decline, the relevance it was judged on, and the fixed message when declining."""

    declined: bool
    relevance: float | None
    message: str | None = None


class ScopeGuard:
    """Declines when the best retrieved chunk's cosine to the question is under a threshold."""

    def __init__(self, settings: GuardSettings, *, tracer: trace.Tracer | None = None) -> None:
        self.enabled = settings.scope_guard_enabled
        self.min_relevance = settings.scope_min_relevance
        self._tracer = tracer or trace.get_tracer(TRACER_NAME)

    def config(self) -> dict[str, object]:
        """Parameters that change answers, for ``/v1/config``."""
        return {"scope_guard": self.enabled, "scope_min_relevance": self.min_relevance}

    def check(self, result: RetrievalResult) -> ScopeVerdict:
        """Judge one retrieval (a degraded request has no retrieval: do not call this then)."""
        if not self.enabled:
            return ScopeVerdict(declined=False, relevance=result.best_relevance)
        with self._tracer.start_as_current_span(attr.SPAN_GUARD_SCOPE) as span:
            relevance = result.best_relevance
            declined = relevance is None or relevance < self.min_relevance
            span.set_attribute(attr.GUARD_SCOPE_DECLINED, declined)
            if relevance is not None:
                span.set_attribute(attr.GUARD_SCOPE_RELEVANCE, relevance)
            return ScopeVerdict(declined, relevance, OUT_OF_SCOPE_MESSAGE if declined else None)
