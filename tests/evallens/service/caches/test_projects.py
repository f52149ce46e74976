"""Cached answers belong to the project that asked: two projects, even under the same tenant name, neither
read each other's answers nor see hits the other's traffic caused. The real service over HTTP (tiny vLLM
model, real PostgreSQL, the packaged embedding model), and the answer caches' keys themselves."""

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import httpx
import numpy as np
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from evallens.service.caches import CacheMetrics
from evallens.service.chat.answers import AnswerCache, CacheKey, CannedAnswer
from evallens.service.chat.preflight import DEFAULT_TENANT
from evallens.service.chat.protocol import ChatCompletionRequest
from evallens.service.rag import KnowledgeBaseGenerations
from evallens.settings import CacheSettings
from evallens.telemetry import attributes as attr
from evallens.telemetry import metrics
from tests.evallens.service.caches.test_knowledge_base import CLOSE, NO_RETRIEVAL, ask, cache_of
from tests.evallens.service.conftest import RecordingEmbedder, span_attributes
from tests.evallens.service.documents.test_projects import RETRIEVAL, project_keys
from tests.evallens.service.test_rag_wiring import QUESTION, root_span

Serve = Callable[..., AbstractContextManager[httpx.Client]]

CACHES = {"cache_exact_enabled": True, "cache_semantic_enabled": True, "cache_semantic_threshold": 0.9}
MISS = {"exact": False, "semantic": False}


def hits_counted(client: httpx.Client) -> float:
    """Answer-cache hits (both caches) in the service's ``/metrics``."""
    return float(
        sum(
            sample.value
            for family in text_string_to_metric_families(client.get("/metrics").text)
            if family.name == metrics.CACHE_LOOKUPS
            for sample in family.samples
            if sample.name == f"{metrics.CACHE_LOOKUPS}_total" and sample.labels["result"] == "hit"
        )
    )


def lookups_counted(client: httpx.Client) -> dict[tuple[str, str, str], float]:
    """Answer-cache lookups in the service's ``/metrics`` by (project, cache, result)."""
    return {
        (sample.labels.get("project", ""), sample.labels["cache"], sample.labels["result"]): sample.value
        for family in text_string_to_metric_families(client.get("/metrics").text)
        if family.name == metrics.CACHE_LOOKUPS
        for sample in family.samples
        if sample.name == f"{metrics.CACHE_LOOKUPS}_total"
    }


def cache_attributes(span_exporter: InMemorySpanExporter, answer: dict[str, Any]) -> tuple[Any, Any]:
    """What the request span (the trace the project's dashboards count) says of the two caches."""
    values = span_attributes(root_span(span_exporter, answer["evallens"]["trace_id"]))
    return values.get(attr.CACHE_EXACT_HIT), values.get(attr.CACHE_SEMANTIC_HIT)


def test_another_project_never_gets_this_projects_cached_answer(
    serve: Serve, database_url: str, span_exporter: InMemorySpanExporter
) -> None:
    """Over HTTP with auth: shop-b asking shop-a's question gets no exact hit, shop-c asking a close one
    no semantic hit (shop-c: shop-b's own answer would be its semantic hit), and neither is counted as
    one; shop-a's entries stay. (The service also sets the tenant to the key's project, which kept this
    so before the caches keyed by project themselves; the next test checks the keys on their own.)"""
    shop_a, shop_b, shop_c = project_keys(database_url, "shop-a", "shop-b", "shop-c")
    with serve(database_url=database_url, auth_enabled=True, **RETRIEVAL, **CACHES) as client:
        assert cache_of(ask(client, headers=shop_a, evallens=NO_RETRIEVAL)) == MISS
        assert cache_of(ask(client, headers=shop_a, evallens=NO_RETRIEVAL)) == {
            "exact": True,
            "semantic": False,
        }

        hits = hits_counted(client)
        same = ask(client, headers=shop_b, evallens=NO_RETRIEVAL)
        close = ask(client, CLOSE, headers=shop_c, evallens=NO_RETRIEVAL)
        assert (cache_of(same), cache_of(close)) == (MISS, MISS)
        assert (
            cache_attributes(span_exporter, same) == cache_attributes(span_exporter, close) == (False, False)
        )
        assert hits_counted(client) == hits  # their lookups counted no hit

        # shop-a's own entries are still there: shop-b's answer to the same question did not replace it
        again = ask(client, headers=shop_a, evallens=NO_RETRIEVAL)
        assert cache_of(again) == {"exact": True, "semantic": False}
        assert cache_attributes(span_exporter, again) == (True, False)
        similar = ask(client, CLOSE, headers=shop_a, evallens=NO_RETRIEVAL)
        assert cache_of(similar) == {"exact": False, "semantic": True}
        assert hits_counted(client) == hits + 2


def cache_key(answers: AnswerCache, project: str, tenant: str, question: str, embedding: Any) -> CacheKey:
    """The key the service makes for a single-turn question without retrieval, with its embedding."""
    made = answers.key(
        use=True,
        deterministic=True,
        tenant=tenant,
        project=project,
        retrieval=False,
        single_turn=True,
        question=question,
    )
    request = ChatCompletionRequest(messages=[{"role": "user", "content": question}], temperature=0)
    made.exact = answers.exact_key(request, made, fingerprint="config")
    made.embedding = embedding
    return made


