"""The documents router through FastAPI's TestClient against real PostgreSQL, and the corpus loader."""

from typing import Any, cast

import httpx
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from sqlalchemy.orm import Session

from evallens.auth import AuthGate
from evallens.service.documents import DocumentService, create_documents_router
from evallens.service.documents.loader import load_corpus
from evallens.service.errors import install_error_handlers
from evallens.service.telemetry import ServiceMetrics
from evallens.settings import AuthSettings
from tests.conftest import REPO_ROOT


def make_client(document_service: DocumentService) -> TestClient:
    app = FastAPI()
    install_error_handlers(app, ServiceMetrics(CollectorRegistry()).errors)
    app.state.auth = AuthGate(AuthSettings(auth_enabled=False), Session)  # off: the default project
    app.include_router(create_documents_router(document_service))
    return TestClient(app)


BODY: dict[str, Any] = {
    "id": "refund-timing",
    "title": "Refund timing",
    "text": (
        "# Refund timing\n\n## Cards\nRefunds reach your card in 5 to 10 business days.\n\n"
        "## Gift cards\nInstant."
    ),
    "metadata": {"source": "test"},
}


def test_upsert_list_delete(document_service: DocumentService) -> None:
    with make_client(document_service) as client:
        created = client.post("/v1/documents", json=BODY)
        assert created.status_code == 201
        assert created.json() == {
            "id": "refund-timing",
            "status": "created",
            "num_chunks": 2,
            "num_chunks_embedded": 2,
            "num_chunks_deleted": 0,
        }
        again = client.post("/v1/documents", json=BODY)
        assert (again.status_code, again.json()["status"]) == (200, "unchanged")
        edited = {**BODY, "text": BODY["text"].replace("Instant.", "Within one hour.")}
        updated = client.post("/v1/documents", json=edited).json()
        assert (updated["status"], updated["num_chunks_embedded"], updated["num_chunks_deleted"]) == (
            "updated",
            1,
            1,
        )

        listed = client.get("/v1/documents").json()
        assert listed["object"] == "list"
        assert [(doc["id"], doc["num_chunks"], doc["metadata"]) for doc in listed["data"]] == [
            ("refund-timing", 2, {"source": "test"})
        ]

        assert client.delete("/v1/documents/refund-timing").json() == {"id": "refund-timing", "deleted": True}
        missing = client.delete("/v1/documents/refund-timing")
        assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"
        assert client.get("/v1/documents").json()["data"] == []


def test_bad_documents_are_rejected(document_service: DocumentService) -> None:
    with make_client(document_service) as client:
        assert client.post("/v1/documents", json={**BODY, "id": "../etc"}).status_code == 400
        assert client.post("/v1/documents", json={**BODY, "text": ""}).status_code == 400


def test_loader_posts_the_demo_corpus(document_service: DocumentService) -> None:
    corpus = REPO_ROOT / "evals" / "datasets" / "acme" / "docs"
    with make_client(document_service) as client:
        report = load_corpus(corpus, "http://testserver", client=cast(httpx.Client, client))
        assert len(report.created) == len(list(corpus.glob("*.md"))) >= 40
        assert report.num_chunks_embedded > len(report.created)
        again = load_corpus(corpus, "http://testserver", client=cast(httpx.Client, client))
        assert (again.created, again.updated, again.num_chunks_embedded) == ([], [], 0)
        assert len(again.unchanged) == len(report.created)
