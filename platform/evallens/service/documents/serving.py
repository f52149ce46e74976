"""Knowledge-base logic: chunk, embed only what changed, write, and tell the keyword leg."""

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from opentelemetry import trace
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.errors import POSTGRES_AWAY_RETRY_AFTER_S, database_unavailable, driver_error
from evallens.service.documents.protocol import (
    DeleteResult,
    DocumentIn,
    DocumentList,
    DocumentOut,
    UpsertResult,
)
from evallens.service.errors import DatabaseAway
from evallens.service.rag import store
from evallens.service.rag.chunking import chunk_document
from evallens.service.rag.embeddings import Embedder
from evallens.service.rag.generations import KnowledgeBaseGenerations
from evallens.service.rag.keyword import KeywordIndex
from evallens.settings import RagSettings
from evallens.telemetry import attributes as attr

TRACER_NAME = "evallens.service.documents"
P = ParamSpec("P")
T = TypeVar("T")

logger = logging.getLogger(__name__)


def content_hash(document: DocumentIn) -> str:
    """Hash of everything stored about a document."""
    payload = json.dumps([document.title, document.text, document.metadata], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class DocumentService:
    """Upserts, deletes and lists one project's knowledge-base documents; each call is one transaction.
    A document's identity is (project, id): another project's document of the same id is never read,
    changed or counted. Every committed change bumps the project's generation in ``generations`` (the
    answer caches' view of the knowledge base: pass the one they read)."""

    def __init__(
        self,
        settings: RagSettings,
        *,
        embedder: Embedder,
        session_factory: sessionmaker[Session],
        keyword_index: KeywordIndex,
        generations: KnowledgeBaseGenerations,
        tracer: trace.Tracer | None = None,
    ) -> None:
        self._settings = settings
        self._embedder = embedder
        self._sessions = session_factory
        self._keywords = keyword_index
        self._generations = generations
        self._tracer = tracer or trace.get_tracer(TRACER_NAME)

    async def upsert(self, project: str, document: DocumentIn) -> UpsertResult:
        """Add or replace a document of ``project``; unchanged chunks keep their embeddings."""
        return await in_thread(self.upsert_sync, project, document)

    async def delete(self, project: str, document_id: str) -> DeleteResult:
        """Delete a document of ``project`` and its chunks."""
        return await in_thread(self.delete_sync, project, document_id)

    async def list(self, project: str) -> DocumentList:
        """Every document of ``project``, by id."""
        return await in_thread(self.list_sync, project)

    def upsert_sync(self, project: str, document: DocumentIn) -> UpsertResult:
        """Blocking ``upsert``."""
        with self._tracer.start_as_current_span("documents.upsert") as span:
            span.set_attribute(attr.KB_DOCUMENT_ID, document.id)
            chunks = chunk_document(
                document.id,
                document.text,
                count_tokens=self._embedder.count_tokens,
                chunk_tokens=self._settings.chunk_tokens,
                overlap=self._settings.overlap,
                project=project,
            )
            digest = content_hash(document)
            with self._sessions() as session, session.begin():
                store.lock_document(session, project, document.id)
                existing = store.get_document(session, project, document.id)
                plan = store.plan_reindex(store.chunk_ordinals(session, project, document.id), chunks)
                if existing is not None and existing.content_hash == digest and not plan.changes_chunks:
                    status = "unchanged"
                else:
                    status = "created" if existing is None else "updated"
                    embeddings = self._embedder.embed([chunk.text for chunk in plan.to_embed])
                    store.write_document(
                        session,
                        project=project,
                        document_id=document.id,
                        title=document.title,
                        body=document.text,
                        content_hash=digest,
                        metadata=document.metadata,
                    )
                    store.apply_reindex(session, project, document.id, plan, embeddings)
            if status != "unchanged":  # after the commit: see ``KnowledgeBaseGenerations.bump``
                self._keywords.invalidate(project)
                span.set_attribute(attr.KB_GENERATION, self._generations.bump(project))
            span.set_attributes(
                {
                    attr.KB_NUM_CHUNKS_EMBEDDED: len(plan.to_embed),
                    attr.KB_NUM_CHUNKS_DELETED: len(plan.to_delete),
                }
            )
            return UpsertResult(
                id=document.id,
                status=status,
                num_chunks=len(chunks),
                num_chunks_embedded=len(plan.to_embed) if status != "unchanged" else 0,
                num_chunks_deleted=len(plan.to_delete) if status != "unchanged" else 0,
            )

    def delete_sync(self, project: str, document_id: str) -> DeleteResult:
        """Blocking ``delete``."""
        with self._sessions() as session, session.begin():
            store.lock_document(session, project, document_id)
            deleted = store.delete_document(session, project, document_id)
        if deleted:
            self._keywords.invalidate(project)
            self._generations.bump(project)
        return DeleteResult(id=document_id, deleted=deleted)

    def list_sync(self, project: str) -> DocumentList:
        """Blocking ``list``."""
        with self._sessions() as session:
            documents = store.list_documents(session, project)
        return DocumentList(
            data=[
                DocumentOut(
                    id=doc.id,
                    title=doc.title,
                    content_hash=doc.content_hash,
                    metadata=doc.metadata,
                    num_chunks=doc.num_chunks,
                    updated_at=doc.updated_at,
                    metadata_too_deep=doc.metadata_too_deep,
                )
                for doc in documents
            ]
        )


async def in_thread(work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``work`` in a worker thread, off the event loop; PostgreSQL unreachable, gone mid-transaction or not
    answering in time (a statement, lock or pool timeout) is ``DatabaseAway`` (a 503 with Retry-After), the
    rule the API key check follows too; any other database error stays what it is (a 500)."""
    try:
        return await asyncio.to_thread(work, *args, **kwargs)
    except Exception as error:
        if not database_unavailable(error):
            raise
        said = str(driver_error(error)).strip().splitlines()
        logger.warning("PostgreSQL cannot serve documents now: %s", said[0] if said else type(error).__name__)
        raise DatabaseAway(POSTGRES_AWAY_RETRY_AFTER_S) from error
