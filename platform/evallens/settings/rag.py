"""Settings of the reference service's RAG half: retrieval, caches and guards.

Every knob that changes answers is listed by the components' ``config()`` so that ``/v1/config`` and
its fingerprint change with it.
"""

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings

from evallens.settings._base import settings_config

Fusion = Literal["rrf", "vector", "keyword"]
Rerank = Literal["cosine", "none"]


class RagSettings(BaseSettings):
    """Chunking, embeddings and hybrid retrieval (vector + BM25, fusion, rerank, compression)."""

    model_config = settings_config()

    retrieval_enabled: bool = Field(
        default=True, description="Retrieve context for chat requests (a request can still turn it off)."
    )
    embedding_model_path: Path | None = Field(
        default=None,
        description="Directory of a sentence-transformers model; unset: the packaged all-MiniLM-L6-v2.",
    )
    embedding_batch_size: int = Field(default=32, ge=1, le=1024, description="Texts embedded per batch.")
    embedding_max_query_chars: int = Field(
        default=2000,
        ge=64,
        description=(
            "Most characters of a question sent to the embedding model (all-MiniLM-L6-v2 reads 256 "
            "word pieces, about 1,000 characters): the rest is cut, so no request sets the work."
        ),
    )
    chunk_tokens: int = Field(
        default=200,
        ge=32,
        le=256,
        description="Most tokens in one chunk (embedding model's tokenizer; all-MiniLM-L6-v2 reads 256).",
    )
    overlap: float = Field(
        default=0.12, ge=0.0, le=0.5, description="Share of chunk_tokens repeated between consecutive chunks."
    )
    top_k: int = Field(default=5, ge=1, le=50, description="Chunks handed to the prompt after reranking.")
    max_chunks_per_document: int = Field(
        default=0,
        ge=0,
        le=50,
        description=(
            "Most chunks of one document among the top k (0, the default: no cap); more only when too "
            "few other documents are among the candidates, or when each leg's best hit is kept."
        ),
    )
    fusion: Fusion = Field(
        default="rrf",
        description="How the legs combine: rrf (hybrid, Reciprocal Rank Fusion), vector only, keyword only.",
    )
    rrf_k: int = Field(default=60, ge=1, description="The k constant of Reciprocal Rank Fusion.")
    candidates_per_leg: int = Field(
        default=50, ge=1, le=500, description="Chunks each retrieval leg returns before fusion."
    )
    rerank: Rerank = Field(
        default="cosine", description="Reranker of the fused candidates: cosine (query vs chunk), none."
    )
    rerank_candidates: int = Field(
        default=30, ge=1, le=200, description="Fused candidates the reranker reorders (20-50 is usual)."
    )
    rerank_fusion_weight: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description="Share of the normalized fusion score in the cosine reranker (0: pure cosine).",
    )
    compress: bool = Field(
        default=True, description="Drop sentences unrelated to the question from the retrieved chunks."
    )
    compress_min_similarity: float = Field(
        default=0.15, ge=-1.0, le=1.0, description="Cosine of a sentence to the question below which it goes."
    )
    context_token_budget: int = Field(
        default=800, ge=16, description="Most tokens of retrieved context put into the prompt."
    )
    prompt_template: str = Field(default="rag-v1", description="Version of the RAG prompt template.")


class CacheSettings(BaseSettings):
    """The exact and semantic answer caches."""

    model_config = settings_config()

    cache_exact_enabled: bool = Field(default=True, description="Answer repeated identical requests.")
    cache_exact_ttl_s: float = Field(default=3600.0, gt=0, description="Seconds an exact-cache entry lives.")
    cache_exact_max_entries: int = Field(
        default=10_000,
        ge=1,
        description=(
            "Exact-cache entries kept per project (its least recently used evicted): one project's "
            "traffic never evicts another's. The cache holds at most this many times the number of "
            "projects (the API keys' projects; one without auth)."
        ),
    )
    cache_semantic_enabled: bool = Field(
        default=True, description="Answer questions whose embedding is close to an answered one."
    )
    cache_semantic_threshold: float = Field(
        default=0.95, ge=-1.0, le=1.0, description="Cosine similarity at or above which the cache answers."
    )
    cache_semantic_fallback_threshold: float = Field(
        default=0.90,
        ge=-1.0,
        le=1.0,
        description="Looser similarity accepted when the engine is failing (degraded answer).",
    )
    cache_semantic_ttl_s: float = Field(
        default=3600.0, gt=0, description="Seconds a semantic-cache entry lives."
    )
    cache_semantic_max_entries: int = Field(
        default=1000,
        ge=1,
        description="Semantic-cache entries kept per tenant of a project (oldest use evicted).",
    )
    cache_semantic_max_total_entries: int = Field(
        default=10_000,
        ge=1,
        description=(
            "Semantic-cache entries kept per project across all its tenants (the project's oldest stored "
            "evicted): tenants are named by a request header, so their number is the clients' choice, "
            "and one project's traffic never evicts another's. The cache holds at most this many times "
            "the number of projects (the API keys' projects; one without auth)."
        ),
    )


class GuardSettings(BaseSettings):
    """Retrieval's time budget, circuit breakers, and the scope and safety guards.

    The engine's budgets are ``ServiceSettings.ttft_budget_s`` / ``total_budget_s`` (one knob each).
    """

    model_config = settings_config()

    retrieval_budget_ms: float = Field(
        default=200.0, gt=0, description="Retrieval time budget; over it the answer goes without context."
    )
    breaker_window_s: float = Field(
        default=30.0, gt=0, description="Sliding window over which a breaker measures the error rate."
    )
    breaker_min_calls: int = Field(
        default=10, ge=1, description="Calls in the window before a breaker may open."
    )
    breaker_error_rate: float = Field(
        default=0.5, gt=0, le=1, description="Error rate in the window at or above which a breaker opens."
    )
    breaker_open_s: float = Field(
        default=15.0, gt=0, description="Seconds a breaker stays open before letting a probe through."
    )
    breaker_half_open_probes: int = Field(
        default=1, ge=1, description="Successful probes in half-open state that close a breaker."
    )
    scope_guard_enabled: bool = Field(
        default=True, description="Decline questions the knowledge base has nothing relevant for."
    )
    scope_min_relevance: float = Field(
        default=0.30,
        ge=-1.0,
        le=1.0,
        description="Best retrieved chunk's cosine to the question below which the service declines.",
    )
    safety_guard_enabled: bool = Field(
        default=True,
        description="Refuse prompt injection, requests for other people's personal data, and abuse.",
    )
