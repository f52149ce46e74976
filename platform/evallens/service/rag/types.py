"""What retrieval returns: the chunks for the prompt, and every leg's ranking for the span."""

from dataclasses import dataclass, field

from evallens.service.rag.embeddings import Vectors
from evallens.service.rag.store import ScoredId


@dataclass(frozen=True)
class RetrievedChunk:
    """A chunk handed to the prompt: its text (compressed if enabled), score and cosine to the question."""

    id: str
    document_id: str
    text: str
    num_tokens: int
    score: float
    cosine: float


@dataclass(frozen=True)
class RetrievalResult:
    """Result of one retrieval, with the per-leg rankings for span attributes and evals."""

    query: str
    chunks: list[RetrievedChunk]
    vector_hits: list[ScoredId] = field(default_factory=list)
    keyword_hits: list[ScoredId] = field(default_factory=list)
    fused: list[ScoredId] = field(default_factory=list)
    best_relevance: float | None = None
    query_embedding: Vectors | None = None

    @property
    def chunk_ids(self) -> list[str]:
        """Ids of the chunks handed to the prompt, best first."""
        return [chunk.id for chunk in self.chunks]

    @property
    def document_ids(self) -> list[str]:
        """Distinct document ids of those chunks, in rank order."""
        return list(dict.fromkeys(chunk.document_id for chunk in self.chunks))
