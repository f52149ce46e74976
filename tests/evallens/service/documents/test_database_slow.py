"""PostgreSQL too slow to answer under the knowledge base's routes (TestClient, real PostgreSQL made slow
for real: a table another connection holds locked past PostgreSQL's lock or statement timeout, or every
connection of the service's pool held past its pool timeout): a 503 with Retry-After, as for PostgreSQL
away and as the API key check answers the same errors.

Each was a 500 saying only "an internal error": ``/v1/documents`` told PostgreSQL away (a 503) from
everything else, and a lock or a busy server that is over in a moment read to a client as a bug not worth
retrying."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from psycopg import sql
from sqlalchemy import Connection, Engine, make_url
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session

from evallens.auth import AuthGate
from evallens.db import create_db_engine, create_session_factory
from evallens.db.errors import POSTGRES_AWAY_RETRY_AFTER_S
from evallens.service.documents import DocumentService, create_documents_router
from evallens.service.errors import install_error_handlers
from evallens.service.rag import KeywordIndex
from evallens.service.rag.generations import KnowledgeBaseGenerations
from evallens.service.telemetry import ServiceMetrics
from evallens.settings import AuthSettings, RagSettings
from tests.evallens.service.conftest import RecordingEmbedder

DOCUMENT = {"id": "refunds", "title": "Refunds", "text": "Refunds reach your card in 5 to 10 days."}
TIMEOUT_MS = 500
MAX_POOL_CONNECTIONS = 100  # far more than any pool the service builds: taking them all ends in a timeout


@contextmanager
def documents_client(
    engine: Engine, embedder: RecordingEmbedder
) -> Iterator[tuple[TestClient, ServiceMetrics]]:
    """The documents routes over ``engine``'s pool, auth off, with the errors metric they count in."""
    service = DocumentService(
        RagSettings(),
        embedder=embedder,
        session_factory=create_session_factory(engine),
        keyword_index=KeywordIndex(),
        generations=KnowledgeBaseGenerations(),
    )
    metrics = ServiceMetrics(CollectorRegistry())
    app = FastAPI()
    install_error_handlers(app, metrics.errors)
    app.state.auth = AuthGate(AuthSettings(auth_enabled=False), Session)
    app.include_router(create_documents_router(service))
    with TestClient(app, raise_server_exceptions=False) as client:  # a 500 answered, as a client sees it
        yield client, metrics


def every_route(client: TestClient) -> list[Any]:  # TestClient's responses: httpx2's where installed
    return [
        client.post("/v1/documents", json=DOCUMENT),
        client.get("/v1/documents"),
        client.delete(f"/v1/documents/{DOCUMENT['id']}"),
    ]


def assert_unavailable(answers: list[Any], metrics: ServiceMetrics) -> None:
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == str(POSTGRES_AWAY_RETRY_AFTER_S)
        error = answer.json()["error"]
        assert (error["type"], error["code"]) == ("server_error", "database_unavailable"), error
        assert "did not answer in time" in error["message"], error
    counted = metrics.registry.get_sample_value("evallens_errors_total", {"kind": "database"})
    assert counted == len(answers)


@pytest.mark.parametrize("setting", ["lock_timeout", "statement_timeout"])
def test_a_table_locked_past_postgres_timeout_is_a_503_and_the_routes_come_back(
    setting: str, database_url: str, embedder: RecordingEmbedder
) -> None:
    """Lock timeout: SQLSTATE 55P03; statement timeout: 57014 (both as PostgreSQL's own setting, as an
    operator sets it, for every connection to the database)."""
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(
            sql.SQL("ALTER DATABASE {} SET {} = {}").format(
                sql.Identifier(str(make_url(database_url).database)),
                sql.Identifier(setting),
                sql.Literal(f"{TIMEOUT_MS}ms"),
            )
        )
    engine = create_db_engine(database_url)
    try:
        with documents_client(engine, embedder) as (client, metrics):
            with psycopg.connect(database_url) as lock_holder:
                lock_holder.execute("LOCK TABLE documents IN ACCESS EXCLUSIVE MODE")
                answers = every_route(client)
                lock_holder.rollback()
            back = client.post("/v1/documents", json=DOCUMENT)
    finally:
        engine.dispose()
    assert_unavailable(answers, metrics)
    assert back.status_code == 201, back.text


def test_a_pool_with_no_connection_free_in_time_is_a_503(
    database_url: str, embedder: RecordingEmbedder
) -> None:
    engine = create_db_engine(database_url, pool_size=1, pool_timeout_s=TIMEOUT_MS / 1000)
    held: list[Connection] = []
    try:
        with documents_client(engine, embedder) as (client, metrics):
            with pytest.raises(PoolTimeout):  # every connection the pool may open, held by this test
                while len(held) < MAX_POOL_CONNECTIONS:
                    held.append(engine.connect())
            answers = every_route(client)
            for connection in held:
                connection.close()
            back = client.post("/v1/documents", json=DOCUMENT)
    finally:
        engine.dispose()
    assert_unavailable(answers, metrics)
    assert back.status_code == 201, back.text
