"""What happens to a chat request before the engine, and what is remembered after it.

safety guard -> exact cache -> semantic cache -> retrieval (budget, breaker; degraded on failure) ->
scope guard -> prompt. A refusal, a decline or a cache hit is a ``CannedAnswer``: the engine is not
called. Answers are stored in the caches only for deterministic requests (temperature 0 or a seed).
"""

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Tracer
from opentelemetry.util.types import AttributeValue
from sqlalchemy.orm import Session, sessionmaker

from evallens.service.caches import CacheMetrics, ExactCache, SemanticCache, request_key
from evallens.service.engines.base import JSONValue, SamplingOptions
from evallens.service.guards import (
    CircuitBreaker,
    EngineGuard,
    GuardMetrics,
    RetrievalGuard,
    SafetyGuard,
    ScopeGuard,
)
from evallens.service.guards.degrade import RETRIEVAL_TIMEOUT
from evallens.service.protocol import ChatCompletionRequest
from evallens.service.rag import Embedder, HybridRetriever, KeywordIndex, ScoredId, documents_attributes
from evallens.service.rag.embeddings import Vectors
from evallens.service.rag.types import RetrievalResult
from evallens.settings import ServiceSettings
from evallens.telemetry import attributes as attr
from evallens.telemetry.messages import last_user_message

DEFAULT_TENANT = "default"


@dataclass(frozen=True)
class CannedAnswer:
    """An answer given without the engine: a cached one, a refusal or a decline."""

    text: str
    finish_reason: str | None = "stop"
    num_prompt_tokens: int = 0
    num_output_tokens: int = 0
    cited_ids: tuple[str, ...] = ()
    retrieved_ids: tuple[str, ...] = ()


@dataclass
class RagState:
    """What the pipeline learned about one request; the response extension and span read it."""

    tenant: str
    retrieval: bool
    deterministic: bool
    use_caches: bool = True
    question: str | None = None
    single_turn: bool = False
    embedding: Vectors | None = None
    exact_key: str | None = None
    result: RetrievalResult | None = None
    exact_hit: bool = False
    semantic_hit: bool = False
    degraded_reason: str | None = None
    canned: CannedAnswer | None = None

    @property
    def degraded(self) -> bool:
        """The answer was given in a degraded mode (no context, or a cached stand-in for the engine)."""
        return self.degraded_reason is not None

    @property
    def semantic_scope(self) -> str:
        """Semantic-cache entries are per tenant and per mode (with or without the knowledge base)."""
        return f"{self.tenant}\x1f{'rag' if self.retrieval else 'plain'}"


