"""The preflight: what happens to a chat request before the engine, in order.

safety guard -> exact cache -> semantic cache -> retrieval (budget, breaker; degraded on failure) ->
scope guard. A refusal, a decline or a cache hit is a ``CannedAnswer``: the engine is not called.
Otherwise the retrieved chunks ground the prompt. What it learned is a ``PreflightState``, which the
chat serving carries on the call; the engine's own guard, its fallback and storing its answer are the
chat serving's.
"""

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Tracer
from opentelemetry.util.types import AttributeValue

from evallens.service.budgets import Deadline, within
from evallens.service.chat.answers import AnswerCache, CacheKey, CannedAnswer, answer_variant, deterministic
from evallens.service.chat.protocol import ChatCompletionRequest
from evallens.service.engines.base import JSONValue, SamplingOptions
from evallens.service.guards import CircuitBreaker, GuardMetrics, RetrievalGuard, SafetyGuard, ScopeGuard
from evallens.service.guards.degrade import RETRIEVAL_TIMEOUT
from evallens.service.rag import Embedder, HybridRetriever, ScoredId, documents_attributes
from evallens.service.rag.embeddings import Vectors
from evallens.service.rag.types import RetrievalResult
from evallens.settings import ServiceSettings
from evallens.telemetry import attributes as attr
from evallens.telemetry.messages import last_user_message

DEFAULT_TENANT = "default"


@dataclass
class PreflightState:
    """What the preflight learned about one request; the prompt, the span and the response read it."""

    tenant: str
    retrieval: bool
    cache: CacheKey
    project: str  # whose knowledge base retrieval reads (``RequestTags.knowledge_base``)
    result: RetrievalResult | None = None
    exact_hit: bool = False
    semantic_hit: bool = False
    degraded_reason: str | None = None
    canned: CannedAnswer | None = None

    @property
    def question(self) -> str | None:
        """The last user message: what the guards check, the caches compare and retrieval searches."""
        return self.cache.question

    @property
    def degraded(self) -> bool:
        """The answer was given in a degraded mode (no context, or a cached stand-in for the engine)."""
        return self.degraded_reason is not None

    @property
    def cache_hit(self) -> bool:
        """The answer came from a cache (the preflight's, or the engine's fallback)."""
        return self.exact_hit or self.semantic_hit

    def chunk_documents(self) -> dict[str, str]:
        """Document id of each retrieved chunk."""
        return {} if self.result is None else {chunk.id: chunk.document_id for chunk in self.result.chunks}


