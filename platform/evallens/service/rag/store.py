"""The knowledge base in PostgreSQL: documents, chunks and their pgvector embeddings.

Every function takes the session first and never commits; the caller owns the transaction. The
knowledge base is a project's: every function reads or writes one ``project``'s documents and chunks
(a document's identity is (project, id)), never another's.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import case, delete, func, literal, select, text, update
from sqlalchemy.dialects.postgresql import JSONPATH, insert
from sqlalchemy.orm import Session

from evallens.db.models.knowledge import Chunk, Document
from evallens.service.rag.chunking import TextChunk
from evallens.service.rag.embeddings import Vectors
from evallens.service.text import MAX_JSON_DEPTH


@dataclass(frozen=True)
class StoredChunk:
    """A chunk as the store holds it."""

    id: str
    document_id: str
    ordinal: int
    text: str
    num_tokens: int


@dataclass(frozen=True)
class ScoredId:
    """A chunk id with a leg's score (cosine similarity for the vector leg, BM25 for keywords)."""

    id: str
    score: float


@dataclass(frozen=True)
class DocumentSummary:
    """One document of the knowledge base, without its text."""

    id: str
    title: str | None
    content_hash: str
    metadata: dict[str, Any]
    num_chunks: int
    updated_at: datetime
    metadata_too_deep: bool = False  # stored nested past MAX_JSON_DEPTH: ``metadata`` is empty instead


@dataclass(frozen=True)
class ReindexPlan:
    """What re-indexing one document changes: chunks to embed, to delete, and to renumber."""

    to_embed: list[TextChunk]
    to_delete: list[str]
    renumbered: dict[str, int]

    @property
    def changes_chunks(self) -> bool:
        """Whether any chunk row changes."""
        return bool(self.to_embed or self.to_delete or self.renumbered)


def plan_reindex(existing: Mapping[str, int], chunks: Sequence[TextChunk]) -> ReindexPlan:
    """Compare stored chunk ordinals by id with a fresh chunking: only new text needs embedding."""
    wanted = {chunk.id for chunk in chunks}
    return ReindexPlan(
        to_embed=[chunk for chunk in chunks if chunk.id not in existing],
        to_delete=sorted(chunk_id for chunk_id in existing if chunk_id not in wanted),
        renumbered={
            chunk.id: chunk.ordinal
            for chunk in chunks
            if chunk.id in existing and existing[chunk.id] != chunk.ordinal
        },
    )


# First key of the two-key advisory locks on document ids (a key space apart from one-key locks).
DOCUMENT_LOCKS = 0x6B62  # "kb"


def lock_document(session: Session, project: str, document_id: str) -> None:
    """Wait for, and hold until the transaction ends, the one writer's lock on ``document_id`` of
    ``project``: an upload plans against the stored chunks, so a second upload or a delete of the same
    document must not change them under it (the upload would collide on them, or write the document
    back missing them)."""
    # Document ids never hold "/", so "project/id" names one document whatever the project's name.
    session.execute(
        text("SELECT pg_advisory_xact_lock(:space, hashtext(:key))"),
        {"space": DOCUMENT_LOCKS, "key": f"{project}/{document_id}"},
    )


def get_document(session: Session, project: str, document_id: str) -> Document | None:
    """The document ``document_id`` of ``project``, or None."""
    return session.get(Document, {"project": project, "id": document_id})


def chunk_ordinals(session: Session, project: str, document_id: str) -> dict[str, int]:
    """Ordinal of each stored chunk of a document, by chunk id."""
    rows = session.execute(
        select(Chunk.id, Chunk.ordinal).where(Chunk.project == project, Chunk.document_id == document_id)
    )
    return {row.id: row.ordinal for row in rows}


def write_document(
    session: Session,
    *,
    project: str,
    document_id: str,
    title: str | None,
    body: str,
    content_hash: str,
    metadata: dict[str, Any],
) -> None:
    """Insert or update a document row of ``project``, stamping ``updated_at``."""
    values = {
        "project": project,
        "id": document_id,
        "title": title,
        "text": body,
        "content_hash": content_hash,
        "metadata": metadata,
        "updated_at": func.now(),
    }
    statement = insert(Document).values(values)
    session.execute(
        statement.on_conflict_do_update(
            index_elements=[Document.project, Document.id],
            set_={key: statement.excluded[key] for key in values if key not in ("project", "id")},
        )
    )


def apply_reindex(
    session: Session, project: str, document_id: str, plan: ReindexPlan, embeddings: Vectors
) -> None:
    """Write a plan: delete gone chunks, renumber moved ones, insert new ones with their embeddings."""
    mine = (Chunk.project == project, Chunk.document_id == document_id)
    if plan.to_delete:
        session.execute(delete(Chunk).where(*mine, Chunk.id.in_(plan.to_delete)))
    for chunk_id, ordinal in plan.renumbered.items():
        session.execute(update(Chunk).where(*mine, Chunk.id == chunk_id).values(ordinal=ordinal))
    if plan.to_embed:
        session.execute(
            insert(Chunk),
            [
                {
                    "id": chunk.id,
                    "project": project,
                    "document_id": document_id,
                    "ordinal": chunk.ordinal,
                    "text": chunk.text,
                    "num_tokens": chunk.num_tokens,
                    "embedding": vector,
                }
                for chunk, vector in zip(plan.to_embed, embeddings, strict=True)
            ],
        )


