"""The knowledge-base API against a hostile client, through the service's error handlers and real
PostgreSQL: what PostgreSQL cannot store is a 400 naming the field and writes nothing; writers of one
document id never fail each other."""

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import psycopg
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from evallens.auth import AuthGate
from evallens.service.documents import DocumentIn, DocumentService, create_documents_router
from evallens.service.errors import install_error_handlers
from evallens.service.rag import Embedder, KeywordIndex
from evallens.service.rag.embeddings import Vectors
from evallens.service.rag.generations import KnowledgeBaseGenerations
from evallens.service.telemetry import ServiceMetrics
from evallens.service.text import MAX_JSON_DEPTH
from evallens.settings import AuthSettings, RagSettings
from evallens.telemetry.attributes import DEFAULT_PROJECT
from tests.evallens.service.conftest import wait_until

DOCUMENT: dict[str, Any] = {
    "id": "refunds",
    "title": "Refunds",
    "text": "# Refunds\n\n## Cards\nRefunds reach your card in 5 to 10 business days.\n\n"
    "## Gift cards\nInstant.",
    "metadata": {"source": "test"},
}


def make_client(document_service: DocumentService) -> TestClient:
    app = FastAPI()
    app.state.auth = AuthGate(AuthSettings(auth_enabled=False), Session)  # off: the default project
    install_error_handlers(app, ServiceMetrics().errors)
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


def test_concurrent_writers_of_one_new_id_all_succeed(document_service: DocumentService) -> None:
    """Concurrent first uploads of one id used to race: each saw no document, each inserted its chunks,
    and all but one failed on the chunks' primary key (a 500)."""
    versions = [
        DocumentIn(**{**DOCUMENT, "text": f"{DOCUMENT['text']}\n\n## Version\nThis is version {n}."})
        for n in range(6)
    ]
    with ThreadPoolExecutor(len(versions)) as pool:
        results = list(pool.map(partial(document_service.upsert_sync, DEFAULT_PROJECT), versions))
    assert sorted(result.status for result in results) == ["created"] + ["updated"] * 5
    (stored,) = document_service.list_sync(DEFAULT_PROJECT).data
    assert stored.num_chunks == results[0].num_chunks == 3


class DeleteWhileEmbedding(Embedder):
    """The real embedder that, on its first call (inside an upsert's transaction, after it read the stored
    chunks), first lets a delete of the document run: to its end, or until it waits for a lock."""

    def __init__(self, settings: RagSettings, delete: Callable[[], object], database_url: str) -> None:
        super().__init__(settings)
        self.delete, self.database_url = delete, database_url
        self.deleting: threading.Thread | None = None

    def embed(self, texts: list[str]) -> Vectors:
        if self.deleting is None:
            deleting = self.deleting = threading.Thread(target=self.delete)
            deleting.start()
            assert wait_until(lambda: not deleting.is_alive() or self.delete_waits())
        return super().embed(texts)

    def delete_waits(self) -> bool:
        with psycopg.connect(self.database_url) as connection:
            waiting = connection.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()
        return bool(waiting and waiting[0])


def test_a_delete_during_an_update_never_leaves_a_document_missing_chunks(
    rag_settings: RagSettings,
    embedder: Embedder,
    session_factory: sessionmaker[Session],
    keyword_index: KeywordIndex,
    database_url: str,
) -> None:
    """An update read the stored chunks, a delete removed them, and the update wrote the document back
    with only its new chunks: a stored document whose chunks no longer cover its text."""
    generations = KnowledgeBaseGenerations()  # one service process: one view of the knowledge base
    writer = DocumentService(
        rag_settings, embedder=embedder, session_factory=session_factory, keyword_index=keyword_index,
        generations=generations,
    )  # fmt: skip
    writer.upsert_sync(DEFAULT_PROJECT, DocumentIn(**DOCUMENT))
    racing = DeleteWhileEmbedding(
        rag_settings, lambda: writer.delete_sync(DEFAULT_PROJECT, DOCUMENT["id"]), database_url
    )
    updater = DocumentService(
        rag_settings, embedder=racing, session_factory=session_factory, keyword_index=keyword_index,
        generations=generations,
    )  # fmt: skip
    changed = DocumentIn(**{**DOCUMENT, "text": f"{DOCUMENT['text']}\n\n## Update\nA new section."})
    updated = updater.upsert_sync(DEFAULT_PROJECT, changed)
    assert racing.deleting is not None
    racing.deleting.join()
    stored = writer.list_sync(DEFAULT_PROJECT).data
    assert [document.num_chunks for document in stored] in ([], [updated.num_chunks]), stored


def nested(depth: int) -> dict[str, Any]:
    """Metadata whose objects and arrays nest ``depth`` levels deep (itself the first)."""
    value: Any = "leaf"
    for level in range(depth - 1):
        value = [value] if level % 2 else {"level": value}
    return {"level": value}


@pytest.mark.slow
def test_metadata_nested_deeper_than_the_api_answers_is_a_400_that_writes_nothing(
    serve: Any, database_url: str
) -> None:
    """Metadata nested 300 levels deep was stored (201), and from then on every listing of its project's
    documents was a 500: pydantic refuses to serialize nesting that deep."""
    deepest = {**DOCUMENT, "id": "deepest", "metadata": nested(MAX_JSON_DEPTH)}
    with serve(database_url=database_url, retrieval_enabled=False) as client:
        for depth in (MAX_JSON_DEPTH + 1, 300):
            refused = client.post("/v1/documents", json={**DOCUMENT, "metadata": nested(depth)})
            assert refused.status_code == 400, refused.text
            error = refused.json()["error"]
            assert error["param"] == "metadata", error
            assert f"more than {MAX_JSON_DEPTH} levels" in error["message"], error
        assert client.get("/v1/documents").json()["data"] == []
        assert client.post("/v1/documents", json=deepest).status_code == 201
        listing = client.get("/v1/documents")
    assert listing.status_code == 200, listing.text
    assert [document["metadata"] for document in listing.json()["data"]] == [deepest["metadata"]]


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 300, 5000])
def test_a_stored_document_with_metadata_nested_too_deep_lists_without_it(
    document_service: DocumentService, database_url: str, depth: int
) -> None:
    """A document stored before such metadata was a 400 made every listing of its project a 500: pydantic
    cannot serialize 300 levels, psycopg cannot decode 5000. Now it is listed with empty metadata and
    ``metadata_too_deep``, beside the project's other documents as they are."""
    for document_id in ("deep", "refunds"):
        document_service.upsert_sync(DEFAULT_PROJECT, DocumentIn(**{**DOCUMENT, "id": document_id}))
    too_deep = '{"source": "test", "nested": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"  # depth levels
    with psycopg.connect(database_url) as connection:  # as an older service stored it
        connection.execute("UPDATE documents SET metadata = %s::jsonb WHERE id = 'deep'", (too_deep,))
    shallow = nested(MAX_JSON_DEPTH)  # as deep as the API takes: answered as stored
    as_deep_as_taken = DocumentIn(**{**DOCUMENT, "id": "shallow", "metadata": shallow})
    document_service.upsert_sync(DEFAULT_PROJECT, as_deep_as_taken)
    with make_client(document_service) as client:
        listing = client.get("/v1/documents")
    assert listing.status_code == 200, listing.text
    documents = {document["id"]: document for document in listing.json()["data"]}
    assert {name: (doc["metadata"], doc["metadata_too_deep"]) for name, doc in documents.items()} == {
        "deep": ({}, True),
        "refunds": (DOCUMENT["metadata"], False),
        "shallow": (shallow, False),
    }