class RagPipeline:
    """The RAG half of the service: guards, caches and retrieval around the engine call."""

    def __init__(
        self,
        settings: ServiceSettings,
        *,
        embedder: Embedder,
        retriever: HybridRetriever | None,
        tracer: Tracer,
        cache_metrics: CacheMetrics,
        guard_metrics: GuardMetrics,
    ) -> None:
        self.settings = settings
        self.embedder = embedder
        self.retriever = retriever
        self.tracer = tracer
        self.exact: ExactCache[CannedAnswer] = ExactCache(settings, metrics=cache_metrics, tracer=tracer)
        self.semantic: SemanticCache[CannedAnswer] = SemanticCache(
            settings, metrics=cache_metrics, tracer=tracer
        )
        self.safety = SafetyGuard(settings, tracer=tracer)
        self.scope = ScopeGuard(settings, tracer=tracer)
        self.retrieval_breaker = CircuitBreaker("retrieval", settings, metrics=guard_metrics)
        self.engine_breaker = CircuitBreaker("engine", settings, metrics=guard_metrics)
        self.retrieval_guard = RetrievalGuard(settings, breaker=self.retrieval_breaker, metrics=guard_metrics)
        self.engine_guard = EngineGuard(breaker=self.engine_breaker, metrics=guard_metrics)

    @property
    def retrieval_enabled(self) -> bool:
        """Retrieval is on by setting and there is a knowledge base to retrieve from."""
        return self.settings.retrieval_enabled and self.retriever is not None

    def config(self) -> dict[str, JSONValue]:
        """Every answer-changing retrieval, cache and guard parameter (for ``/v1/config``)."""
        retrieval: dict[str, Any] = (
            self.retriever.config() if self.retriever is not None else {"prompt_template": None}
        )
        retrieval["retrieval_enabled"] = self.retrieval_enabled
        retrieval["knowledge_base"] = self.retriever is not None
        # JSON round trip: plain JSON values only, whatever the components return
        loaded: dict[str, JSONValue] = json.loads(
            json.dumps(
                {
                    "retrieval": retrieval,
                    "caches": {**self.exact.config(), **self.semantic.config()},
                    "guards": {**self.safety.config(), **self.scope.config()},
                },
                default=str,
            )
        )
        return loaded

    async def warm_up(self) -> None:
        """Load the embedding model before the first request needs it."""
        if self.retrieval_enabled or self.semantic.enabled:
            await self.embedder.aembed_one("warm up")

    async def before_engine(
        self,
        request: ChatCompletionRequest,
        sampling: SamplingOptions,
        tenant: str | None,
        config_fingerprint: str,
        *,
        use_caches: bool = True,
    ) -> RagState:
        """Run the stages before the engine, within the current (request) span; ``use_caches=False``
        (a ``Cache-Control: no-cache`` request) neither reads nor fills the response caches."""
        wanted = request.evallens.retrieval if request.evallens is not None else None
        state = RagState(
            tenant=tenant or DEFAULT_TENANT,
            retrieval=self.retrieval_enabled and wanted is not False,
            deterministic=_deterministic(request, sampling),
            use_caches=use_caches,
        )
        state.question = last_user_message(request.messages)
        roles = [message.role for message in request.messages]
        state.single_turn = roles.count("user") == 1 and "assistant" not in roles
        if state.question is None:
            return state
        verdict = self.safety.check(state.question)
        if verdict.refused:
            state.canned = CannedAnswer(verdict.message or "")
            return state
        if state.use_caches and state.deterministic and self.exact.enabled:
            state.exact_key = self._exact_key(request, state, config_fingerprint)
            cached = self.exact.get(state.exact_key)
            if cached is not None:
                state.exact_hit, state.canned = True, cached
                return state
        semantic = state.use_caches and self.semantic.enabled
        if state.single_turn and (state.retrieval or semantic):
            state.embedding = await self._embed(state.question)
        if state.single_turn and state.embedding is not None and semantic:
            hit = self.semantic.lookup(state.semantic_scope, state.embedding)
            if hit is not None:
                state.semantic_hit, state.canned = True, hit.value
                return state
        if state.retrieval and self.retriever is not None:
            await self._retrieve(state)
        return state

    def fallback(self, state: RagState) -> CannedAnswer | None:
        """A semantic-cache answer, at the looser fallback threshold, for when the engine fails."""
        if state.embedding is None or not state.single_turn or not state.use_caches:
            return None
        hit = self.semantic.lookup(
            state.semantic_scope, state.embedding, threshold=self.semantic.fallback_threshold
        )
        if hit is None:
            return None
        state.semantic_hit = True
        return hit.value

    def remember(self, state: RagState, answer: CannedAnswer) -> None:
        """Store a complete engine answer of a deterministic request in both caches."""
        if not state.use_caches or not state.deterministic or state.degraded or state.canned is not None:
            return
        if state.exact_key is not None:
            self.exact.put(state.exact_key, answer)
        if state.single_turn and state.embedding is not None and state.question is not None:
            self.semantic.store(state.semantic_scope, state.question, state.embedding, answer)

    async def _embed(self, question: str) -> Vectors | None:
        with self.tracer.start_as_current_span(attr.SPAN_EMBED_QUERY) as span:
            try:
                return await asyncio.to_thread(self.embedder.embed_one, question)
            except Exception as error:  # the retrieval guard degrades; caches are skipped
                span.record_exception(error)
                return None

    async def _retrieve(self, state: RagState) -> None:
        assert self.retriever is not None and state.question is not None
        outcome = await self.retrieval_guard.retrieve(
            self.retriever, state.question, query_embedding=state.embedding
        )
        if outcome.result is None:
            state.degraded_reason = outcome.reason
            if outcome.reason == RETRIEVAL_TIMEOUT:
                trace.get_current_span().set_attribute(attr.TIMEOUT, True)
            return
        state.result = outcome.result
        if state.embedding is None:
            state.embedding = outcome.result.query_embedding
        verdict = self.scope.check(outcome.result)
        if verdict.declined:
            state.canned = CannedAnswer(verdict.message or "")

    def _exact_key(self, request: ChatCompletionRequest, state: RagState, fingerprint: str) -> str:
        body = request.model_dump(include={"model", "messages", "temperature", "top_p", "seed", "stop"})
        body["max_tokens"] = request.max_tokens or request.max_completion_tokens
        body["retrieval"] = state.retrieval
        return request_key(body, tenant=state.tenant, config_fingerprint=fingerprint)


def span_attributes(state: RagState) -> dict[str, AttributeValue]:
    """What the request span says about caches, degradation and the chunks put into the prompt."""
    values: dict[str, AttributeValue] = {
        attr.CACHE_EXACT_HIT: state.exact_hit,
        attr.CACHE_SEMANTIC_HIT: state.semantic_hit,
        attr.DEGRADED: state.degraded,
    }
    if state.degraded_reason is not None:
        values[attr.DEGRADED_REASON] = state.degraded_reason
    if state.canned is not None and (state.exact_hit or state.semantic_hit):
        values[attr.RETRIEVAL_CHUNK_IDS] = list(state.canned.cited_ids)
    elif state.result is not None and state.canned is None:
        chunks = state.result.chunks
        values[attr.RETRIEVAL_CHUNK_IDS] = [chunk.id for chunk in chunks]
        values.update(documents_attributes([ScoredId(chunk.id, chunk.score) for chunk in chunks]))
    elif state.retrieval and state.canned is None:
        values[attr.RETRIEVAL_CHUNK_IDS] = []
    return values


def _deterministic(request: ChatCompletionRequest, sampling: SamplingOptions) -> bool:
    """Same request, same answer: greedy or seeded, and no length tricks that the cache key misses."""
    if request.min_tokens or request.ignore_eos:
        return False
    return sampling.temperature == 0 or sampling.seed is not None


def create_rag_pipeline(
    settings: ServiceSettings,
    sessions: sessionmaker[Session] | None,
    *,
    tracer: Tracer,
    keyword_index: KeywordIndex,
    registry: Any,
) -> tuple[RagPipeline, Embedder]:
    """The pipeline and its embedder; without a database there is no knowledge base to retrieve from."""
    embedder = Embedder(settings)
    retriever = (
        None
        if sessions is None
        else HybridRetriever(
            settings,
            embedder=embedder,
            session_factory=sessions,
            keyword_index=keyword_index,
            tracer=tracer,
        )
    )
    pipeline = RagPipeline(
        settings,
        embedder=embedder,
        retriever=retriever,
        tracer=tracer,
        cache_metrics=CacheMetrics.create(registry),
        guard_metrics=GuardMetrics.create(registry),
    )
    return pipeline, embedder
