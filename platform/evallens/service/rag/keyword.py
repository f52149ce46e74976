"""The BM25 keyword leg (``bm25s``), rebuilt from the chunks table whenever the knowledge base changes.

Why bm25s rather than PostgreSQL full-text: ``ts_rank`` has no inverse document frequency and no
term-frequency saturation, so it is not BM25, and its parser splits product model numbers. Here a
model number such as ``TR-4410`` is indexed whole *and* by its parts, so an exact model number
matches strongly. The indexes live in memory, one per project (inverse document frequencies are the
project's own); rebuilding one for thousands of chunks takes milliseconds, and
``knowledge_base_version`` tells every process when a project's changed.
"""

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from evallens.service.rag import store
from evallens.service.rag.store import ScoredId

# Letters and digits of any script ([^\W_]); Chinese and Japanese, written without spaces between words,
# are indexed by overlapping character pairs instead (as Lucene's CJK analyzer does).
_WORD = re.compile(r"[^\W_]+(?:[-_./][^\W_]+)*")
_PART = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
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
    """Lower-cased terms; compounds like ``tr-4410`` are kept whole and also split into parts; a run of
    Chinese or Japanese characters gives its character pairs (a lone character, itself)."""
    terms: list[str] = []
    for run in _CJK.findall(text):
        terms.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    for match in _WORD.finditer(_CJK.sub(" ", text.lower())):
        word = match.group(0)
        parts = _PART.findall(word)
        if len(parts) > 1:
            terms.append(word)
        terms.extend(_normalize(part) for part in parts if part not in STOPWORDS)
    return terms


@dataclass(frozen=True)
class _ProjectIndex:
    """One project's BM25 index, its chunk ids in index order, and the version it was built from."""

    retriever: object | None
    chunk_ids: list[str]
    version: object


class KeywordIndex:
    """In-memory BM25 indexes over chunk texts, one per project (a project's keyword leg never scores
    another project's chunks), each with the knowledge-base version it was built from."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self._k1 = k1
        self._b = b
        self._lock = threading.Lock()
        self._projects: dict[str, _ProjectIndex] = {}

    def num_chunks(self, project: str) -> int:
        """Chunks in ``project``'s index."""
        with self._lock:
            index = self._projects.get(project)
        return 0 if index is None else len(index.chunk_ids)

    def build(self, project: str, chunks: Sequence[tuple[str, str]], version: object = None) -> None:
        """Replace ``project``'s index with one over ``chunks`` ((id, text) pairs)."""
        import bm25s

        retriever = None
        if chunks:
            retriever = bm25s.BM25(k1=self._k1, b=self._b)
            retriever.index([tokenize(text) or ["_empty_"] for _, text in chunks], show_progress=False)
        index = _ProjectIndex(retriever, [chunk_id for chunk_id, _ in chunks], version)
        with self._lock:
            self._projects[project] = index

    def invalidate(self, project: str) -> None:
        """Forget ``project``'s version so its next ``refresh`` rebuilds (call after changing its
        knowledge base)."""
        with self._lock:
            index = self._projects.get(project)
            if index is not None:
                self._projects[project] = _ProjectIndex(index.retriever, index.chunk_ids, None)

    def refresh(self, session: Session, project: str) -> bool:
        """Rebuild ``project``'s index from the chunks table if its knowledge base changed since the last
        build."""
        version = store.knowledge_base_version(session, project)
        with self._lock:
            index = self._projects.get(project)
        if index is not None and version == index.version:
            return False
        self.build(project, store.all_chunk_texts(session, project), version)
        return True

    def search(self, project: str, query: str, limit: int) -> list[ScoredId]:
        """The ``limit`` best chunks of ``project`` for ``query`` by BM25, best first; chunks scoring 0 are
        left out."""
        terms = tokenize(query)
        with self._lock:
            index = self._projects.get(project)
        if index is None or index.retriever is None or not terms or not index.chunk_ids:
            return []
        chunk_ids = index.chunk_ids
        get_scores: Callable[[list[str]], Sequence[float]] = index.retriever.get_scores  # type: ignore[attr-defined]
        scores = get_scores(terms)
        ranked = sorted(range(len(chunk_ids)), key=lambda position: (-scores[position], position))
        return [
            ScoredId(chunk_ids[position], float(scores[position]))
            for position in ranked[:limit]
            if scores[position] > 0
        ]
