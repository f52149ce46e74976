"""Rerankers: reorder fused candidates and keep the best ``top_k``. Pluggable by name."""

from collections.abc import Sequence
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
    """Cosine of query and chunk embeddings, blended with the fusion score.

    With the same bi-encoder as the vector leg, pure cosine (``fusion_weight=0``) reproduces the
    vector leg's order and pushes exact keyword matches (model numbers) back out of the top k; a
    share of the normalized fusion score favours them, but RRF scores over a pool span little (rank 30
    is 0.68 of rank 1 at k = 60), so the retriever also keeps each leg's best hit. Embeddings are already
    computed: no model call.
    """

    name = "cosine"

    def __init__(self, fusion_weight: float = 0.0) -> None:
        self.fusion_weight = fusion_weight

    def rerank(self, query: str, candidates: Sequence[Candidate], top_k: int) -> list[ScoredId]:
        """Candidates by blended score, best first."""
        del query
        top_fused = max((item.fused_score for item in candidates), default=0.0) or 1.0
        weight = self.fusion_weight
        scored = [
            (item, (1 - weight) * item.cosine + weight * item.fused_score / top_fused) for item in candidates
        ]
        scored.sort(key=lambda pair: (-pair[1], -pair[0].fused_score))
        return [ScoredId(item.id, score) for item, score in scored[:top_k]]


class FusionOrder:
    """No reranking: keep the fusion order."""

    name = "none"

    def rerank(self, query: str, candidates: Sequence[Candidate], top_k: int) -> list[ScoredId]:
        """The first ``top_k`` candidates as fused."""
        del query
        return [ScoredId(item.id, item.fused_score) for item in list(candidates)[:top_k]]


def create_reranker(name: str, *, fusion_weight: float = 0.0) -> Reranker:
    """The reranker registered under ``name`` (``cosine`` or ``none``)."""
    if name == "cosine":
        return CosineReranker(fusion_weight)
    if name == "none":
        return FusionOrder()
    raise ValueError(f"unknown reranker {name!r}; known: cosine, none")