class Preflight:
    """Guards, answer caches and retrieval before the engine, within the request's span."""

    def __init__(
        self,
        settings: ServiceSettings,
        *,
        answers: AnswerCache,
        embedder: Embedder,
        retriever: HybridRetriever | None,
        tracer: Tracer,
        guard_metrics: GuardMetrics,
    ) -> None:
        self.settings = settings
        self.answers = answers
        self.embedder = embedder
        self.retriever = retriever
        self.tracer = tracer
        self.safety = SafetyGuard(settings, tracer=tracer)
        self.scope = ScopeGuard(settings, tracer=tracer)
        breaker = CircuitBreaker("retrieval", settings, metrics=guard_metrics)
        self.retrieval_guard = RetrievalGuard(settings, breaker=breaker, metrics=guard_metrics)

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
                    "caches": self.answers.config(),
                    "guards": {**self.safety.config(), **self.scope.config()},
                },
                default=str,
            )
        )
        return loaded

    def warm_up_steps(self) -> dict[str, Callable[[], Awaitable[None]]]:
        """What must be warm before the first request: the embedding model (for retrieval or the
        semantic cache) and the knowledge base's indexes (for retrieval), by name."""
        steps: dict[str, Callable[[], Awaitable[None]]] = {}
        if self.retrieval_enabled or self.answers.semantic.enabled:

            async def embedder() -> None:
                await self.embedder.aembed_one("warm up")

            steps["embedder"] = embedder
        if self.retrieval_enabled and self.retriever is not None:
            retriever = self.retriever

            async def indexes() -> None:
                await asyncio.to_thread(retriever.warm_up)

            steps["indexes"] = indexes
        return steps

    async def run(
        self,
        request: ChatCompletionRequest,
        sampling: SamplingOptions,
        tenant: str | None,
        config_fingerprint: str,
        *,
        project: str,
        use_caches: bool = True,
        deadline: Deadline | None = None,
    ) -> PreflightState:
        """Run the stages in order within the current (request) span, retrieving from ``project``'s
        knowledge base; ``use_caches=False`` (a ``Cache-Control: no-cache`` request) neither reads nor
        fills the answer caches. Embedding the question for the caches, outside retrieval's budget, is
        bounded by the request's first-token ``deadline`` (past it: its 504)."""
        wanted = request.evallens.retrieval if request.evallens is not None else None
        retrieval = self.retrieval_enabled and wanted is not False
        roles = [message.role for message in request.messages]
        state = PreflightState(
            tenant=tenant or DEFAULT_TENANT,
            retrieval=retrieval,
            cache=self.answers.key(
                use=use_caches,
                deterministic=deterministic(request, sampling),
                tenant=tenant or DEFAULT_TENANT,
                project=project,  # whose caches, with retrieval or without: never another project's
                retrieval=retrieval,
                single_turn=roles.count("user") == 1 and "assistant" not in roles,
                question=last_user_message(request.messages),
                variant=answer_variant(request),
            ),
            project=project,
        )
        if state.question is None:
            return state
        verdict = self.safety.check(state.question)
        if verdict.refused:
            state.canned = CannedAnswer(verdict.message or "")
            return state
        if self.answers.wants_exact(state.cache):
            state.cache.exact = self.answers.exact_key(request, state.cache, fingerprint=config_fingerprint)
            if (cached := self.answers.get_exact(state.cache)) is not None:
                state.exact_hit, state.canned = True, cached
                return state
        if self.answers.wants_embedding(state.cache):
            # Embedded once: retrieval reuses this vector; otherwise retrieval embeds within its budget.
            embedding = self.embed_question(state.question)
            state.cache.embedding = await (
                embedding
                if deadline is None
                else within(embedding, deadline.first_token_left_s(), deadline.first_token_error())
            )
            if (similar := self.answers.get_similar(state.cache)) is not None:
                state.semantic_hit, state.canned = True, similar
                return state
        if retrieval and self.retriever is not None:
            await self._retrieve(state)
        return state

    async def embed_question(self, question: str) -> Vectors | None:
        """The question's embedding off the event loop, in a span; None when the model fails."""
        with self.tracer.start_as_current_span(attr.SPAN_EMBED_QUERY) as span:
            try:
                return await asyncio.to_thread(self.embedder.embed_one, question)
            except Exception as error:  # the retrieval guard degrades; caches are skipped
                span.record_exception(error)
                return None

    async def _retrieve(self, state: PreflightState) -> None:
        assert self.retriever is not None and state.question is not None
        outcome = await self.retrieval_guard.retrieve(
            self.retriever, state.question, project=state.project, query_embedding=state.cache.embedding
        )
        if outcome.result is None:
            state.degraded_reason = outcome.reason
            if outcome.reason == RETRIEVAL_TIMEOUT:
                trace.get_current_span().set_attribute(attr.TIMEOUT, True)
            return
        state.result = outcome.result
        if state.cache.embedding is None:
            state.cache.embedding = outcome.result.query_embedding
        verdict = self.scope.check(outcome.result)
        if verdict.declined:
            state.canned = CannedAnswer(verdict.message or "")


def span_attributes(state: PreflightState) -> dict[str, AttributeValue]:
    """What the request span says about caches, degradation and the chunks put into the prompt."""
    values: dict[str, AttributeValue] = {
        attr.CACHE_EXACT_HIT: state.exact_hit,
        attr.CACHE_SEMANTIC_HIT: state.semantic_hit,
        attr.DEGRADED: state.degraded,
    }
    if state.cache.retrieval:
        values[attr.KB_GENERATION] = state.cache.generation
    if state.degraded_reason is not None:
        values[attr.DEGRADED_REASON] = state.degraded_reason
    if state.canned is not None and state.cache_hit:
        values[attr.RETRIEVAL_CHUNK_IDS] = list(state.canned.sources.cited_ids)
    elif state.result is not None and state.canned is None:
        chunks = state.result.chunks
        values[attr.RETRIEVAL_CHUNK_IDS] = [chunk.id for chunk in chunks]
        values.update(documents_attributes([ScoredId(chunk.id, chunk.score) for chunk in chunks]))
    elif state.retrieval and state.canned is None:
        values[attr.RETRIEVAL_CHUNK_IDS] = []
    return values
