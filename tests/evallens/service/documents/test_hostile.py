"""The knowledge-base API against a hostile client, through the service's error handlers and real
PostgreSQL: what PostgreSQL cannot store is a 400 naming the field and writes nothing."""

import json
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from evallens.service.documents import DocumentService, create_documents_router
from evallens.service.errors import install_error_handlers

DOCUMENT: dict[str, Any] = {
    "id": "refunds",
    "title": "Refunds",
    "text": "# Refunds\n\n## Cards\nRefunds reach your card in 5 to 10 business days.\n\n"
    "## Gift cards\nInstant.",
    "metadata": {"source": "test"},
}


def make_client(document_service: DocumentService) -> TestClient:
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(create_documents_router(document_service))
    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("text", "Refunds take\u0000 5 days."),
        ("title", "Ref\u0000unds"),
        ("title", "Ref\ud800unds"),
        ("metadata", {"source": "a\u0000b"}),
        ("metadata", {"so\u0000urce": "test"}),
        ("metadata", {"nested": [{"deep": "\udfff"}]}),
        ("metadata", {"score": float("nan")}),
        ("metadata", {"score": [float("-inf")]}),
    ],
    ids=["nul-text", "nul-title", "surrogate-title", "nul-value", "nul-key", "surrogate-deep", "nan", "inf"],
)
def test_what_postgresql_cannot_store_is_a_400_that_writes_nothing(
    document_service: DocumentService, field: str, value: Any
) -> None:
    """Each of these was a 500 (psycopg's DataError or UnicodeEncodeError) with a traceback."""
    body = json.dumps({**DOCUMENT, field: value})  # NaN and \\ud800 escapes, as a client may send them
    with make_client(document_service) as client:
        response = client.post("/v1/documents", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["type"] == "invalid_request_error" and error["param"].startswith(field), error
        assert client.get("/v1/documents").json()["data"] == []
        assert client.post("/v1/documents", json=DOCUMENT).status_code == 201


def test_deleting_an_id_no_document_can_have_is_a_400(document_service: DocumentService) -> None:
    """``DELETE /v1/documents/%00`` reached PostgreSQL with a NUL: a 500."""
    with make_client(document_service) as client:
        response = client.delete("/v1/documents/%00")
        assert response.status_code == 400, response.text
        assert response.json()["error"]["param"] == "document_id"
        assert client.delete("/v1/documents/no-such-document").status_code == 404
