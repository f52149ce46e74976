"""Context compression: drop sentences unrelated to the question, then fit a token budget."""

from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np

from evallens.service.rag.chunking import split_sentences
from evallens.service.rag.embeddings import Embedder, Vectors
from evallens.service.rag.types import RetrievedChunk

SENTENCE_CACHE_SIZE = 20_000


@dataclass(frozen=True)
class CompressionStats:
    """What compression removed."""

    tokens_before: int
    tokens_after: int
    sentences_dropped: int


@dataclass(frozen=True)
class _Sentence:
    text: str
    similarity: float
    num_tokens: int


class Compressor:
    """Keeps, per chunk, its heading line and the sentences whose cosine to the question passes a bar.

    The best sentence of every chunk is always kept (the chunk was ranked relevant). Chunks are then
    taken in rank order until ``token_budget``; a chunk that does not fit whole keeps its most similar
    sentences that do. Sentence embeddings are cached, since the same chunks come back often.
    """

    def __init__(self, embedder: Embedder, *, min_similarity: float, token_budget: int) -> None:
        self._embedder = embedder
        self._min_similarity = min_similarity
        self._token_budget = token_budget
        self._cache: OrderedDict[str, Vectors] = OrderedDict()

    def _embed_sentences(self, sentences: list[str]) -> Vectors:
        missing = list(dict.fromkeys(s for s in sentences if s not in self._cache))
        for sentence, vector in zip(missing, self._embedder.embed(missing), strict=True):
            self._cache[sentence] = vector
            if len(self._cache) > SENTENCE_CACHE_SIZE:
                self._cache.popitem(last=False)
        if not sentences:
            return np.zeros((0, 1), dtype=np.float32)
        return np.stack([self._cache[s] for s in sentences])

    def compress(
        self, query_embedding: Vectors, chunks: list[RetrievedChunk]
    ) -> tuple[list[RetrievedChunk], CompressionStats]:
        """Compressed copies of ``chunks`` (same order; chunks that no longer fit are left out)."""
        count = self._embedder.count_tokens
        split = [self._split(chunk.text) for chunk in chunks]
        flat = [sentence for _, sentences in split for sentence in sentences]
        similarities = self._embed_sentences(flat) @ query_embedding if flat else np.zeros(0)
        position = 0
        kept_chunks: list[RetrievedChunk] = []
        budget = self._token_budget
        tokens_before = sum(chunk.num_tokens for chunk in chunks)
        dropped = 0
        for chunk, (header, sentences) in zip(chunks, split, strict=True):
            scored = [
                _Sentence(text, float(similarities[position + index]), count(text))
                for index, text in enumerate(sentences)
            ]
            position += len(sentences)
            best = max((s.similarity for s in scored), default=0.0)
            relevant = [s for s in scored if s.similarity >= self._min_similarity or s.similarity == best]
            header_tokens = count(header) + 1 if header else 0
            fitting = self._fit(relevant, budget - header_tokens)
            dropped += len(scored) - len(fitting)
            if not fitting:
                break
            body = " ".join(s.text for s in fitting)
            text = f"{header}\n{body}" if header else body
            used = header_tokens + sum(s.num_tokens for s in fitting)
            budget -= used
            kept_chunks.append(replace(chunk, text=text, num_tokens=used))
        tokens_after = sum(chunk.num_tokens for chunk in kept_chunks)
        return kept_chunks, CompressionStats(tokens_before, tokens_after, dropped)

    @staticmethod
    def _split(text: str) -> tuple[str, list[str]]:
        # Chunks start with their heading path and one newline; paragraphs are split by two.
        first, newline, rest = text.partition("\n")
        header, body = (first, rest) if newline and not rest.startswith("\n") else ("", text)
        sentences = [s for paragraph in body.split("\n\n") for s in split_sentences(paragraph)]
        return header, sentences

    @staticmethod
    def _fit(sentences: list[_Sentence], budget: int) -> list[_Sentence]:
        """The most similar sentences that fit in ``budget``, in their original order."""
        if sum(s.num_tokens for s in sentences) <= budget:
            return sentences
        chosen: set[int] = set()
        used = 0
        for index in sorted(range(len(sentences)), key=lambda i: -sentences[i].similarity):
            if used + sentences[index].num_tokens <= budget:
                chosen.add(index)
                used += sentences[index].num_tokens
        return [sentences[index] for index in sorted(chosen)]
