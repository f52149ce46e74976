"""The reference service's knowledge base: documents and their embedded chunks."""

from datetime import datetime
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import Computed, ForeignKeyConstraint, Index, Integer, PrimaryKeyConstraint, Text, func
from sqlalchemy.dialects.postgresql import TIMESTAMP, TSVECTOR
from sqlalchemy.orm import Mapped, mapped_column

from evallens.db.base import Base
from evallens.db.models.traces import DEFAULT_PROJECT

EMBEDDING_DIM = 384  # all-MiniLM-L6-v2


class Document(Base):
    """A knowledge-base document of a project, upserted by its id within that project."""

    __tablename__ = "documents"
    __table_args__ = (PrimaryKeyConstraint("project", "id"),)

    project: Mapped[str] = mapped_column(Text, server_default=DEFAULT_PROJECT)
    id: Mapped[str] = mapped_column(Text)
    title: Mapped[str | None] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", server_default="{}")
    updated_at: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), server_default=func.now())


class Chunk(Base):
    """A chunk of a document; its id hashes the project, document and text (stable across re-indexing,
    unique across projects)."""

    __tablename__ = "chunks"
    __table_args__ = (
        ForeignKeyConstraint(
            ["project", "document_id"], ["documents.project", "documents.id"], ondelete="CASCADE"
        ),
        Index("ix_chunks_project_document_id", "project", "document_id"),
        Index(
            "ix_chunks_embedding",
            "embedding",
            postgresql_using="hnsw",
            postgresql_ops={"embedding": "vector_cosine_ops"},
        ),
        Index("ix_chunks_tsv", "tsv", postgresql_using="gin"),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    project: Mapped[str] = mapped_column(Text, server_default=DEFAULT_PROJECT)
    document_id: Mapped[str] = mapped_column(Text)
    ordinal: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    num_tokens: Mapped[int] = mapped_column(Integer)
    embedding: Mapped[Any] = mapped_column(Vector(EMBEDDING_DIM))
    tsv: Mapped[Any] = mapped_column(TSVECTOR, Computed("to_tsvector('english', text)", persisted=True))
