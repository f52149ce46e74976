"""Hybrid retrieval: vector leg + BM25 leg -> Reciprocal Rank Fusion -> rerank -> compression.

The top k keep each leg's best hit, whatever fusion and reranking make of it, and hold at most
``max_chunks_per_document`` chunks of one document (why: ``fusion``).

Retrieval reads one project's knowledge base: every leg, and the chunks fetched for reranking, are
that project's only.

Each stage is a span (names in ``evallens.telemetry.attributes``): ``retrieval`` with children
``retrieval.vector``, ``retrieval.keyword``, ``retrieval.fuse``, ``retrieval.rerank``,
``retrieval.compress``. The work is blocking (PostgreSQL, torch) and runs in a worker thread.
"""

import asyncio
from typing import Any

import numpy as np
from opentelemetry import trace
from sqlalchemy.orm import Session, sessionmaker

from evallens.service.rag import store
from evallens.service.rag._spans import documents_attributes, leg_attributes
from evallens.service.rag.compress import Compressor
from evallens.service.rag.embeddings import Embedder, Vectors
from evallens.service.rag.fusion import reciprocal_rank_fusion, top_k_keeping
from evallens.service.rag.keyword import KeywordIndex
from evallens.service.rag.rerank import Candidate, Reranker, create_reranker
from evallens.service.rag.store import ScoredId
from evallens.service.rag.types import RetrievalResult, RetrievedChunk
from evallens.settings import RagSettings
from evallens.telemetry import attributes as attr
from evallens.telemetry.attributes import DEFAULT_PROJECT

TRACER_NAME = "evallens.service.rag"


