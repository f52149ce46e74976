"""Answers given without the engine, and the chat's two answer caches (exact and semantic).

The preflight looks answers up; the chat serving stores a complete engine answer (finish reason in
``COMPLETE_FINISH_REASONS``) and, when the engine fails, asks the semantic cache for a stand-in at its
looser fallback threshold. Only deterministic requests (temperature 0 or a seed) are looked up and
stored (``AnswerCache.cacheable``, one rule for both); a ``Cache-Control: no-cache`` request neither
reads nor fills the caches. An answer computed with retrieval is keyed by the generation of the
knowledge base it read (``KnowledgeBaseGenerations``): once the project's documents change, it is no
longer served, by either cache or as a stand-in. Its entries are left to age out (TTL, LRU) rather than
cleared: exact keys are hashes, so one project's entries cannot be told from another's without an index
of their own. Every answer, with retrieval or without, is keyed by the project that asked (the API
key's): one project never reads another's answers, nor sees hits its traffic caused; and each project's
entries are bounded on their own, so one project's traffic never evicts another's. The semantic
cache compares questions by meaning but everything else of the request exactly (``answer_variant``): a
close question asked for another length, model, sampling or system prompt is not served an answer made
for different ones (only a failed engine's stand-in is, degraded).
"""

import hashlib
import json
from dataclasses import dataclass, field, replace

from opentelemetry.trace import Tracer

from evallens.service.caches import CacheMetrics, ExactCache, SemanticCache, request_key
from evallens.service.chat.protocol import ChatCompletionRequest
from evallens.service.engines.base import JSONValue, SamplingOptions
from evallens.service.rag.embeddings import Vectors
from evallens.service.rag.generations import KnowledgeBaseGenerations
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
    tenant: str
    project: str  # who asked (the API key's project): whose answers these are, and whose knowledge base
    retrieval: bool  # the answer reads the project's knowledge base
    generation: int  # that knowledge base's generation when the request began (0 without retrieval)
    single_turn: bool  # only a lone question is compared by meaning
    question: str | None
    variant: str = ""  # everything but the question that shapes the answer (``answer_variant``)
    exact: str | None = None
    embedding: Vectors | None = None

    @property
    def knowledge_base(self) -> str | None:
        """The state of the knowledge base the answer reads (project and generation), or None."""
        return knowledge_base_state(self.project, self.generation) if self.retrieval else None

    @property
    def scope(self) -> str:
        """Where the question's semantic entries live (``cache_scope``)."""
        return cache_scope(self.project, self.tenant, self.knowledge_base)


def knowledge_base_state(project: str, generation: int) -> str:
    """``project``'s knowledge base at ``generation`` as one name."""
    return f"{project}@{generation}"


def cache_scope(project: str, tenant: str, knowledge_base: str | None) -> str:
    """Where a question's semantic entries live: per project, per tenant and per mode, and with retrieval
    per state of the knowledge base read (``knowledge_base_state``; None: without retrieval)."""
    # JSON: a project name may hold any separator, and "a|b" + "c" must not be "a" + "b|c"
    return json.dumps([project, tenant, "plain" if knowledge_base is None else "rag", knowledge_base])


def _answer_fields(request: ChatCompletionRequest) -> dict[str, object]:
    """The request's fields besides its messages that shape its answer (model, sampling, length)."""
    body = request.model_dump(include={"model", "temperature", "top_p", "seed", "stop"})
    body["max_tokens"] = request.max_tokens or request.max_completion_tokens
    return body


def answer_variant(request: ChatCompletionRequest) -> str:
    """Hash of what shapes an answer besides its question: the fields the exact key hashes and the
    messages other than the user's (a system prompt). Only answers made with the same are semantic hits."""
    body = _answer_fields(request)
    others = [message for message in request.messages if message.role != "user"]
    body["messages"] = [[message.role, message.content] for message in others]
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def deterministic(request: ChatCompletionRequest, sampling: SamplingOptions) -> bool:
    """Same request, same answer: greedy or seeded, and no length tricks that the cache key misses."""
    if request.min_tokens or request.ignore_eos:
        return False
    return sampling.temperature == 0 or sampling.seed is not None


