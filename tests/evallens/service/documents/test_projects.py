"""The knowledge base belongs to a project: with auth, a key reaches only its project's documents, and
chat retrieves only its project's chunks (the real service, tiny vLLM model, real PostgreSQL, MiniLM)."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from evallens.auth import Scope, create_key
from evallens.db.engine import sqlalchemy_url
from evallens.service.documents.loader import load_corpus
from evallens.telemetry import attributes as attr
from evals.sets.documents import document_ids_of_target
from tests.evallens.service.conftest import counted_since, errors_counted, span_attributes

REFUNDS_A: dict[str, Any] = {
    "id": "refunds",
    "title": "Refunds",
    "text": "# Refunds\n\nRefunds reach your card in 5 to 10 business days after we receive the parcel.",
}
REFUNDS_B: dict[str, Any] = {
    "id": "refunds",
    "title": "Refunds",
    "text": "# Refunds\n\nWe refund as store credit only, within 48 hours of the return scan.",
}
WARRANTY_A: dict[str, Any] = {
    "id": "warranty",
    "title": "Warranty",
    "text": "# Warranty\n\nThe TR-4410 toaster carries a three year warranty covering the heating coils.",
}
WARRANTY_QUESTION = "What warranty does the TR-4410 toaster carry?"
# A shared CPU: a retrieval that misses the 200 ms default budget answers without context (degraded).
RETRIEVAL = {"scope_guard_enabled": False, "retrieval_budget_ms": 60_000.0}


def project_keys(database_url: str, *projects: str) -> list[dict[str, str]]:
    engine = create_engine(sqlalchemy_url(database_url))
    with Session(engine) as session, session.begin():
        keys = [{"x-evallens-key": create_key(session, name, Scope.INGEST).key} for name in projects]
    engine.dispose()
    return keys


def chunk_ids_of(database_url: str, document_id: str) -> set[str]:
    engine = create_engine(sqlalchemy_url(database_url))
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT id FROM chunks WHERE document_id = :id"), {"id": document_id})
        ids = set(rows.scalars())
    engine.dispose()
    return ids


def listed(client: httpx.Client, key: dict[str, str]) -> dict[str, str]:
    response = client.get("/v1/documents", headers=key)
    assert response.status_code == 200, response.text
    return {doc["id"]: doc["content_hash"] for doc in response.json()["data"]}


def ask(client: httpx.Client, key: dict[str, str], question: str) -> dict[str, Any]:
    body = {"messages": [{"role": "user", "content": question}], "max_tokens": 2, "temperature": 0}
    response = client.post("/v1/chat/completions", json=body, headers=key)
    assert response.status_code == 200, response.text
    extension: dict[str, Any] = response.json()["evallens"]
    return extension


def leg_ids(span_exporter: Any) -> set[str]:
    """Every chunk id any retrieval leg (vector, keyword, fused) of the finished requests saw."""
    seen: set[str] = set()
    for span in span_exporter.get_finished_spans():
        if span.name in (attr.SPAN_RETRIEVAL_VECTOR, attr.SPAN_RETRIEVAL_KEYWORD, attr.SPAN_RETRIEVAL_FUSE):
            seen.update(span_attributes(span).get(attr.RETRIEVAL_LEG_IDS, ()))
    return seen


@contextmanager
def two_shops(
    serve: Any, database_url: str, **overrides: Any
) -> Iterator[tuple[httpx.Client, dict[str, str], dict[str, str]]]:
    """The service with auth, and the keys of projects shop-a and shop-b; shop-a holds REFUNDS_A and
    WARRANTY_A."""
    shop_a, shop_b = project_keys(database_url, "shop-a", "shop-b")
    with serve(database_url=database_url, auth_enabled=True, **RETRIEVAL, **overrides) as client:
        for body in (REFUNDS_A, WARRANTY_A):
            created = client.post("/v1/documents", json=body, headers=shop_a)
            assert created.status_code == 201, created.text
        yield client, shop_a, shop_b


def test_the_same_id_in_two_projects_is_two_documents(serve, database_url: str) -> None:
    """Before: B's POST of A's id overwrote A's document (200 "updated")."""
    with two_shops(serve, database_url) as (client, shop_a, shop_b):
        mine = client.post("/v1/documents", json=REFUNDS_B, headers=shop_b)
        assert (mine.status_code, mine.json()["status"]) == (201, "created"), mine.text
        assert listed(client, shop_a)["refunds"] != listed(client, shop_b)["refunds"]
        assert client.delete("/v1/documents/refunds", headers=shop_b).status_code == 200
        assert sorted(listed(client, shop_a)) == ["refunds", "warranty"]  # B's delete took B's only


