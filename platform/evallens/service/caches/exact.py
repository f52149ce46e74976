"""Exact answer cache: a normalized request maps to its response, per project and tenant, with TTL and
an LRU bound per project."""

import hashlib
import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from opentelemetry import trace

from evallens.service.caches._metrics import CacheMetrics
from evallens.settings import CacheSettings
from evallens.telemetry import attributes as attr

V = TypeVar("V")
TRACER_NAME = "evallens.service.caches"
# Request fields that change the answer; everything else (stream, user, stream_options...) does not.
ANSWER_FIELDS = ("model", "temperature", "top_p", "max_tokens", "seed", "stop", "n", "retrieval")
_SPACE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """Collapse whitespace and trim: requests that differ only in spacing share an entry."""
    return _SPACE.sub(" ", text).strip()


def request_key(
    request: Mapping[str, Any],
    *,
    project: str,
    tenant: str,
    config_fingerprint: str = "",
    knowledge_base: str = "",
) -> str:
    """Hash of the answer-relevant part of a chat request, the project that asked, its tenant, the
    service config and the state of the knowledge base the answer reads (empty without retrieval)."""
    messages = [
        {"role": message.get("role"), "content": normalize_text(str(message.get("content") or ""))}
        for message in request.get("messages", [])
    ]
    fields = {name: request.get(name) for name in ANSWER_FIELDS if request.get(name) is not None}
    payload = json.dumps(
        {
            "project": project,
            "tenant": tenant,
            "config": config_fingerprint,
            "knowledge_base": knowledge_base,
            "messages": messages,
            **fields,
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


class ExactCache(Generic[V]):
    """Key -> value with a time to live and a bound on entries per project (its least recently used goes
    first): one project's traffic never evicts another's entries."""

    name = "exact"

    def __init__(
        self,
        settings: CacheSettings,
        *,
        metrics: CacheMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        tracer: trace.Tracer | None = None,
    ) -> None:
        self.enabled = settings.cache_exact_enabled
        self._ttl_s = settings.cache_exact_ttl_s
        self._max_entries = settings.cache_exact_max_entries
        self._metrics = metrics or CacheMetrics.create()
        self._clock = clock
        self._tracer = tracer or trace.get_tracer(TRACER_NAME)
        # one LRU per project: a bound shared by all let one project's distinct questions evict every
        # other project's answers
        self._projects: dict[str, OrderedDict[str, tuple[float, V]]] = {}
        self._lock = threading.Lock()

    def config(self) -> dict[str, Any]:
        """Parameters that change answers, for ``/v1/config``."""
        return {"exact_cache": self.enabled}

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._projects.values())

    def size(self, project: str) -> int:
        """Entries held for ``project``."""
        return len(self._projects.get(project, ()))

    def get(self, key: str, *, project: str = "") -> V | None:
        """The value cached for ``key`` in ``project``'s entries, or None; a span ``cache.exact`` records
        hit or miss."""
        if not self.enabled:
            return None
        with self._tracer.start_as_current_span(attr.SPAN_CACHE_EXACT) as span:
            now = self._clock()
            with self._lock:
                entry = self._fresh(project, key, now)
            hit = entry is not None
            span.set_attributes({attr.CACHE_NAME: self.name, attr.CACHE_HIT: hit, attr.CACHE_EXACT_HIT: hit})
            self._metrics.count(self.name, hit, project=project)
            return entry[1] if entry is not None else None

    def put(self, key: str, value: V, *, project: str = "") -> None:
        """Store ``value`` under ``key`` in ``project``'s entries, evicting the project's least recently
        used entry past the bound."""
        if not self.enabled:
            return
        with self._lock:
            entries = self._projects.setdefault(project, OrderedDict())
            entries[key] = (self._clock(), value)
            entries.move_to_end(key)
            while len(entries) > self._max_entries:
                entries.popitem(last=False)

    def _fresh(self, project: str, key: str, now: float) -> tuple[float, V] | None:
        """``project``'s live entry under ``key``, now its most recently used; an expired one goes."""
        entries = self._projects.get(project)
        if entries is None or (entry := entries.get(key)) is None:
            return None
        if now - entry[0] > self._ttl_s:
            del entries[key]
            if not entries:  # a project with nothing left is forgotten
                del self._projects[project]
            return None
        entries.move_to_end(key)
        return entry