class HybridRetriever:
    """Retrieves context for a question from the knowledge base; ``config()`` lists every knob."""

    def __init__(
        self,
        settings: RagSettings,
        *,
        embedder: Embedder,
        session_factory: sessionmaker[Session],
        keyword_index: KeywordIndex,
        reranker: Reranker | None = None,
        tracer: trace.Tracer | None = None,
    ) -> None:
        self.settings = settings
        self._embedder = embedder
        self._sessions = session_factory
        self._keywords = keyword_index
        self._reranker = reranker or create_reranker(
            settings.rerank, fusion_weight=settings.rerank_fusion_weight
        )
        self._compressor = Compressor(
            embedder,
            min_similarity=settings.compress_min_similarity,
            token_budget=settings.context_token_budget,
        )
        self._tracer = tracer or trace.get_tracer(TRACER_NAME)

    @property
    def keyword_index(self) -> KeywordIndex:
        """The in-memory BM25 index of the keyword leg."""
        return self._keywords

    def config(self) -> dict[str, Any]:
        """Every retrieval parameter that changes answers, for ``/v1/config`` and its fingerprint."""
        s = self.settings
        return {
            "retrieval_enabled": s.retrieval_enabled,
            "embedding_model": (
                s.embedding_model_path.name if s.embedding_model_path else "all-MiniLM-L6-v2"
            ),
            "chunk_tokens": s.chunk_tokens,
            "overlap": s.overlap,
            "top_k": s.top_k,
            # unconditional (fusion.top_k_keeping), listed so a change to the rule changes the fingerprint
            "top_k_keeps_leg_bests": True,
            "max_chunks_per_document": s.max_chunks_per_document,
            "fusion": s.fusion,
            "rrf_k": s.rrf_k,
            "candidates_per_leg": s.candidates_per_leg,
            "rerank": self._reranker.name,
            "rerank_candidates": s.rerank_candidates,
            "rerank_fusion_weight": s.rerank_fusion_weight,
            "compress": s.compress,
            "compress_min_similarity": s.compress_min_similarity,
            "context_token_budget": s.context_token_budget,
            "prompt_template": s.prompt_template,
        }

    def warm_up(self) -> None:
        """Load the embedding model, build every project's keyword index and touch the vector index
        (blocking), so the first question pays none of it."""
        embedding = self._embedder.embed_one("warm up")
        with self._sessions() as session:
            for project in store.projects_with_documents(session):
                self._keywords.refresh(session, project)
            store.vector_search(session, DEFAULT_PROJECT, embedding, 1)

    async def retrieve(
        self,
        query: str,
        *,
        project: str,
        query_embedding: Vectors | None = None,
        top_k: int | None = None,
    ) -> RetrievalResult:
        """Retrieve for ``query`` from ``project``'s knowledge base off the event loop (pass
        ``query_embedding`` if already computed)."""
        return await asyncio.to_thread(
            self.retrieve_sync, query, project=project, query_embedding=query_embedding, top_k=top_k
        )

    def retrieve_sync(
        self,
        query: str,
        *,
        project: str,
        query_embedding: Vectors | None = None,
        top_k: int | None = None,
    ) -> RetrievalResult:
        """The blocking retrieval pipeline over ``project``'s knowledge base."""
        s = self.settings
        top_k = top_k or s.top_k
        with self._tracer.start_as_current_span(attr.SPAN_RETRIEVAL) as span:
            span.set_attributes(
                {
                    attr.GEN_AI_OPERATION_NAME: attr.OPERATION_RETRIEVAL,
                    attr.OPENINFERENCE_SPAN_KIND: attr.OPENINFERENCE_KIND_RETRIEVER,
                    attr.RETRIEVAL_FUSION: s.fusion,
                    attr.RETRIEVAL_TOP_K: top_k,
                    attr.RETRIEVAL_QUERY_LENGTH: len(query),
                }
            )
            embedding = query_embedding if query_embedding is not None else self._embedder.embed_one(query)
            with self._sessions() as session:
                vector_hits = self._vector_leg(session, project, embedding) if s.fusion != "keyword" else []
                keyword_hits = self._keyword_leg(session, project, query) if s.fusion != "vector" else []
                fused = self._fuse(vector_hits, keyword_hits)
                leg_bests = [leg[0].id for leg in (vector_hits, keyword_hits) if leg]
                chunks, best = self._rerank(session, project, query, embedding, fused, leg_bests, top_k)
            if s.compress and chunks:
                chunks = self._compress(embedding, chunks)
            result = RetrievalResult(
                query=query,
                chunks=chunks,
                vector_hits=vector_hits,
                keyword_hits=keyword_hits,
                fused=fused,
                best_relevance=best,
                query_embedding=embedding,
            )
            span.set_attributes(documents_attributes([ScoredId(c.id, c.score) for c in chunks]))
            span.set_attribute(attr.RETRIEVAL_NUM_RESULTS, len(chunks))
            if best is not None:
                span.set_attribute(attr.RETRIEVAL_BEST_RELEVANCE, best)
            return result

    def _vector_leg(self, session: Session, project: str, embedding: Vectors) -> list[ScoredId]:
        with self._tracer.start_as_current_span(attr.SPAN_RETRIEVAL_VECTOR) as span:
            hits = store.vector_search(session, project, embedding, self.settings.candidates_per_leg)
            span.set_attributes(leg_attributes("vector", hits))
            return hits

    def _keyword_leg(self, session: Session, project: str, query: str) -> list[ScoredId]:
        with self._tracer.start_as_current_span(attr.SPAN_RETRIEVAL_KEYWORD) as span:
            self._keywords.refresh(session, project)
            hits = self._keywords.search(project, query, self.settings.candidates_per_leg)
            span.set_attributes(leg_attributes("keyword", hits))
            return hits

    def _fuse(self, vector_hits: list[ScoredId], keyword_hits: list[ScoredId]) -> list[ScoredId]:
        with self._tracer.start_as_current_span(attr.SPAN_RETRIEVAL_FUSE) as span:
            legs = [[hit.id for hit in leg] for leg in (vector_hits, keyword_hits) if leg]
            fused = reciprocal_rank_fusion(legs, k=self.settings.rrf_k)
            span.set_attributes(leg_attributes("fused", fused))
            return fused

    def _rerank(
        self,
        session: Session,
        project: str,
        query: str,
        embedding: Vectors,
        fused: list[ScoredId],
        leg_bests: list[str],
        top_k: int,
    ) -> tuple[list[RetrievedChunk], float | None]:
        with self._tracer.start_as_current_span(attr.SPAN_RETRIEVAL_RERANK) as span:
            pool = [hit.id for hit in fused[: self.settings.rerank_candidates]]
            pool += [chunk_id for chunk_id in leg_bests if chunk_id not in pool]
            fused_scores = {hit.id: hit.score for hit in fused}
            rows = store.fetch_chunks(session, project, pool)
            vectors = store.fetch_embeddings(session, project, rows)
            cosines = {chunk_id: float(np.dot(vector, embedding)) for chunk_id, vector in vectors.items()}
            candidates = [
                Candidate(chunk_id, rows[chunk_id].text, fused_scores[chunk_id], cosines[chunk_id])
                for chunk_id in pool
                if chunk_id in rows
            ]
            reranked = self._reranker.rerank(query, candidates, len(candidates))
            ranked = top_k_keeping(
                reranked,
                leg_bests,
                top_k,
                document_of={chunk_id: row.document_id for chunk_id, row in rows.items()},
                max_per_document=self.settings.max_chunks_per_document,
            )
            span.set_attributes(
                {
                    attr.OPENINFERENCE_SPAN_KIND: attr.OPENINFERENCE_KIND_RERANKER,
                    attr.RERANK_METHOD: self._reranker.name,
                    attr.RERANK_NUM_CANDIDATES: len(candidates),
                    **documents_attributes(ranked),
                }
            )
            chunks = [
                RetrievedChunk(
                    id=hit.id,
                    document_id=rows[hit.id].document_id,
                    text=rows[hit.id].text,
                    num_tokens=rows[hit.id].num_tokens,
                    score=hit.score,
                    cosine=cosines[hit.id],
                )
                for hit in ranked
            ]
            best = max(cosines.values(), default=None)
            return chunks, best

    def _compress(self, embedding: Vectors, chunks: list[RetrievedChunk]) -> list[RetrievedChunk]:
        with self._tracer.start_as_current_span(attr.SPAN_RETRIEVAL_COMPRESS) as span:
            compressed, stats = self._compressor.compress(embedding, chunks)
            span.set_attributes(
                {
                    attr.COMPRESS_TOKENS_BEFORE: stats.tokens_before,
                    attr.COMPRESS_TOKENS_AFTER: stats.tokens_after,
                    attr.COMPRESS_SENTENCES_DROPPED: stats.sentences_dropped,
                }
            )
            return compressed
