"""Retrieval slow or failing -> an answer without context, marked degraded; engine failing -> cache or 503."""

import asyncio
from collections.abc import Awaitable, Callable

import numpy as np
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from evallens.service.budgets import within
from evallens.service.errors import BudgetExceeded
from evallens.service.guards import (
    CircuitBreaker,
    EngineGuard,
    GuardMetrics,
    RetrievalGuard,
    RetrievalOutcome,
    ServiceUnavailable,
)
from evallens.service.rag import RetrievalResult, RetrievedChunk, get_template, system_message
from evallens.settings import GuardSettings
from evallens.telemetry import attributes as attr
from evallens.telemetry import metrics
from tests.evallens.service.conftest import Clock, span_attributes

SETTINGS = GuardSettings(
    retrieval_budget_ms=50, breaker_min_calls=2, breaker_error_rate=0.5, breaker_open_s=10
)
QUESTION = [{"role": "user", "content": "How long do refunds take?"}]


class FakeRetriever:
    """Fails, hangs, or answers with one chunk."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.calls = 0

    async def retrieve(
        self, query: str, *, project: str, query_embedding: np.ndarray | None = None
    ) -> RetrievalResult:
        del project, query_embedding
        self.calls += 1
        if self.mode == "raise":
            raise ConnectionError("database is down")
        if self.mode == "sleep":
            await asyncio.sleep(30)
        chunk = RetrievedChunk("c1", "refund-timing", "Refunds > Timing\nRefunds take 5 days.", 8, 0.9, 0.9)
        return RetrievalResult(query=query, chunks=[chunk], best_relevance=0.9)


def answer(
    guard: RetrievalGuard, retriever: FakeRetriever, tracer_provider: TracerProvider
) -> RetrievalOutcome:
    """What the chat pipeline does: retrieve under the guard inside the request span, build the prompt."""

    async def run() -> RetrievalOutcome:
        with tracer_provider.get_tracer("test").start_as_current_span("chat"):
            return await guard.retrieve(retriever, QUESTION[0]["content"], project="shop")

    return asyncio.run(run())


def degraded_total(registry: CollectorRegistry, reason: str) -> float:
    return registry.get_sample_value(f"{metrics.DEGRADED}_total", {"reason": reason}) or 0.0


@pytest.mark.parametrize(("mode", "reason"), [("raise", "retrieval_error"), ("sleep", "retrieval_timeout")])
def test_retrieval_fault_still_answers_marked_degraded(
    mode: str,
    reason: str,
    clock: Clock,
    registry: CollectorRegistry,
    guard_metrics: GuardMetrics,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    breaker = CircuitBreaker("retrieval", SETTINGS, metrics=guard_metrics, clock=clock)
    guard = RetrievalGuard(SETTINGS, breaker=breaker, metrics=guard_metrics)
    outcome = answer(guard, FakeRetriever(mode), tracer_provider)
    assert (outcome.result, outcome.degraded, outcome.reason) == (None, True, reason)

    system = system_message(None if outcome.result is None else outcome.result.chunks)
    assert system == get_template("rag-v1").without_context

    (chat,) = [span for span in span_exporter.get_finished_spans() if span.name == "chat"]
    assert span_attributes(chat)[attr.DEGRADED] is True
    assert span_attributes(chat)[attr.DEGRADED_REASON] == reason
    assert degraded_total(registry, reason) == 1


def test_healthy_retrieval_is_not_degraded(
    clock: Clock,
    guard_metrics: GuardMetrics,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
) -> None:
    breaker = CircuitBreaker("retrieval", SETTINGS, metrics=guard_metrics, clock=clock)
    outcome = answer(
        RetrievalGuard(SETTINGS, breaker=breaker, metrics=guard_metrics), FakeRetriever("ok"), tracer_provider
    )
    assert not outcome.degraded and outcome.result is not None
    assert "[c1] Refunds > Timing" in system_message(outcome.result.chunks)
    (chat,) = span_exporter.get_finished_spans()
    assert attr.DEGRADED not in (chat.attributes or {})


def test_repeated_retrieval_failures_open_the_breaker_and_skip_retrieval(
    clock: Clock, registry: CollectorRegistry, guard_metrics: GuardMetrics, tracer_provider: TracerProvider
) -> None:
    breaker = CircuitBreaker("retrieval", SETTINGS, metrics=guard_metrics, clock=clock)
    guard = RetrievalGuard(SETTINGS, breaker=breaker, metrics=guard_metrics)
    failing = FakeRetriever("raise")
    for _ in range(2):
        answer(guard, failing, tracer_provider)
    outcome = answer(guard, failing, tracer_provider)
    assert outcome.reason == "retrieval_breaker_open" and failing.calls == 2
    clock.now += 10
    healthy = answer(guard, FakeRetriever("ok"), tracer_provider)
    assert not healthy.degraded


def test_engine_failure_falls_back_to_the_cache_or_503(
    clock: Clock, registry: CollectorRegistry, guard_metrics: GuardMetrics, tracer_provider: TracerProvider
) -> None:
    guard = EngineGuard(
        breaker=CircuitBreaker("engine", SETTINGS, metrics=guard_metrics, clock=clock), metrics=guard_metrics
    )

    async def broken() -> str:
        raise RuntimeError("engine crashed")

    async def healthy() -> str:
        return "fresh answer"

    def cached_as(answer: str | None) -> Callable[[], Awaitable[str | None]]:
        async def lookup() -> str | None:
            return answer

        return lookup

    async def run() -> None:
        ok = await guard.generate(healthy, fallback=cached_as("cached"))
        assert (ok.answer, ok.fallback, ok.degraded) == ("fresh answer", None, False)
        cached = await guard.generate(broken, fallback=cached_as("cached answer"))
        assert (cached.answer, cached.fallback, cached.degraded) == (None, "cached answer", True)
        with pytest.raises(ServiceUnavailable) as refused:
            await guard.generate(broken, fallback=cached_as(None))
        assert "temporarily unavailable" in str(refused.value)
        # The breaker is now open: the engine is not called at all, the cache still answers.
        calls = []

        async def counted() -> str:
            calls.append(1)
            return "x"

        from_cache = await guard.generate(counted, fallback=cached_as("cached answer"))
        assert from_cache.reason == "engine_breaker_open" and calls == []

    asyncio.run(run())
    assert degraded_total(registry, "engine_failed_semantic_cache") == 2


def test_a_budget_cuts_a_slow_stage_but_not_its_own_timeouts() -> None:
    async def slow() -> str:
        await asyncio.sleep(30)
        return "late"

    async def quick() -> str:
        return "on time"

    async def times_out_itself() -> str:
        raise TimeoutError("the database's own timeout")

    async def run() -> None:
        missed = BudgetExceeded("retrieval", 0.01)
        with pytest.raises(BudgetExceeded, match="retrieval budget of 0.01 s") as raised:
            await within(slow(), 0.01, missed)
        assert raised.value is missed and raised.value.code == "retrieval_timeout"
        assert await within(quick(), 0.01, missed) == "on time"
        assert await within(quick(), -1.0, missed) == "on time"  # no time left still runs what is ready
        with pytest.raises(TimeoutError, match="own timeout"):
            await within(times_out_itself(), 10, missed)

    asyncio.run(run())
