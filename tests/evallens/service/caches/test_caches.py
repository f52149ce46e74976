"""Exact and semantic caches: hits and misses where they should, thresholds, tenants, TTL, bounds."""

import numpy as np
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Tracer
from prometheus_client import CollectorRegistry

from evallens.service.caches import CacheMetrics, ExactCache, SemanticCache, request_key
from evallens.settings import CacheSettings
from evallens.telemetry import attributes as attr
from evallens.telemetry import metrics
from tests.evallens.service.conftest import Clock, RecordingEmbedder


@pytest.fixture
def tracer(tracer_provider: TracerProvider) -> Tracer:
    return tracer_provider.get_tracer("test")


def lookups(registry: CollectorRegistry, cache: str, result: str, project: str = "") -> float:
    labels = {"cache": cache, "result": result, "project": project}
    value = registry.get_sample_value(f"{metrics.CACHE_LOOKUPS}_total", labels)
    return value or 0.0


def unit(vector: list[float]) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    return array / np.linalg.norm(array)


def with_cosine(base: np.ndarray, cosine: float) -> np.ndarray:
    """A unit vector at exactly ``cosine`` to ``base`` (base is e0)."""
    other = np.zeros_like(base)
    other[0], other[1] = cosine, np.sqrt(1 - cosine**2)
    return other


REQUEST = {"model": "m", "messages": [{"role": "user", "content": "Where is  my order?"}], "temperature": 0}


def test_exact_cache_hits_on_the_normalized_request_only(registry, tracer, span_exporter) -> None:
    cache: ExactCache[str] = ExactCache(CacheSettings(), metrics=CacheMetrics.create(registry), tracer=tracer)
    key = request_key(REQUEST, project="shop", tenant="acme")
    assert cache.get(key) is None
    cache.put(key, "It ships today.")
    spacing = {**REQUEST, "messages": [{"role": "user", "content": " Where is my order? "}], "stream": True}
    assert cache.get(request_key(spacing, project="shop", tenant="acme")) == "It ships today."
    assert cache.get(request_key({**REQUEST, "temperature": 0.7}, project="shop", tenant="acme")) is None
    assert cache.get(request_key(REQUEST, project="shop", tenant="other")) is None
    assert cache.get(request_key(REQUEST, project="shop", tenant="acme", config_fingerprint="new")) is None
    assert cache.get(request_key(REQUEST, project="other", tenant="acme")) is None
    assert (lookups(registry, "exact", "hit"), lookups(registry, "exact", "miss")) == (1, 5)
    hits = [span.attributes[attr.CACHE_EXACT_HIT] for span in span_exporter.get_finished_spans()]
    assert hits == [False, True, False, False, False, False]
    assert {span.name for span in span_exporter.get_finished_spans()} == {attr.SPAN_CACHE_EXACT}


def test_exact_cache_expires_and_is_bounded(registry) -> None:
    clock = Clock()
    settings = CacheSettings(cache_exact_ttl_s=60, cache_exact_max_entries=2)
    cache: ExactCache[int] = ExactCache(settings, metrics=CacheMetrics.create(registry), clock=clock)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)
    clock.now += 61
    assert cache.get("a") is None


def test_a_disabled_cache_never_answers(registry) -> None:
    cache: ExactCache[int] = ExactCache(
        CacheSettings(cache_exact_enabled=False), metrics=CacheMetrics.create(registry)
    )
    cache.put("a", 1)
    assert cache.get("a") is None
    assert lookups(registry, "exact", "miss") == 0  # nothing looked up, nothing counted
    semantic: SemanticCache[str] = SemanticCache(CacheSettings(cache_semantic_enabled=False))
    semantic.store("t", "q", unit([1, 0]), "a")
    assert semantic.lookup("t", unit([1, 0])) is None


@pytest.mark.parametrize(("cosine", "hit"), [(0.96, True), (0.9501, True), (0.9499, False), (0.5, False)])
def test_semantic_threshold_is_honoured(registry, cosine: float, hit: bool) -> None:
    cache: SemanticCache[str] = SemanticCache(CacheSettings(), metrics=CacheMetrics.create(registry))
    base = unit([1.0] + [0.0] * 383)
    cache.store("acme", "q", base, "answer")
    found = cache.lookup("acme", with_cosine(base, cosine).astype(np.float32))
    assert (found is not None) is hit
    assert lookups(registry, "semantic", "hit" if hit else "miss") == 1
    if found is not None:
        assert found.similarity == pytest.approx(cosine, abs=1e-5)