def test_the_same_tenant_in_two_projects_shares_no_cached_answer(
    tracer_provider: TracerProvider, embedder: RecordingEmbedder
) -> None:
    """Keys of answers without retrieval named the tenant but not the project: the service keeps the two
    apart only because, with auth, it sets the tenant to the key's project. The caches now key by
    project themselves, so no tenant name can ever be shared."""
    answers = AnswerCache(
        CacheSettings(cache_exact_enabled=True, cache_semantic_enabled=True),
        metrics=CacheMetrics.create(),
        tracer=tracer_provider.get_tracer("test"),
        generations=KnowledgeBaseGenerations(),
    )
    embedding = embedder.embed_one(QUESTION)

    def key(project: str) -> CacheKey:
        return cache_key(answers, project, DEFAULT_TENANT, QUESTION, embedding)

    answers.remember(key("shop-a"), CannedAnswer("5 to 10 days"))
    other = key("shop-b")
    assert (answers.get_exact(other), answers.get_similar(other), answers.fallback(other)) == (
        None,
        None,
        None,
    )
    mine = key("shop-a")  # the control
    assert (
        answers.get_exact(mine)
        == answers.get_similar(mine)
        == answers.fallback(mine)
        == CannedAnswer("5 to 10 days")
    )


def test_one_projects_flood_never_evicts_another_projects_answers(
    tracer_provider: TracerProvider, embedder: RecordingEmbedder
) -> None:
    """The caches' size bounds were shared by all projects: one project sending many distinct questions
    (under as many tenant names) evicted every other project's exact and semantic entries, which it could
    never read anyway. Each project is bounded on its own: the flooder evicts only its own."""
    settings = CacheSettings(
        cache_exact_enabled=True,
        cache_semantic_enabled=True,
        cache_exact_max_entries=3,
        cache_semantic_max_entries=2,
        cache_semantic_max_total_entries=3,
    )
    answers = AnswerCache(
        settings,
        metrics=CacheMetrics.create(),
        tracer=tracer_provider.get_tracer("test"),
        generations=KnowledgeBaseGenerations(),
    )
    rng = np.random.default_rng(7)
    key = functools.partial(cache_key, answers)
    embedding = embedder.embed_one(QUESTION)
    kept = key("shop-b", DEFAULT_TENANT, QUESTION, embedding)
    answers.remember(kept, CannedAnswer("5 to 10 days"))
    for index in range(20):  # shop-a: distinct questions, each under a tenant name of its own
        vector = rng.standard_normal(embedding.shape).astype(np.float32)
        flood = key("shop-a", f"tenant-{index}", f"question {index}", vector / np.linalg.norm(vector))
        answers.remember(flood, CannedAnswer(f"answer {index}"))

    assert answers.get_exact(kept) == answers.get_similar(kept) == CannedAnswer("5 to 10 days")
    # the flooder is bounded all the same: its own oldest went
    assert (answers.exact.size("shop-a"), answers.semantic.num_entries("shop-a")) == (3, 3)
    assert answers.get_exact(flood) == CannedAnswer("answer 19")
    assert answers.get_exact(key("shop-a", "tenant-0", "question 0", flood.embedding)) is None


def test_cache_lookups_are_counted_by_project(serve: Serve, database_url: str) -> None:
    """``evallens_cache_lookups_total`` had no project label: an operator could not tell whose traffic
    hit the caches. It is labelled with the project whose caches were asked (the API key's, the default
    project's without auth), never with the free tenant header, so its values stay the projects there are."""
    shop_a, shop_b = project_keys(database_url, "shop-a", "shop-b")
    with serve(database_url=database_url, auth_enabled=True, **RETRIEVAL, **CACHES) as client:
        for _ in range(2):  # a miss, then an exact hit
            ask(client, headers=shop_a, evallens=NO_RETRIEVAL)
        ask(client, headers={**shop_b, attr.HEADER_TENANT: "shop-a"}, evallens=NO_RETRIEVAL)
        with_auth = lookups_counted(client)
    with serve(database_url=database_url, **RETRIEVAL, **CACHES) as client:
        for tenant in ("acme", "globex"):
            ask(client, headers={attr.HEADER_TENANT: tenant}, evallens=NO_RETRIEVAL)
        without_auth = lookups_counted(client)
    assert with_auth == {
        ("shop-a", "exact", "miss"): 1.0,
        ("shop-a", "semantic", "miss"): 1.0,
        ("shop-a", "exact", "hit"): 1.0,
        ("shop-b", "exact", "miss"): 1.0,
        ("shop-b", "semantic", "miss"): 1.0,
    }
    assert {project for project, _, _ in without_auth} == {attr.DEFAULT_PROJECT}
    assert without_auth[(attr.DEFAULT_PROJECT, "exact", "miss")] == 2.0