def delete_document(session: Session, project: str, document_id: str) -> bool:
    """Delete a document of ``project`` and (by cascade) its chunks; False when ``project`` has none."""
    result = session.execute(
        delete(Document).where(Document.project == project, Document.id == document_id).returning(Document.id)
    )
    return result.first() is not None


# An object or array at level MAX_JSON_DEPTH (the root is level 0) nests deeper than the API takes now.
# Metadata stored before that limit may: pydantic cannot serialize past about 250 levels (the listing was
# a 500) and psycopg cannot decode past about 900 (RecursionError), so PostgreSQL tests it, unread.
_TOO_DEEP_PATH = 'strict $.**{%s} ? (@.type() == "object" || @.type() == "array")'


def list_documents(session: Session, project: str) -> list[DocumentSummary]:
    """Every document of ``project`` with its chunk count, by id; a document whose stored metadata nests
    more than ``MAX_JSON_DEPTH`` levels deep comes with empty metadata and ``metadata_too_deep``."""
    too_deep = func.jsonb_path_exists(Document.metadata_, literal(_TOO_DEEP_PATH % MAX_JSON_DEPTH, JSONPATH))
    num_chunks = (
        select(func.count(Chunk.id))
        .where(Chunk.project == Document.project, Chunk.document_id == Document.id)
        .correlate(Document)
    ).scalar_subquery()
    rows = session.execute(
        select(
            Document.id,
            Document.title,
            Document.content_hash,
            case((too_deep, None), else_=Document.metadata_).label("metadata"),
            too_deep.label("metadata_too_deep"),
            Document.updated_at,
            num_chunks.label("num_chunks"),
        )
        .where(Document.project == project)
        .order_by(Document.id)
    )
    return [
        DocumentSummary(
            id=row.id,
            title=row.title,
            content_hash=row.content_hash,
            metadata=dict(row.metadata or {}),
            num_chunks=int(row.num_chunks),
            updated_at=row.updated_at,
            metadata_too_deep=row.metadata_too_deep,
        )
        for row in rows
    ]


# pgvector 0.8+ keeps scanning the HNSW graph until ``limit`` rows pass the project filter (an older
# one filters the first ef_search rows only, so a small project among large ones may get fewer hits).
_ITERATIVE_SCAN = text(
    "SELECT set_config('hnsw.iterative_scan', 'strict_order', true) FROM pg_extension"
    " WHERE extname = 'vector' AND string_to_array(extversion, '.')::int[] >= '{0,8}'"
)


def vector_search(session: Session, project: str, embedding: Vectors, limit: int) -> list[ScoredId]:
    """The ``limit`` chunks of ``project`` nearest to ``embedding`` by cosine (HNSW index), best first."""
    # HNSW returns at most ef_search rows; widen it to the number asked for.
    session.execute(text("SELECT set_config('hnsw.ef_search', :value, true)"), {"value": str(max(40, limit))})
    session.execute(_ITERATIVE_SCAN)
    distance = Chunk.embedding.cosine_distance(np.asarray(embedding, dtype=np.float32))
    rows = session.execute(
        select(Chunk.id, distance.label("distance"))
        .where(Chunk.project == project)
        .order_by(distance)
        .limit(limit)
    )
    return [ScoredId(id=row.id, score=1.0 - float(row.distance)) for row in rows]


def fetch_chunks(session: Session, project: str, chunk_ids: Iterable[str]) -> dict[str, StoredChunk]:
    """Chunks of ``project`` by id (missing ids, and other projects' ids, are absent from the result)."""
    ids = list(chunk_ids)
    if not ids:
        return {}
    rows = session.execute(
        select(Chunk.id, Chunk.document_id, Chunk.ordinal, Chunk.text, Chunk.num_tokens).where(
            Chunk.project == project, Chunk.id.in_(ids)
        )
    )
    return {
        row.id: StoredChunk(row.id, row.document_id, row.ordinal, row.text, row.num_tokens) for row in rows
    }


def fetch_embeddings(session: Session, project: str, chunk_ids: Iterable[str]) -> dict[str, Vectors]:
    """Stored embeddings of ``project``'s chunks by chunk id."""
    ids = list(chunk_ids)
    if not ids:
        return {}
    rows = session.execute(
        select(Chunk.id, Chunk.embedding).where(Chunk.project == project, Chunk.id.in_(ids))
    )
    return {row.id: np.asarray(row.embedding, dtype=np.float32) for row in rows}


def all_chunk_texts(session: Session, project: str) -> list[tuple[str, str]]:
    """(id, text) of every chunk of ``project``, in a stable order, for building its keyword index."""
    rows = session.execute(
        select(Chunk.id, Chunk.text)
        .where(Chunk.project == project)
        .order_by(Chunk.document_id, Chunk.ordinal)
    )
    return [(row.id, row.text) for row in rows]


def projects_with_documents(session: Session) -> list[str]:
    """Every project that has a document, by name."""
    return list(session.scalars(select(Document.project).distinct().order_by(Document.project)))


def knowledge_base_version(session: Session, project: str) -> tuple[int, int, str | None]:
    """Changes whenever a document or chunk of ``project`` is added, changed or deleted:
    (documents, chunks, newest)."""
    row = session.execute(
        select(
            select(func.count()).select_from(Document).where(Document.project == project).scalar_subquery(),
            select(func.count()).select_from(Chunk).where(Chunk.project == project).scalar_subquery(),
            select(func.max(Document.updated_at)).where(Document.project == project).scalar_subquery(),
        )
    ).one()
    newest = row[2].isoformat() if row[2] is not None else None
    return int(row[0]), int(row[1]), newest
