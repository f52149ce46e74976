"""The Prometheus counter both caches report to."""

from dataclasses import dataclass
from typing import Any

from evallens.telemetry import metrics


@dataclass(frozen=True)
class CacheMetrics:
    """``evallens_cache_lookups_total{cache, result}``; pass part 1's counter if it already made one."""

    lookups: Any  # prometheus_client.Counter

    @classmethod
    def create(cls, registry: Any = None) -> "CacheMetrics":
        """Register the counter on ``registry`` (a ``CollectorRegistry``; None: a private one)."""
        from prometheus_client import CollectorRegistry, Counter

        counter = Counter(
            metrics.CACHE_LOOKUPS,
            "Answer-cache lookups by cache and result.",
            ["cache", "result"],
            registry=registry if registry is not None else CollectorRegistry(),
        )
        return cls(lookups=counter)

    def count(self, cache: str, hit: bool) -> None:
        """Count one lookup."""
        self.lookups.labels(cache=cache, result="hit" if hit else "miss").inc()
