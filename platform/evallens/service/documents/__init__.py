"""The knowledge-base API: ``POST /v1/documents`` (incremental upsert), ``DELETE``, ``GET``."""

from evallens.service.documents.protocol import (
    DeleteResult,
    DocumentIn,
    DocumentList,
    DocumentOut,
    UpsertResult,
)
from evallens.service.documents.router import create_documents_router
from evallens.service.documents.serving import DocumentService

__all__ = [
    "DeleteResult",
    "DocumentIn",
    "DocumentList",
    "DocumentOut",
    "DocumentService",
    "UpsertResult",
    "create_documents_router",
]
