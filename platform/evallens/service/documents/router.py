"""HTTP routes of the knowledge base: ``POST /v1/documents``, ``DELETE /v1/documents/{id}``, ``GET``.

Each acts on the caller's project's documents only (the API key's project with auth, else the default
project); another project's document is as unknown as one that never existed.
"""

from typing import Annotated

from fastapi import APIRouter, Path, Response, status
from fastapi.responses import JSONResponse

from evallens.service.dependencies import ProjectDep
from evallens.service.documents.protocol import (
    DOCUMENT_ID_PATTERN,
    DeleteResult,
    DocumentIn,
    DocumentList,
    UpsertResult,
)
from evallens.service.documents.serving import DocumentService


def not_found(message: str) -> JSONResponse:
    """An OpenAI-style 404 error body."""
    error = {"message": message, "type": "not_found_error", "param": None, "code": "not_found"}
    return JSONResponse(status_code=status.HTTP_404_NOT_FOUND, content={"error": error})


def create_documents_router(service: DocumentService) -> APIRouter:
    """A router for ``service``; include it in the app with ``app.include_router(...)``."""
    router = APIRouter(prefix="/v1/documents", tags=["documents"])

    @router.post("", response_model=UpsertResult)
    async def upsert_document(document: DocumentIn, response: Response, project: ProjectDep) -> UpsertResult:
        result = await service.upsert(project, document)
        response.status_code = status.HTTP_201_CREATED if result.status == "created" else status.HTTP_200_OK
        return result

    @router.delete("/{document_id}", response_model=DeleteResult)
    async def delete_document(
        document_id: Annotated[str, Path(pattern=DOCUMENT_ID_PATTERN)],
        project: ProjectDep,
    ) -> DeleteResult | JSONResponse:
        result = await service.delete(project, document_id)
        if not result.deleted:
            return not_found(f"no document with id {document_id!r}")
        return result

    @router.get("", response_model=DocumentList)
    async def list_documents(project: ProjectDep) -> DocumentList:
        return await service.list(project)

    return router
