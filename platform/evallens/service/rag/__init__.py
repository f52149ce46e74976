"""Retrieval for the reference service: chunking, embeddings, the pgvector store, BM25, fusion,
reranking, compression, the hybrid pipeline, the versioned prompt template and the knowledge base's
generations."""

from evallens.service.rag._spans import documents_attributes
from evallens.service.rag.chunking import TextChunk, chunk_document
from evallens.service.rag.embeddings import Embedder
from evallens.service.rag.fusion import reciprocal_rank_fusion
from evallens.service.rag.generations import KnowledgeBaseGenerations
from evallens.service.rag.keyword import KeywordIndex
from evallens.service.rag.prompt import get_template, system_message
from evallens.service.rag.rerank import Candidate, Reranker, create_reranker
from evallens.service.rag.retriever import HybridRetriever
from evallens.service.rag.store import ScoredId
from evallens.service.rag.types import RetrievalResult, RetrievedChunk

__all__ = [
    "Candidate",
    "Embedder",
    "HybridRetriever",
    "KeywordIndex",
    "KnowledgeBaseGenerations",
    "Reranker",
    "RetrievalResult",
    "RetrievedChunk",
    "ScoredId",
    "TextChunk",
    "chunk_document",
    "create_reranker",
    "documents_attributes",
    "get_template",
    "system_message",
    "reciprocal_rank_fusion",
]
