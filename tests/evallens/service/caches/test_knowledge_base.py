"""Cached answers follow the knowledge base: an answer computed with retrieval is not served once the
project's documents it could have read changed (upserted with new content, or deleted). The real
service over HTTP: tiny vLLM model, real PostgreSQL, the packaged embedding model."""

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from evallens.service.caches import CacheMetrics
from evallens.service.chat.answers import AnswerCache, CacheKey, CannedAnswer
from evallens.service.chat.protocol import ChatCompletionRequest
from evallens.service.engines import VllmEngine
from evallens.service.guards.degrade import ENGINE_FALLBACK_CACHE
from evallens.service.rag import KnowledgeBaseGenerations
from evallens.settings import CacheSettings, RagSettings
from evallens.telemetry import attributes as attr
from tests.evallens.service.conftest import (
    LoopThread,
    RecordingEmbedder,
    make_settings,
    span_attributes,
    wait_until,
)
from tests.evallens.service.documents.test_projects import WARRANTY_A, WARRANTY_QUESTION, two_shops
from tests.evallens.service.test_rag_wiring import DOCUMENTS, QUESTION, RAG, load, root_span
from tests.evallens.service.test_warm_and_lean import app_client

Serve = Callable[..., AbstractContextManager[httpx.Client]]

REFUNDS = DOCUMENTS[0]
assert REFUNDS["id"] == "refunds"
# The policy changed: what an answer computed from the old document said is no longer true.
REFUNDS_CHANGED = {
    **REFUNDS,
    "text": "# Refunds\n\n## Card refunds\nCard refunds now reach your card within 14 days after we receive"
    " the returned item.\n\n## Gift cards\nGift card refunds are instant.",
}
CLOSE = "How long do card refunds take"  # close in meaning to QUESTION, not the same request
EXACT_ONLY = {**RAG, "cache_semantic_enabled": False}
SEMANTIC_ONLY = {**RAG, "cache_exact_enabled": False, "cache_semantic_threshold": 0.9}
NO_RETRIEVAL = {"retrieval": False}


def ask(
    client: httpx.Client, question: str = QUESTION, *, headers: Any = None, **body: Any
) -> dict[str, Any]:
    payload = {"messages": [{"role": "user", "content": question}], "max_tokens": 6, "temperature": 0}
    response = client.post("/v1/chat/completions", json={**payload, **body}, headers=headers)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def cache_of(answer: dict[str, Any]) -> dict[str, bool]:
    cache: dict[str, bool] = answer["evallens"]["cache"]
    return cache


def upsert(client: httpx.Client, document: dict[str, Any], headers: Any = None) -> str:
    response = client.post("/v1/documents", json=document, headers=headers)
    assert response.status_code in (200, 201), response.text
    status: str = response.json()["status"]
    return status


def generation_read(span_exporter: InMemorySpanExporter, answer: dict[str, Any]) -> Any:
    """The knowledge-base generation the request span says the answer read."""
    return span_attributes(root_span(span_exporter, answer["evallens"]["trace_id"])).get(attr.KB_GENERATION)


def test_a_changed_or_deleted_document_ends_its_exact_cache_hits(
    serve: Serve, database_url: str, span_exporter: InMemorySpanExporter
) -> None:
    """Before: after the refunds document changed, and again after it was deleted, the same request
    was answered from the exact cache with the answer computed from the old document."""
    with serve(database_url=database_url, **EXACT_ONLY) as client:
        load(client)
        first = ask(client)
        assert cache_of(first) == {"exact": False, "semantic": False}
        assert first["evallens"]["retrieved_ids"][0] == "refunds"
        assert cache_of(ask(client)) == {"exact": True, "semantic": False}
        assert cache_of(ask(client, evallens=NO_RETRIEVAL)) == {"exact": False, "semantic": False}

        assert upsert(client, REFUNDS) == "unchanged"
        unchanged = ask(client)
        assert cache_of(unchanged) == {"exact": True, "semantic": False}  # nothing changed: still a hit

        assert upsert(client, REFUNDS_CHANGED) == "updated"
        changed = ask(client)
        assert cache_of(changed) == {"exact": False, "semantic": False}
        assert changed["evallens"]["retrieved_ids"][0] == "refunds"  # retrieved again, from the new text
        assert cache_of(ask(client)) == {"exact": True, "semantic": False}  # the new answer is cached
        # an answer without retrieval never read the knowledge base: it stays cached
        plain = ask(client, evallens=NO_RETRIEVAL)
        assert cache_of(plain) == {"exact": True, "semantic": False}

        assert client.delete("/v1/documents/refunds").status_code == 200
        deleted = ask(client)
        assert cache_of(deleted) == {"exact": False, "semantic": False}
        assert "refunds" not in deleted["evallens"]["retrieved_ids"]
    # the request span names the generation each answer read; one without retrieval names none
    read = [generation_read(span_exporter, answer) for answer in (first, unchanged, changed, deleted)]
    assert all(isinstance(generation, int) for generation in read), read
    assert read[0] == read[1] < read[2] < read[3], read
    assert generation_read(span_exporter, plain) is None


