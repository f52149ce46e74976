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


class _Project(Generic[V]):
    """One project's entries, by tenant, and the order they were stored in (bounded on their own)."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self.tenants: dict[str, list[_Entry[V]]] = {}
        self.num_entries = 0  # in all its tenants
        # (time stored, tenant, entry number) of every store, oldest first: what may have expired since,
        # in any tenant, and what goes first when all tenants together hold too many
        self.stores: deque[tuple[float, str, int]] = deque()

    def expire(self, now: float) -> None:
        """Drop expired entries of every tenant that stored one (and tenants left with none): a tenant
        never asked again would otherwise keep its entries for good."""
        while self.stores and now - self.stores[0][0] > self.ttl_s:
            _, tenant, _ = self.stores.popleft()
            self.live(tenant, now)

    def evict_oldest(self) -> None:
        """Drop the oldest stored entry of any tenant."""
        _, owner, oldest = self.stores.popleft()
        self.keep(owner, [entry for entry in self.tenants.get(owner, []) if entry.number != oldest])

    def live(self, tenant: str, now: float) -> list[_Entry[V]]:
        entries = [entry for entry in self.tenants.get(tenant, []) if now - entry.created_at <= self.ttl_s]
        self.keep(tenant, entries)
        return entries

    def keep(self, tenant: str, entries: list[_Entry[V]]) -> None:
        """Hold ``entries`` as ``tenant``'s, counted in the total."""
        self.num_entries += len(entries) - len(self.tenants.get(tenant, ()))
        if entries:
            self.tenants[tenant] = entries
        else:  # a tenant with nothing live is forgotten: names asked once must not pile up
            self.tenants.pop(tenant, None)


class SemanticCache(Generic[V]):
    """Per-tenant store of (question embedding, answer) in each project; embeddings must be unit length.
    Each project is bounded on its own: one project's traffic never evicts another's entries."""

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
        self._max_project_entries = settings.cache_semantic_max_total_entries
        self._metrics = metrics or CacheMetrics.create()
        self._clock = clock
        self._tracer = tracer or trace.get_tracer(TRACER_NAME)
        # a bound over all projects let one project's questions (or tenant names) evict every other's
        self._projects: dict[str, _Project[V]] = {}
        self._numbers = itertools.count()
        self._lock = threading.Lock()

    def config(self) -> dict[str, Any]:
        """Parameters that change answers, for ``/v1/config``."""
        return {"semantic_cache": self.enabled, "semantic_cache_threshold": self.threshold}

    def size(self, tenant: str, *, project: str = "") -> int:
        """Live entries of ``tenant`` in ``project``."""
        held = self._projects.get(project)
        return 0 if held is None else len(held.tenants.get(tenant, []))

    def num_tenants(self) -> int:
        """Tenants the cache holds entries for, in all projects."""
        return sum(len(held.tenants) for held in self._projects.values())

    def num_entries(self, project: str | None = None) -> int:
        """Entries the cache holds for ``project`` in all its tenants (None: in all projects)."""
        if project is not None:
            return self._projects[project].num_entries if project in self._projects else 0
        return sum(held.num_entries for held in self._projects.values())

    def lookup(
        self,
        tenant: str,
        embedding: Vector,
        *,
        project: str = "",
        threshold: float | None = None,
        variant: str | None = None,
    ) -> SemanticHit[V] | None:
        """The most similar cached answer of ``tenant`` in ``project`` at or above ``threshold`` (default:
        the setting), among those stored under ``variant`` (None: any)."""
        if not self.enabled:
            return None
        bar = self.threshold if threshold is None else threshold
        with self._tracer.start_as_current_span(attr.SPAN_CACHE_SEMANTIC) as span:
            now = self._clock()
            with self._lock:
                held = self._projects.get(project)
                entries = [
                    entry
                    for entry in (held.live(tenant, now) if held is not None else [])
                    if variant is None or entry.variant == variant
                ]
                self._forget_if_empty(project)
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
            self._metrics.count(self.name, hit, project=project)
            return SemanticHit(best.value, similarity, best.question) if best is not None else None

    def store(
        self,
        tenant: str,
        question: str,
        embedding: Vector,
        value: V,
        *,
        project: str = "",
        variant: str = "",
    ) -> None:
        """Remember ``value`` as the answer to ``question`` for ``tenant`` of ``project``, made with
        ``variant`` (what else than the question shaped the answer); the tenant's least recently used
        goes, and past the bound of the project's tenants together, the project's oldest stored."""
        if not self.enabled:
            return
        now = self._clock()
        with self._lock:
            self._expire(now)
            held = self._projects.setdefault(project, _Project(self._ttl_s))
            number = next(self._numbers)
            vector = np.asarray(embedding, dtype=np.float32)
            # a new list: ``keep`` counts the change against the one held
            entries = [*held.live(tenant, now), _Entry(question, vector, value, now, now, variant, number)]
            held.stores.append((now, tenant, number))
            if len(entries) > self._max_entries:
                entries.sort(key=lambda entry: entry.used_at)
                del entries[: len(entries) - self._max_entries]
            held.keep(tenant, entries)
            while held.num_entries > self._max_project_entries:
                held.evict_oldest()

    def clear(self, tenant: str | None = None, *, project: str = "") -> None:
        """Forget one tenant's entries in ``project``, or everyone's in every project."""
        with self._lock:
            if tenant is None:
                self._projects.clear()
            elif (held := self._projects.get(project)) is not None:
                held.keep(tenant, [])
                self._forget_if_empty(project)

    def _expire(self, now: float) -> None:
        """Drop expired entries of every project (and projects left with none)."""
        for project, held in list(self._projects.items()):
            held.expire(now)
            self._forget_if_empty(project)

    def _forget_if_empty(self, project: str) -> None:
        held = self._projects.get(project)
        if held is not None and not held.tenants:
            del self._projects[project]
