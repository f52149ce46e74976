"""Rerankers: reorder fused candidates and keep the best ``top_k``. Pluggable by name."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from evallens.service.rag.store import ScoredId


@dataclass(frozen=True)
class Candidate:
    """A fused candidate: its text, its fusion score and its cosine to the query."""

    id: str
    text: str
    fused_score: float
    cosine: float


class Reranker(Protocol):
    """Orders candidates for a query; ``name`` appears in the config and on the span."""

    name: str

    def rerank(self, query: str, candidates: Sequence[Candidate], top_k: int) -> list[ScoredId]:
        """The best ``top_k`` candidates, best first, with this reranker's score."""
        ...


class CosineReranker:
    """Cosine similarity of query and chunk embeddings (already computed: no extra model call)."""

    name = "cosine"

    def rerank(self, query: str, candidates: Sequence[Candidate], top_k: int) -> list[ScoredId]:
        """Candidates by cosine, ties by fusion score."""
        del query
        ordered = sorted(candidates, key=lambda item: (-item.cosine, -item.fused_score))
        return [ScoredId(item.id, item.cosine) for item in ordered[:top_k]]


class FusionOrder:
    """No reranking: keep the fusion order."""

    name = "none"

    def rerank(self, query: str, candidates: Sequence[Candidate], top_k: int) -> list[ScoredId]:
        """The first ``top_k`` candidates as fused."""
        del query
        return [ScoredId(item.id, item.fused_score) for item in list(candidates)[:top_k]]


RERANKERS: dict[str, Callable[[], Reranker]] = {"cosine": CosineReranker, "none": FusionOrder}


def create_reranker(name: str) -> Reranker:
    """The reranker registered under ``name``."""
    try:
        return RERANKERS[name]()
    except KeyError:
        raise ValueError(f"unknown reranker {name!r}; known: {', '.join(sorted(RERANKERS))}") from None
