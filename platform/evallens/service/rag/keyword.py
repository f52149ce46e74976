"""The BM25 keyword leg (``bm25s``), rebuilt from the chunks table whenever the knowledge base changes.

Why bm25s rather than PostgreSQL full-text: ``ts_rank`` has no inverse document frequency and no
term-frequency saturation, so it is not BM25, and its parser splits product model numbers. Here a
model number such as ``TR-4410`` is indexed whole *and* by its parts, so an exact model number
matches strongly. The index lives in memory; rebuilding it for thousands of chunks takes
milliseconds, and ``knowledge_base_version`` tells every process when to rebuild.
"""

import re
import threading
from collections.abc import Callable, Sequence

from sqlalchemy.orm import Session

from evallens.service.rag import store
from evallens.service.rag.store import ScoredId

_WORD = re.compile(r"[a-z0-9]+(?:[-_./][a-z0-9]+)*")
_PART = re.compile(r"[a-z0-9]+")
_STOPWORDS_TEXT = (
    "a an and are as at be but by can do does for from has have how i if in is it its my of on "
    "or our so than that the their then there these this to was we were what when where which "
    "who why will with you your "
)
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


def _normalize(word: str) -> str:
    # A light plural fold ("returns" -> "return"); bm25s ships no stemmer without PyStemmer.
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss") and word.isalpha():
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-cased terms; compounds like ``tr-4410`` are kept whole and also split into parts."""
    terms: list[str] = []
    for match in _WORD.finditer(text.lower()):
        word = match.group(0)
        parts = _PART.findall(word)
        if len(parts) > 1:
            terms.append(word)
        terms.extend(_normalize(part) for part in parts if part not in STOPWORDS)
    return terms


class KeywordIndex:
    """An in-memory BM25 index over chunk texts, with the knowledge-base version it was built from."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self._k1 = k1
        self._b = b
        self._lock = threading.Lock()
        self._retriever: object | None = None
        self._chunk_ids: list[str] = []
        self._version: object = None

    @property
    def num_chunks(self) -> int:
        """Chunks in the index."""
        return len(self._chunk_ids)

    def build(self, chunks: Sequence[tuple[str, str]], version: object = None) -> None:
        """Replace the index with one over ``chunks`` ((id, text) pairs)."""
        import bm25s

        retriever = None
        if chunks:
            retriever = bm25s.BM25(k1=self._k1, b=self._b)
            retriever.index([tokenize(text) or ["_empty_"] for _, text in chunks], show_progress=False)
        with self._lock:
            self._retriever = retriever
            self._chunk_ids = [chunk_id for chunk_id, _ in chunks]
            self._version = version

    def invalidate(self) -> None:
        """Forget the version so the next ``refresh`` rebuilds (call after changing the knowledge base)."""
        with self._lock:
            self._version = None

    def refresh(self, session: Session) -> bool:
        """Rebuild from the chunks table if the knowledge base changed since the last build."""
        version = store.knowledge_base_version(session)
        if version == self._version:
            return False
        self.build(store.all_chunk_texts(session), version)
        return True

    def search(self, query: str, limit: int) -> list[ScoredId]:
        """The ``limit`` best chunks for ``query`` by BM25, best first; chunks scoring 0 are left out."""
        terms = tokenize(query)
        with self._lock:
            retriever, chunk_ids = self._retriever, self._chunk_ids
        if retriever is None or not terms or not chunk_ids:
            return []
        get_scores: Callable[[list[str]], Sequence[float]] = retriever.get_scores  # type: ignore[attr-defined]
        scores = get_scores(terms)
        ranked = sorted(range(len(chunk_ids)), key=lambda index: (-scores[index], index))
        return [
            ScoredId(chunk_ids[index], float(scores[index])) for index in ranked[:limit] if scores[index] > 0
        ]
