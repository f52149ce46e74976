"""PostgreSQL away under the knowledge base's routes (real service, tiny vLLM model, real PostgreSQL made
unreachable or cut off): a 503 with Retry-After, as the service answers a key PostgreSQL cannot check,
counted under its own kind and documented; chat answers without context instead.

With PostgreSQL unreachable, or dropping a request's connection, ``/v1/documents`` answered a 500 that
said only "an internal error": a client could not tell a bug from an outage worth retrying, and was told
no time to come back."""

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql
from sqlalchemy import make_url

from evallens.db.errors import POSTGRES_AWAY_RETRY_AFTER_S
from evallens.db.server import DatabaseServer
from tests.evallens.service.conftest import counted_since, errors_counted, wait_until
from tests.evallens.service.test_openapi import assert_documented

pytestmark = pytest.mark.slow

UNREACHABLE = "postgresql://nobody@127.0.0.1:1/none"
DOCUMENT = {"id": "refunds", "title": "Refunds", "text": "Refunds reach your card in 5 to 10 days."}
CHAT = {"messages": [{"role": "user", "content": "How long do card refunds take?"}], "max_tokens": 2}
# A shared CPU: a retrieval that misses the 200 ms default budget answers without context (degraded).
RETRIEVAL = {"scope_guard_enabled": False, "retrieval_budget_ms": 60_000.0}


def assert_database_away(answer: httpx.Response) -> None:
    """The OpenAI-style 503 the service answers for PostgreSQL away, with Retry-After."""
    assert answer.status_code == 503, answer.text
    assert answer.headers["retry-after"] == str(POSTGRES_AWAY_RETRY_AFTER_S)
    error = answer.json()["error"]
    assert (error["type"], error["code"]) == ("server_error", "database_unavailable"), error
    assert "PostgreSQL cannot be reached" in error["message"], error


def test_documents_without_postgres_are_a_503_and_chat_answers_without_context(serve: Any) -> None:
    with serve(database_url=UNREACHABLE, database_connect_timeout_s=2, **RETRIEVAL) as client:
        spec = client.get("/openapi.json").json()
        before = errors_counted(client)
        answers = {
            ("post", "/v1/documents"): client.post("/v1/documents", json=DOCUMENT),
            ("get", "/v1/documents"): client.get("/v1/documents"),
            ("delete", "/v1/documents/{document_id}"): client.delete("/v1/documents/refunds"),
        }
        counted = counted_since(before, client)
        chat = client.post("/v1/chat/completions", json=CHAT)
    for (method, path), answer in answers.items():
        assert_database_away(answer)
        assert_documented(spec, method, path, answer)
    assert counted == {"database": 3.0}
    # retrieval's own PostgreSQL away degrades the answer by design: no context, not an error
    assert chat.status_code == 200, chat.text
    assert chat.json()["evallens"]["degraded_reason"] == "retrieval_error"


def test_postgres_dropping_a_request_is_a_503_and_the_service_comes_back_with_it(
    serve: Any, database_url: str, postgres_server: DatabaseServer
) -> None:
    """A connection cut mid-query (SQLSTATE 57P01), then new connections refused, then PostgreSQL back."""
    name = str(make_url(database_url).database)
    with serve(database_url=database_url, retrieval_enabled=False) as client:
        assert client.post("/v1/documents", json=DOCUMENT).status_code == 201
        before = errors_counted(client)
        with (
            psycopg.connect(postgres_server.url, autocommit=True) as admin,
            psycopg.connect(database_url) as lock_holder,
            ThreadPoolExecutor(1) as background,
        ):
            # the listing waits on this lock inside PostgreSQL, where the test cuts its connection
            lock_holder.execute("LOCK TABLE documents IN ACCESS EXCLUSIVE MODE")
            listing = background.submit(client.get, "/v1/documents")
            assert wait_until(lambda: waiting_on_locks(admin, name) == 1)
            try:
                allow_connections(admin, name, allowed=False)
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> %s",
                    [name, lock_holder.info.backend_pid],
                )
                cut = listing.result(timeout=60)
                refused = [client.get("/v1/documents"), client.post("/v1/documents", json=DOCUMENT)]
            finally:
                lock_holder.rollback()
                allow_connections(admin, name, allowed=True)
        counted = counted_since(before, client)
        back = client.get("/v1/documents")
    for answer in (cut, *refused):
        assert_database_away(answer)
    assert counted == {"database": 3.0}
    assert back.status_code == 200, back.text
    assert [document["id"] for document in back.json()["data"]] == ["refunds"]


def waiting_on_locks(admin: psycopg.Connection[Any], database: str) -> int:
    """Backends of ``database`` waiting on a lock."""
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'", [database]
    ).fetchone()
    return int(row[0]) if row else 0


def allow_connections(admin: psycopg.Connection[Any], database: str, *, allowed: bool) -> None:
    """Let ``database`` take new connections, or refuse them as PostgreSQL does while it is going away."""
    statement = sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS {}").format(
        sql.Identifier(database), sql.SQL("true" if allowed else "false")
    )
    admin.execute(statement)
