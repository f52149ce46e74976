"""Question embeddings kept in PostgreSQL per embedding model, so that a text is embedded once, ever."""

import hashlib
from collections.abc import Iterable

import numpy as np
from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from evallens.db.models import QuestionEmbedding


def text_key(text: str) -> str:
    """The sha256 (hex) a text is stored under."""
    return hashlib.sha256(text.encode()).hexdigest()


class QuestionVectors:
    """The vectors ``embedding_model`` gave questions, read in one query per call and written once,
    by ``save``, in the caller's transaction (the caller commits)."""

    def __init__(self, session: Session, embedding_model: str) -> None:
        self._session = session
        self._embedding_model = embedding_model
        self._new: dict[str, np.ndarray] = {}

    def load(self, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored vectors of those ``texts`` a row holds: text -> float32 unit vector."""
        by_key = {text_key(text): text for text in texts}
        if not by_key:
            return {}
        rows = self._session.execute(
            select(QuestionEmbedding.text_sha256, QuestionEmbedding.vector).where(
                QuestionEmbedding.embedding_model == self._embedding_model,
                QuestionEmbedding.text_sha256.in_(sorted(by_key)),
            )
        )
        return {by_key[key]: np.frombuffer(vector, "<f4") for key, vector in rows}

    def add(self, vectors: dict[str, np.ndarray]) -> None:
        """Keep freshly embedded vectors for ``save``."""
        self._new.update(vectors)

    def save(self) -> None:
        """Store the vectors added since the last save; a text another writer stored first keeps its row.

        One statement with the keys in order, so that two transactions storing the same texts wait
        for each other instead of deadlocking."""
        keyed = sorted(
            ((text_key(text), vector) for text, vector in self._new.items()), key=lambda pair: pair[0]
        )
        rows = [
            {
                "embedding_model": self._embedding_model,
                "text_sha256": key,
                "vector": np.asarray(vector, "<f4").tobytes(),
            }
            for key, vector in keyed
        ]
        self._new = {}
        if rows:
            self._session.execute(
                insert(QuestionEmbedding)
                .values(rows)
                .on_conflict_do_nothing(index_elements=["embedding_model", "text_sha256"])
            )