class AnswerCache:
    """The exact and the semantic cache of chat answers, and the rules of when each is used."""

    def __init__(
        self,
        settings: CacheSettings,
        *,
        metrics: CacheMetrics,
        tracer: Tracer,
        generations: KnowledgeBaseGenerations,
    ) -> None:
        self.exact: ExactCache[CannedAnswer] = ExactCache(settings, metrics=metrics, tracer=tracer)
        self.semantic: SemanticCache[CannedAnswer] = SemanticCache(settings, metrics=metrics, tracer=tracer)
        # the knowledge base's generations the document service bumps: the same object, or a changed
        # document would never end the answers computed from it
        self.generations = generations

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

    def key(
        self,
        *,
        use: bool,
        deterministic: bool,
        tenant: str,
        project: str,
        retrieval: bool,
        single_turn: bool,
        question: str | None,
        variant: str = "",
    ) -> CacheKey:
        """A request's cache key in ``project``'s caches; with ``retrieval``, tied to its knowledge base as
        it is now. Taken before retrieval: an answer stored under generation N read the documents of N or
        later, so a change made while it is computed can hide a fresh answer but never show a stale one."""
        generation = self.generations.current(project) if retrieval else 0
        return CacheKey(
            use, deterministic, tenant, project, retrieval, generation, single_turn, question, variant
        )

    @staticmethod
    def exact_key(request: ChatCompletionRequest, key: CacheKey, *, fingerprint: str) -> str:
        """The exact-cache key: the answer-relevant request fields, the project, the tenant, the mode,
        the state of the knowledge base read and the config."""
        body = _answer_fields(request) | request.model_dump(include={"messages"})
        body["retrieval"] = key.retrieval
        return request_key(
            body,
            project=key.project,
            tenant=key.tenant,
            config_fingerprint=fingerprint,
            knowledge_base=key.knowledge_base or "",
        )

    def get_exact(self, key: CacheKey) -> CannedAnswer | None:
        """The answer stored under the request's exact key."""
        return None if key.exact is None else self.exact.get(key.exact, project=key.project)

    def get_similar(self, key: CacheKey) -> CannedAnswer | None:
        """An answer to a question close enough in meaning (at the cache's threshold)."""
        if key.embedding is None or not self.wants_embedding(key):
            return None
        hit = self.semantic.lookup(key.scope, key.embedding, project=key.project, variant=key.variant)
        return None if hit is None else hit.value

    def wants_fallback(self, key: CacheKey) -> bool:
        """Whether a failed engine may be stood in for by a similar question's answer (any request that
        allows caching, deterministic or not: it is a degraded answer either way)."""
        return key.use and key.single_turn and key.question is not None and self.semantic.enabled

    def fallback(self, key: CacheKey) -> CannedAnswer | None:
        """A stand-in for a failed engine: an answer at the looser fallback threshold, from the knowledge
        base as it is now (it may have changed since the request began), made with any parameters."""
        if key.embedding is None or not self.wants_fallback(key):
            return None
        now = replace(key, generation=self.generations.current(key.project)) if key.retrieval else key
        hit = self.semantic.lookup(
            now.scope, key.embedding, project=key.project, threshold=self.semantic.fallback_threshold
        )
        return None if hit is None else hit.value

    def remember(self, key: CacheKey, answer: CannedAnswer) -> None:
        """Store a complete engine answer of a cacheable request in both caches."""
        if self.wants_exact(key) and key.exact is not None:
            self.exact.put(key.exact, answer, project=key.project)
        if self.wants_embedding(key) and key.embedding is not None and key.question is not None:
            self.semantic.store(
                key.scope, key.question, key.embedding, answer, project=key.project, variant=key.variant
            )
