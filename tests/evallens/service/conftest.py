"""Fixtures shared by the RAG-half tests: the packaged embedding model, sessions, a knowledge base."""

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from evallens.db import create_db_engine, create_session_factory
from evallens.service.documents import DocumentService
from evallens.service.rag import Embedder, KeywordIndex
from evallens.settings import RagSettings


def span_attributes(span: Any) -> dict[str, Any]:
    """A finished span's attributes as a plain dict (the SDK types them as an optional mapping)."""
    return dict(span.attributes or {})


class RecordingEmbedder(Embedder):
    """The real embedder, remembering every text it was asked to embed."""

    def __init__(self, settings: RagSettings) -> None:
        super().__init__(settings)
        self.embedded: list[str] = []

    def embed(self, texts: list[str]):
        self.embedded.extend(texts)
        return super().embed(texts)


@pytest.fixture(scope="session")
def rag_settings() -> RagSettings:
    return RagSettings()


@pytest.fixture(scope="session")
def embedder(rag_settings: RagSettings) -> RecordingEmbedder:
    return RecordingEmbedder(rag_settings)


@pytest.fixture
def session_factory(database_url: str) -> Iterator[sessionmaker[Session]]:
    engine = create_db_engine(database_url)
    yield create_session_factory(engine)
    engine.dispose()


@pytest.fixture
def keyword_index() -> KeywordIndex:
    return KeywordIndex()


@pytest.fixture
def document_service(
    rag_settings: RagSettings,
    embedder: RecordingEmbedder,
    session_factory: sessionmaker[Session],
    keyword_index: KeywordIndex,
) -> DocumentService:
    return DocumentService(
        rag_settings, embedder=embedder, session_factory=session_factory, keyword_index=keyword_index
    )