def test_a_changed_or_deleted_document_ends_its_semantic_cache_hits(serve: Serve, database_url: str) -> None:
    """Before: a question close to one answered before the refunds document changed (or was deleted)
    was answered from the semantic cache with the old document's answer."""
    with serve(database_url=database_url, **SEMANTIC_ONLY) as client:
        load(client)
        assert cache_of(ask(client)) == {"exact": False, "semantic": False}
        assert cache_of(ask(client, CLOSE)) == {"exact": False, "semantic": True}

        assert upsert(client, REFUNDS) == "unchanged"
        assert cache_of(ask(client, CLOSE)) == {"exact": False, "semantic": True}

        assert upsert(client, REFUNDS_CHANGED) == "updated"
        changed = ask(client, CLOSE)
        assert cache_of(changed) == {"exact": False, "semantic": False}
        assert changed["evallens"]["retrieved_ids"][0] == "refunds"
        assert cache_of(ask(client)) == {"exact": False, "semantic": True}  # CLOSE's new answer

        assert client.delete("/v1/documents/refunds").status_code == 200
        deleted = ask(client, CLOSE)
        assert cache_of(deleted) == {"exact": False, "semantic": False}
        assert "refunds" not in deleted["evallens"]["retrieved_ids"]


def test_another_projects_change_keeps_this_projects_cached_answers(serve: Serve, database_url: str) -> None:
    """With auth each key's project has its own knowledge base: shop-b's upsert and delete leave
    shop-a's cached answers alone, and shop-a's own change ends them (before: it did not)."""
    caches = {"cache_exact_enabled": True, "cache_semantic_enabled": True}
    with two_shops(serve, database_url, **caches) as (client, shop_a, shop_b):
        assert ask(client, WARRANTY_QUESTION, headers=shop_a)["evallens"]["retrieved_ids"][0] == "warranty"
        assert cache_of(ask(client, WARRANTY_QUESTION, headers=shop_a))["exact"]

        assert upsert(client, WARRANTY_A, headers=shop_b) == "created"
        assert (
            upsert(client, {**WARRANTY_A, "text": "# Warranty\n\nFive years."}, headers=shop_b) == "updated"
        )
        assert client.delete("/v1/documents/warranty", headers=shop_b).status_code == 200
        assert cache_of(ask(client, WARRANTY_QUESTION, headers=shop_a)) == {"exact": True, "semantic": False}

        changed = {**WARRANTY_A, "text": "# Warranty\n\nThe TR-4410 toaster carries a one year warranty."}
        assert upsert(client, changed, headers=shop_a) == "updated"
        assert cache_of(ask(client, WARRANTY_QUESTION, headers=shop_a)) == {"exact": False, "semantic": False}


def test_a_failed_engine_is_not_stood_in_for_by_an_answer_from_a_changed_document(
    service_loop: LoopThread,
    vllm_engine: VllmEngine,
    service_data_dir: Path,
    tiny_model_path: Path,
    tracer_provider: TracerProvider,
    rag_settings: RagSettings,
    database_url: str,
) -> None:
    """Before: when the engine failed, the semantic cache's stand-in was the answer computed from the
    refunds document before it changed."""
    settings = make_settings(service_data_dir, tiny_model_path, database_url=database_url, **SEMANTIC_ONLY)
    embedder = RecordingEmbedder(rag_settings)
    with app_client(service_loop, vllm_engine, tracer_provider, settings, embedder) as (_, client):
        assert wait_until(lambda: client.get("/readyz").status_code == 200, timeout_s=300)
        load(client)
        stored = ask(client)
        assert cache_of(stored) == {"exact": False, "semantic": False}
        settings.ttft_budget_s = 0.000001  # from now on every engine call misses its first token
        stand_in = ask(client, CLOSE, temperature=0.8)  # sampled: never a preflight cache hit
        assert stand_in["evallens"]["degraded_reason"] == ENGINE_FALLBACK_CACHE  # the control
        assert stand_in["choices"][0]["message"]["content"] == stored["choices"][0]["message"]["content"]

        assert upsert(client, REFUNDS_CHANGED) == "updated"
        payload = {"messages": [{"role": "user", "content": CLOSE}], "max_tokens": 6, "temperature": 0.8}
        failed = client.post("/v1/chat/completions", json=payload)
    assert failed.status_code in (503, 504), failed.text  # no answer rather than the old policy's
    assert "error" in failed.json()


def test_an_answer_computed_across_a_change_is_never_served_after_it(
    tracer_provider: TracerProvider, embedder: RecordingEmbedder
) -> None:
    """The order of the parts without the engine: a request keys its answer by the generation it saw
    before retrieval, so a document changed while its answer was computed hides that answer; a failed
    engine's stand-in is looked up at the generation of now, not of when the request began."""
    generations = KnowledgeBaseGenerations()
    settings = CacheSettings(cache_exact_enabled=True, cache_semantic_enabled=True)
    answers = AnswerCache(
        settings,
        metrics=CacheMetrics.create(),
        tracer=tracer_provider.get_tracer("test"),
        generations=generations,
    )
    request = ChatCompletionRequest(messages=[{"role": "user", "content": QUESTION}], temperature=0)
    embedding = embedder.embed_one(QUESTION)

    def key() -> CacheKey:
        made = answers.key(
            use=True,
            deterministic=True,
            tenant="t",
            project="shop-a",
            retrieval=True,
            single_turn=True,
            question=QUESTION,
        )
        made.exact = answers.exact_key(request, made, fingerprint="config")
        made.embedding = embedding
        return made

    begun = key()
    generations.bump("shop-a")  # the refunds document changed while the answer was being computed
    answers.remember(begun, CannedAnswer("30 days"))
    now = key()
    assert (answers.get_exact(now), answers.get_similar(now), answers.fallback(now)) == (None, None, None)

    answers.remember(now, CannedAnswer("14 days"))
    assert answers.get_exact(key()) == answers.get_similar(key()) == CannedAnswer("14 days")  # the control
    generations.bump("shop-b")  # another project's change
    assert answers.get_exact(key()) == CannedAnswer("14 days")
    generations.bump("shop-a")
    assert answers.fallback(now) is None  # ``now`` began before this change: its stand-in would be stale
    assert answers.get_exact(key()) is None
