"""Answers given without the engine, and the chat's two answer caches (exact and semantic).

The preflight looks answers up; the chat serving stores a complete engine answer and, when the engine
fails, asks the semantic cache for a stand-in at its looser fallback threshold. Only deterministic
requests (temperature 0 or a seed) are looked up and stored (``AnswerCache.cacheable``, one rule for
both); a ``Cache-Control: no-cache`` request neither reads nor fills the caches.
"""

from dataclasses import dataclass, field

from opentelemetry.trace import Tracer

from evallens.service.caches import CacheMetrics, ExactCache, SemanticCache, request_key
from evallens.service.chat.protocol import ChatCompletionRequest
from evallens.service.engines.base import JSONValue, SamplingOptions
from evallens.service.rag.embeddings import Vectors
from evallens.settings import CacheSettings


@dataclass(frozen=True)
class Sources:
    """What an answer rests on: the chunk ids in its prompt (best first) and their distinct documents
    in rank order (what recall@k scores). A guard's refusal or decline rests on nothing."""

    cited_ids: tuple[str, ...] = ()
    retrieved_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class CannedAnswer:
    """An answer given without the engine: a cached one, a refusal or a decline."""

    text: str
    finish_reason: str | None = "stop"
    num_prompt_tokens: int = 0
    num_output_tokens: int = 0
    sources: Sources = field(default_factory=Sources)


@dataclass
class CacheKey:
    """Where one request's answer is looked up and stored; filled in as the preflight learns it."""

    use: bool  # False for Cache-Control: no-cache
    deterministic: bool  # same request, same answer: only then is an answer stored
    scope: str  # semantic entries are per tenant and per mode (with or without the knowledge base)
    single_turn: bool  # only a lone question is compared by meaning
    question: str | None
    exact: str | None = None
    embedding: Vectors | None = None


def cache_scope(tenant: str, retrieval: bool) -> str:
    """Where a question's semantic entries live: per tenant and per mode (with or without the knowledge
    base)."""
    return f"{tenant}\x1f{'rag' if retrieval else 'plain'}"


def deterministic(request: ChatCompletionRequest, sampling: SamplingOptions) -> bool:
    """Same request, same answer: greedy or seeded, and no length tricks that the cache key misses."""
    if request.min_tokens or request.ignore_eos:
        return False
    return sampling.temperature == 0 or sampling.seed is not None


class AnswerCache:
    """The exact and the semantic cache of chat answers, and the rules of when each is used."""

    def __init__(self, settings: CacheSettings, *, metrics: CacheMetrics, tracer: Tracer) -> None:
        self.exact: ExactCache[CannedAnswer] = ExactCache(settings, metrics=metrics, tracer=tracer)
        self.semantic: SemanticCache[CannedAnswer] = SemanticCache(settings, metrics=metrics, tracer=tracer)

    def config(self) -> dict[str, JSONValue]:
        """The answer-changing cache parameters (for ``/v1/config``)."""
        return {**self.exact.config(), **self.semantic.config()}

    @staticmethod
    def cacheable(key: CacheKey) -> bool:
        """The one rule for both caches, lookup and store alike: a deterministic request that allows
        caching. Anything else is never stored, so looking it up (or embedding it) is work for nothing."""
        return key.use and key.deterministic

    def wants_exact(self, key: CacheKey) -> bool:
        """Whether this request is looked up (and stored) by its exact content."""
        return self.cacheable(key) and self.exact.enabled

    def wants_embedding(self, key: CacheKey) -> bool:
        """Whether this request is looked up (and stored) by meaning: only then is its question embedded
        for the cache."""
        return self.cacheable(key) and key.single_turn and self.semantic.enabled

    @staticmethod
    def exact_key(request: ChatCompletionRequest, *, tenant: str, retrieval: bool, fingerprint: str) -> str:
        """The exact-cache key: the answer-relevant request fields, the tenant, the mode and the config."""
        body = request.model_dump(include={"model", "messages", "temperature", "top_p", "seed", "stop"})
        body["max_tokens"] = request.max_tokens or request.max_completion_tokens
        body["retrieval"] = retrieval
        return request_key(body, tenant=tenant, config_fingerprint=fingerprint)

    def get_exact(self, key: CacheKey) -> CannedAnswer | None:
        """The answer stored under the request's exact key."""
        return None if key.exact is None else self.exact.get(key.exact)

    def get_similar(self, key: CacheKey) -> CannedAnswer | None:
        """An answer to a question close enough in meaning (at the cache's threshold)."""
        if key.embedding is None or not self.wants_embedding(key):
            return None
        hit = self.semantic.lookup(key.scope, key.embedding)
        return None if hit is None else hit.value

    def wants_fallback(self, key: CacheKey) -> bool:
        """Whether a failed engine may be stood in for by a similar question's answer (any request that
        allows caching, deterministic or not: it is a degraded answer either way)."""
        return key.use and key.single_turn and key.question is not None and self.semantic.enabled

    def fallback(self, key: CacheKey) -> CannedAnswer | None:
        """A stand-in for a failed engine: an answer at the looser fallback threshold."""
        if key.embedding is None or not self.wants_fallback(key):
            return None
        hit = self.semantic.lookup(key.scope, key.embedding, threshold=self.semantic.fallback_threshold)
        return None if hit is None else hit.value

    def remember(self, key: CacheKey, answer: CannedAnswer) -> None:
        """Store a complete engine answer of a cacheable request in both caches."""
        if self.wants_exact(key) and key.exact is not None:
            self.exact.put(key.exact, answer)
        if self.wants_embedding(key) and key.embedding is not None and key.question is not None:
            self.semantic.store(key.scope, key.question, key.embedding, answer)
