"""The Prometheus counter both caches report to."""

from dataclasses import dataclass
from typing import Any

from evallens.telemetry import metrics


@dataclass(frozen=True)
class CacheMetrics:
    """``evallens_cache_lookups_total{cache, result, project}``; pass part 1's counter if it made one.

    ``project`` is the project whose caches were asked (the API key's; the default project without auth),
    never a request header: its values are the projects an operator made keys for, so they stay few."""

    lookups: Any  # prometheus_client.Counter

    @classmethod
    def create(cls, registry: Any = None) -> "CacheMetrics":
        """Register the counter on ``registry`` (a ``CollectorRegistry``; None: a private one)."""
        from prometheus_client import CollectorRegistry, Counter

        counter = Counter(
            metrics.CACHE_LOOKUPS,
            "Answer-cache lookups by cache, result and project.",
            ["cache", "result", "project"],
            registry=registry if registry is not None else CollectorRegistry(),
        )
        return cls(lookups=counter)

    def count(self, cache: str, hit: bool, *, project: str) -> None:
        """Count one lookup in ``project``'s caches."""
        self.lookups.labels(cache=cache, result="hit" if hit else "miss", project=project).inc()
