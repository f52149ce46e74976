"""Knowledge-base generations: one counter per project, bumped whenever the project's documents change.

An answer computed with retrieval rests on the knowledge base as it was when the request began; the
answer caches key such answers by the project's generation, so that once a document is changed or
deleted the answers computed before are no longer served (they age out of the caches).

The counters live in this process. That is enough for the reference service, one process (uvicorn)
through which every upsert and delete passes. What they cannot see: a second service process sharing
the database, whose document changes bump its own counters only (``store.knowledge_base_version`` is
the cross-process view the keyword index uses, at the price of a query per request).
"""

import threading


class KnowledgeBaseGenerations:
    """Per-project generation of the knowledge base: 0 until the project's first change."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generations: dict[str, int] = {}

    def current(self, project: str) -> int:
        """``project``'s generation now."""
        with self._lock:
            return self._generations.get(project, 0)

    def bump(self, project: str) -> int:
        """Mark ``project``'s knowledge base as changed (call after the change is committed, so that a
        request that sees the new generation also reads the new documents); the new generation."""
        with self._lock:
            generation = self._generations.get(project, 0) + 1
            self._generations[project] = generation
            return generation
