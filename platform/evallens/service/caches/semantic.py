"""Semantic answer cache: a question close enough (cosine >= threshold) to an answered one, per tenant."""

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt
from opentelemetry import trace

from evallens.service.caches._metrics import CacheMetrics
from evallens.settings import CacheSettings
from evallens.telemetry import attributes as attr

V = TypeVar("V")
Vector = npt.NDArray[np.float32]
TRACER_NAME = "evallens.service.caches"


@dataclass
class _Entry(Generic[V]):
    question: str
    embedding: Vector
    value: V
    created_at: float
    used_at: float
    variant: str
    number: int  # which store made it (``SemanticCache._stores``)


@dataclass(frozen=True)
class SemanticHit(Generic[V]):
    """A cached answer and how similar its question was to the one asked."""

    value: V
    similarity: float
    question: str


class SemanticCache(Generic[V]):
    """Per-tenant store of (question embedding, answer); embeddings must be unit length."""

    name = "semantic"

    def __init__(
        self,
        settings: CacheSettings,
        *,
        metrics: CacheMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        tracer: trace.Tracer | None = None,
    ) -> None:
        self.enabled = settings.cache_semantic_enabled
        self.threshold = settings.cache_semantic_threshold
        self.fallback_threshold = settings.cache_semantic_fallback_threshold
        self._ttl_s = settings.cache_semantic_ttl_s
        self._max_entries = settings.cache_semantic_max_entries
        self._max_total_entries = settings.cache_semantic_max_total_entries
        self._metrics = metrics or CacheMetrics.create()
        self._clock = clock
        self._tracer = tracer or trace.get_tracer(TRACER_NAME)
        self._tenants: dict[str, list[_Entry[V]]] = {}
        self._num_entries = 0  # in all tenants
        # (time stored, tenant, entry number) of every store, oldest first: what may have expired since,
        # in any tenant, and what goes first when all tenants together hold too many
        self._stores: deque[tuple[float, str, int]] = deque()
        self._numbers = itertools.count()
        self._lock = threading.Lock()

    def config(self) -> dict[str, Any]:
        """Parameters that change answers, for ``/v1/config``."""
        return {"semantic_cache": self.enabled, "semantic_cache_threshold": self.threshold}

    def size(self, tenant: str) -> int:
        """Live entries of ``tenant``."""
        return len(self._tenants.get(tenant, []))

    def num_tenants(self) -> int:
        """Tenants the cache holds entries for."""
        return len(self._tenants)

    def num_entries(self) -> int:
        """Entries the cache holds, in all tenants."""
        return self._num_entries

    def lookup(
        self, tenant: str, embedding: Vector, *, threshold: float | None = None, variant: str | None = None
    ) -> SemanticHit[V] | None:
        """The most similar cached answer of ``tenant`` at or above ``threshold`` (default: the setting),
        among those stored under ``variant`` (None: any)."""
        if not self.enabled:
            return None
        bar = self.threshold if threshold is None else threshold
        with self._tracer.start_as_current_span(attr.SPAN_CACHE_SEMANTIC) as span:
            now = self._clock()
            with self._lock:
                entries = [
                    entry for entry in self._live(tenant, now) if variant is None or entry.variant == variant
                ]
                best: _Entry[V] | None = None
                similarity = -1.0
                if entries:
                    similarities = np.stack([entry.embedding for entry in entries]) @ embedding
                    index = int(np.argmax(similarities))
                    similarity = float(similarities[index])
                    if similarity >= bar:
                        best = entries[index]
                        best.used_at = now
            hit = best is not None
            span.set_attributes(
                {attr.CACHE_NAME: self.name, attr.CACHE_HIT: hit, attr.CACHE_SEMANTIC_HIT: hit}
            )
            if entries:
                span.set_attribute(attr.CACHE_SEMANTIC_SIMILARITY, similarity)
            self._metrics.count(self.name, hit)
            return SemanticHit(best.value, similarity, best.question) if best is not None else None

    def store(self, tenant: str, question: str, embedding: Vector, value: V, *, variant: str = "") -> None:
        """Remember ``value`` as the answer to ``question`` for ``tenant``, made with ``variant`` (what
        else than the question shaped the answer); the tenant's least recently used goes, and past the
        bound of all tenants together, the oldest stored of any."""
        if not self.enabled:
            return
        now = self._clock()
        with self._lock:
            self._expire(now)
            number = next(self._numbers)
            vector = np.asarray(embedding, dtype=np.float32)
            # a new list: ``_keep`` counts the change against the one held
            entries = [*self._live(tenant, now), _Entry(question, vector, value, now, now, variant, number)]
            self._stores.append((now, tenant, number))
            if len(entries) > self._max_entries:
                entries.sort(key=lambda entry: entry.used_at)
                del entries[: len(entries) - self._max_entries]
            self._keep(tenant, entries)
            while self._num_entries > self._max_total_entries:
                _, owner, oldest = self._stores.popleft()
                self._keep(owner, [entry for entry in self._tenants.get(owner, []) if entry.number != oldest])

    def clear(self, tenant: str | None = None) -> None:
        """Forget one tenant's entries, or everyone's."""
        with self._lock:
            if tenant is None:
                self._tenants.clear()
                self._stores.clear()
                self._num_entries = 0
            else:
                self._keep(tenant, [])

    def _expire(self, now: float) -> None:
        """Drop expired entries of every tenant that stored one (and tenants left with none): a tenant
        never asked again would otherwise keep its entries for good."""
        while self._stores and now - self._stores[0][0] > self._ttl_s:
            _, tenant, _ = self._stores.popleft()
            self._live(tenant, now)

    def _live(self, tenant: str, now: float) -> list[_Entry[V]]:
        entries = [entry for entry in self._tenants.get(tenant, []) if now - entry.created_at <= self._ttl_s]
        self._keep(tenant, entries)
        return entries

    def _keep(self, tenant: str, entries: list[_Entry[V]]) -> None:
        """Hold ``entries`` as ``tenant``'s, counted in the total."""
        self._num_entries += len(entries) - len(self._tenants.get(tenant, ()))
        if entries:
            self._tenants[tenant] = entries
        else:  # a tenant with nothing live is forgotten: names asked once must not pile up
            self._tenants.pop(tenant, None)