def test_another_projects_document_cannot_be_deleted_and_is_a_404(serve, database_url: str) -> None:
    """Before: B's DELETE removed A's document (200). Each 404 is counted in the errors metric, as every
    other refusal is (the router built these by hand, and none was counted)."""
    with two_shops(serve, database_url) as (client, shop_a, shop_b):
        before = errors_counted(client)
        gone = client.delete("/v1/documents/warranty", headers=shop_b)
        unknown = client.delete("/v1/documents/never-was", headers=shop_b)
        assert gone.status_code == unknown.status_code == 404, gone.text
        assert gone.json()["error"]["type"] == unknown.json()["error"]["type"] == "not_found_error"
        assert gone.json()["error"]["code"] == "not_found"
        assert counted_since(before, client) == {"not_found": 2.0}
        assert sorted(listed(client, shop_a)) == ["refunds", "warranty"]


def test_a_listing_shows_only_the_callers_projects_documents(serve, database_url: str) -> None:
    """Before: B's GET listed A's documents."""
    with two_shops(serve, database_url) as (client, shop_a, shop_b):
        assert listed(client, shop_b) == {}
        assert client.post("/v1/documents", json=REFUNDS_B, headers=shop_b).status_code == 201
        assert sorted(listed(client, shop_b)) == ["refunds"]
        assert sorted(listed(client, shop_a)) == ["refunds", "warranty"]


def test_a_projects_chat_never_retrieves_another_projects_chunks(
    serve, database_url: str, span_exporter
) -> None:
    """Before: B's chat retrieved (and cited) A's chunks, from both legs. The answer caches are on: A's
    cached answer (and its sources) must not answer B either."""
    caches = {"cache_exact_enabled": True, "cache_semantic_enabled": True}
    with two_shops(serve, database_url, **caches) as (client, shop_a, shop_b):
        store_credit = {**REFUNDS_B, "id": "store-credit"}
        assert client.post("/v1/documents", json=store_credit, headers=shop_b).status_code == 201
        a_warranty = chunk_ids_of(database_url, "warranty")
        assert a_warranty
        span_exporter.clear()
        answered_a = ask(client, shop_a, WARRANTY_QUESTION)  # the control: A's own chat finds it
        assert answered_a["retrieved_ids"][0] == "warranty"
        assert leg_ids(span_exporter) & a_warranty
        assert ask(client, shop_a, WARRANTY_QUESTION)["cache"]["exact"]  # A's answer is cached now
        span_exporter.clear()
        answered_b = ask(client, shop_b, WARRANTY_QUESTION)
        assert answered_b["cache"] == {"exact": False, "semantic": False}
        assert "warranty" not in answered_b["retrieved_ids"]
        assert not set(answered_b["cited_ids"]) & a_warranty
        b_seen = leg_ids(span_exporter)
        assert b_seen and not b_seen & a_warranty  # no leg (vector, keyword, fused) saw A's chunks


def test_without_auth_the_knowledge_base_is_the_default_projects(serve, database_url: str) -> None:
    """Nothing changes without auth: every client shares the default project's knowledge base."""
    with serve(database_url=database_url, **RETRIEVAL) as client:
        assert client.post("/v1/documents", json=WARRANTY_A).status_code == 201
        assert list(listed(client, {})) == ["warranty"]
        assert ask(client, {"x-evallens-tenant": "anyone"}, WARRANTY_QUESTION)["retrieved_ids"] == [
            "warranty"
        ]
    engine = create_engine(sqlalchemy_url(database_url))
    with engine.connect() as connection:
        stored = connection.execute(text("SELECT project, id FROM documents")).all()
    engine.dispose()
    assert [tuple(row) for row in stored] == [("default", "warranty")]


def test_kb_load_and_sets_sync_use_their_keys_project(serve, database_url: str, tmp_path: Path) -> None:
    """``evallens kb load`` and ``eval sets sync --endpoint`` send their key (``EVALLENS_EVAL_API_KEY``):
    the corpus lands in the key's project, and reference ids are checked against that project's
    documents only."""
    shop_a, shop_b = project_keys(database_url, "shop-a", "shop-b")
    corpus = tmp_path / "docs"
    corpus.mkdir()
    for body in (REFUNDS_A, WARRANTY_A):
        (corpus / f"{body['id']}.md").write_text(body["text"], encoding="utf-8")
    with serve(database_url=database_url, auth_enabled=True) as client:
        url = str(client.base_url)
        report = load_corpus(corpus, url, api_key=shop_a["x-evallens-key"])
        assert sorted(report.created) == ["refunds", "warranty"]
        assert sorted(listed(client, shop_a)) == ["refunds", "warranty"]
        assert listed(client, shop_b) == {}
        assert document_ids_of_target(url, api_key=shop_a["x-evallens-key"]) == {"refunds", "warranty"}
        assert document_ids_of_target(url, api_key=shop_b["x-evallens-key"]) == set()
        assert document_ids_of_target(url) is None  # 401: the target cannot tell