def test_semantic_cache_with_real_embeddings(
    registry, tracer, span_exporter, embedder: RecordingEmbedder
) -> None:
    cache: SemanticCache[str] = SemanticCache(
        CacheSettings(), metrics=CacheMetrics.create(registry), tracer=tracer
    )
    asked = "How many days do I have to return an unopened item?"
    vectors = embedder.embed(
        [
            asked,
            "how many days do i have to return an unopened item",
            "What is the battery capacity of the PB-640X power station?",
        ]
    )
    cache.store("acme", asked, vectors[0], "30 days.")
    same = cache.lookup("acme", vectors[1])
    assert same is not None and same.value == "30 days." and same.similarity >= 0.95
    assert cache.lookup("acme", vectors[2]) is None
    assert cache.lookup("globex", vectors[1]) is None  # scoped per tenant
    similarities = [
        span.attributes.get(attr.CACHE_SEMANTIC_SIMILARITY) for span in span_exporter.get_finished_spans()
    ]
    assert similarities[0] is not None and similarities[0] >= 0.95
    assert similarities[1] is not None and similarities[1] < 0.95
    assert similarities[2] is None  # the other tenant has nothing to compare with
    assert (lookups(registry, "semantic", "hit"), lookups(registry, "semantic", "miss")) == (1, 2)


def test_semantic_cache_ttl_bound_and_fallback_threshold(registry) -> None:
    clock = Clock()
    settings = CacheSettings(cache_semantic_ttl_s=60, cache_semantic_max_entries=2)
    cache: SemanticCache[str] = SemanticCache(settings, metrics=CacheMetrics.create(registry), clock=clock)
    base = unit([1.0, 0.0, 0.0])
    cache.store("t", "q1", base, "one")
    cache.store("t", "q2", unit([0.0, 1.0, 0.0]), "two")
    cache.store("t", "q3", unit([0.0, 0.0, 1.0]), "three")
    assert cache.size("t") == 2
    assert cache.lookup("t", base) is None  # the oldest entry was evicted
    near = with_cosine(base.copy(), 0.92)
    cache.store("t", "q1", base, "one")
    assert cache.lookup("t", near) is None
    fallback = cache.lookup("t", near, threshold=cache.fallback_threshold)
    assert fallback is not None and fallback.value == "one"
    clock.now += 61
    assert cache.lookup("t", base) is None and cache.size("t") == 0


def test_tenants_never_asked_again_are_forgotten(registry) -> None:
    """Entries expired only when their own tenant stored or looked up again, and a lookup left an empty
    list behind for a tenant it had never seen: every tenant name a client ever sent (a free header
    without auth) stayed in memory for good."""
    clock = Clock()
    cache: SemanticCache[str] = SemanticCache(
        CacheSettings(cache_semantic_ttl_s=60), metrics=CacheMetrics.create(registry), clock=clock
    )
    for n in range(500):
        assert cache.lookup(f"asker-{n}", unit([1.0, 0.0])) is None
    assert cache.num_tenants() == 0
    for n in range(500):
        cache.store(f"tenant-{n}", "q", unit([1.0, float(n)]), "a")
    clock.now += 30
    cache.store("late", "q", unit([1.0, 0.0]), "a")
    assert cache.num_tenants() == 501  # nothing expired yet
    clock.now += 31
    cache.store("fresh", "q", unit([1.0, 0.0]), "a")
    assert (cache.num_tenants(), cache.size("late"), cache.size("fresh")) == (2, 1, 1)


def test_the_semantic_cache_is_bounded_across_tenants(registry) -> None:
    """Entries were bounded per tenant only, and the tenant is a request header: a client naming a new
    tenant in each request kept every answer (its question with it) for the whole TTL, without bound."""
    clock = Clock()
    settings = CacheSettings(cache_semantic_max_entries=2, cache_semantic_max_total_entries=3)
    cache: SemanticCache[str] = SemanticCache(settings, metrics=CacheMetrics.create(registry), clock=clock)
    question = unit([1.0, 0.0, 0.0])
    for index in range(5):
        clock.now += 1
        cache.store(f"tenant-{index}", "q", question, f"answer {index}")
    assert (cache.num_entries(), cache.num_tenants()) == (3, 3)
    assert [cache.lookup(f"tenant-{index}", question) is not None for index in range(5)] == [
        False, False, True, True, True,
    ]  # fmt: skip  # the oldest stored went first
    # a tenant's own bound still evicts its least recently used, and the total counts what is left
    cache.store("tenant-4", "q2", unit([0.0, 1.0, 0.0]), "another")
    cache.store("tenant-4", "q3", unit([0.0, 0.0, 1.0]), "a third")
    assert (cache.size("tenant-4"), cache.num_entries()) == (2, 3)
    clock.now += settings.cache_semantic_ttl_s + 10
    assert cache.lookup("tenant-4", question) is None
    assert cache.num_entries() == 1  # tenant-4's expired (tenant-3's goes with the next store)
    cache.store("tenant-5", "q", question, "fresh")
    assert (cache.num_entries(), cache.num_tenants()) == (1, 1)
