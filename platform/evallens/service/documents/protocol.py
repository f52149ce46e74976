"""Request and response models of the knowledge-base API (``/v1/documents``)."""

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from evallens.service.text import MAX_JSON_DEPTH, StorableJson, StorableText

DOCUMENT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"


class DocumentIn(BaseModel):
    """A document to add or replace, by id."""

    id: str = Field(
        pattern=DOCUMENT_ID_PATTERN, description="Stable id; re-posting it replaces the document."
    )
    title: StorableText | None = Field(default=None, description="Human title.")
    text: StorableText = Field(
        min_length=1, description="Markdown text; headings and paragraphs guide chunking."
    )
    metadata: StorableJson = Field(default_factory=dict, description="Free-form JSON metadata.")


class UpsertResult(BaseModel):
    """What an upsert changed: only new or changed chunks are embedded."""

    id: str
    status: Literal["created", "updated", "unchanged"]
    num_chunks: int
    num_chunks_embedded: int
    num_chunks_deleted: int


class DocumentOut(BaseModel):
    """A stored document, without its text."""

    id: str
    title: str | None
    content_hash: str
    metadata: dict[str, Any]
    num_chunks: int
    updated_at: datetime
    metadata_too_deep: bool = Field(
        default=False,
        description=f"The stored metadata nests more than {MAX_JSON_DEPTH} levels deep (stored before such "
        "metadata was refused), so `metadata` is empty instead of it. Re-post the document to replace it.",
    )


class DocumentList(BaseModel):
    """Every document of the knowledge base."""

    object: Literal["list"] = "list"
    data: list[DocumentOut]


class DeleteResult(BaseModel):
    """Outcome of a delete."""

    id: str
    deleted: bool
