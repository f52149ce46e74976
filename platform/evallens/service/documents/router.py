"""HTTP routes of the knowledge base: ``POST /v1/documents``, ``DELETE /v1/documents/{id}``, ``GET``.

Each acts on the caller's project's documents only (the API key's project with auth, else the default
project); another project's document is as unknown as one that never existed.
"""

from typing import Annotated

from fastapi import APIRouter, Path, Response, status

from evallens.service.dependencies import ProjectDep
from evallens.service.documents.protocol import (
    DOCUMENT_ID_PATTERN,
    DeleteResult,
    DocumentIn,
    DocumentList,
    UpsertResult,
)
from evallens.service.documents.serving import DocumentService
from evallens.service.errors import NotFound
from evallens.service.openapi import BODY_ERRORS, KEY_ERRORS, error_responses


def create_documents_router(service: DocumentService) -> APIRouter:
    """A router for ``service``; include it in the app with ``app.include_router(...)``."""
    # 503 and 500: each route reads or writes PostgreSQL, which may be away (503) or fail under it (500)
    router = APIRouter(
        prefix="/v1/documents", tags=["documents"], responses=error_responses(*KEY_ERRORS, 500)
    )
    already_stored = {"model": UpsertResult, "description": "Already stored: updated, or unchanged."}

    @router.post(
        "",
        response_model=UpsertResult,
        status_code=status.HTTP_201_CREATED,
        response_description="A new document, stored.",
        responses={status.HTTP_200_OK: already_stored, **error_responses(*BODY_ERRORS)},
    )
    async def upsert_document(document: DocumentIn, response: Response, project: ProjectDep) -> UpsertResult:
        result = await service.upsert(project, document)
        response.status_code = status.HTTP_201_CREATED if result.status == "created" else status.HTTP_200_OK
        return result

    @router.delete(
        "/{document_id}",
        response_model=DeleteResult,
        responses=error_responses(404, descriptions={404: "No document with that id in this project."}),
    )
    async def delete_document(
        document_id: Annotated[str, Path(pattern=DOCUMENT_ID_PATTERN)],
        project: ProjectDep,
    ) -> DeleteResult:
        result = await service.delete(project, document_id)
        if not result.deleted:  # a ServiceError: answered and counted in the errors metric as any other
            raise NotFound(f"no document with id {document_id!r}", code="not_found")
        return result

    @router.get("", response_model=DocumentList)
    async def list_documents(project: ProjectDep) -> DocumentList:
        return await service.list(project)

    return router
