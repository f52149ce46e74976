"""Prometheus series of the guards: breaker state and degraded answers."""

from dataclasses import dataclass
from typing import Any

from evallens.telemetry import metrics


@dataclass(frozen=True)
class GuardMetrics:
    """``evallens_breaker_state{breaker}`` (0 closed, 1 half-open, 2 open) and
    ``evallens_degraded_total{reason}``; pass part 1's if it already made them."""

    breaker_state: Any  # prometheus_client.Gauge
    degraded: Any  # prometheus_client.Counter

    @classmethod
    def create(cls, registry: Any = None) -> "GuardMetrics":
        """Register both on ``registry`` (a ``CollectorRegistry``; None: a private one)."""
        from prometheus_client import CollectorRegistry, Counter, Gauge

        target = registry if registry is not None else CollectorRegistry()
        return cls(
            breaker_state=Gauge(
                metrics.BREAKER_STATE,
                "Circuit breaker state: 0 closed, 1 half-open, 2 open.",
                ["breaker"],
                registry=target,
            ),
            degraded=Counter(
                metrics.DEGRADED, "Answers given in a degraded mode, by reason.", ["reason"], registry=target
            ),
        )
