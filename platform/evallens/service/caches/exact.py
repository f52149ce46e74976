"""Exact answer cache: a normalized request maps to its response, per project and tenant, with TTL and
LRU bound."""

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
    """Key -> value with a time to live and a bound on entries (least recently used goes first)."""

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
        self._entries: OrderedDict[str, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def config(self) -> dict[str, Any]:
        """Parameters that change answers, for ``/v1/config``."""
        return {"exact_cache": self.enabled}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> V | None:
        """The cached value for ``key``, or None; a span ``cache.exact`` records hit or miss."""
        if not self.enabled:
            return None
        with self._tracer.start_as_current_span(attr.SPAN_CACHE_EXACT) as span:
            now = self._clock()
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None and now - entry[0] > self._ttl_s:
                    del self._entries[key]
                    entry = None
                if entry is not None:
                    self._entries.move_to_end(key)
            hit = entry is not None
            span.set_attributes({attr.CACHE_NAME: self.name, attr.CACHE_HIT: hit, attr.CACHE_EXACT_HIT: hit})
            self._metrics.count(self.name, hit)
            return entry[1] if entry is not None else None

    def put(self, key: str, value: V) -> None:
        """Store ``value`` under ``key``, evicting the least recently used entry past the bound."""
        if not self.enabled:
            return
        with self._lock:
            self._entries[key] = (self._clock(), value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
