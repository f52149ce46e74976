"""The circuit breaker opens on a high error rate, refuses, probes half-open, and closes again."""

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from evallens.service.guards import BreakerOpen, BreakerState, CircuitBreaker, GuardMetrics
from evallens.settings import GuardSettings
from evallens.telemetry import metrics
from tests.evallens.service.conftest import Clock

SETTINGS = GuardSettings(
    breaker_window_s=30,
    breaker_min_calls=4,
    breaker_error_rate=0.5,
    breaker_open_s=10,
    breaker_half_open_probes=2,
)


def current(breaker: CircuitBreaker) -> BreakerState:
    """The state, read through a call so the type checker does not narrow it between checks."""
    return breaker.state


def gauge(registry: CollectorRegistry, name: str) -> float | None:
    value: float | None = registry.get_sample_value(metrics.BREAKER_STATE, {"breaker": name})
    return value


def test_breaker_opens_and_closes(
    clock: Clock, registry: CollectorRegistry, guard_metrics: GuardMetrics
) -> None:
    breaker = CircuitBreaker("engine", SETTINGS, metrics=guard_metrics, clock=clock)
    assert current(breaker) is BreakerState.CLOSED and gauge(registry, "engine") == 0

    for ok in (True, False, False):  # 3 calls: fewer than min_calls, stays closed at 67% errors
        assert breaker.allow()
        breaker.record_success() if ok else breaker.record_failure()
    assert current(breaker) is BreakerState.CLOSED
    breaker.record_failure()  # 4 calls, 75% errors
    assert current(breaker) is BreakerState.OPEN
    assert gauge(registry, "engine") == 2
    assert not breaker.allow()

    clock.now += 9.9
    assert not breaker.allow()
    clock.now += 0.2
    assert current(breaker) is BreakerState.HALF_OPEN and gauge(registry, "engine") == 1
    assert breaker.allow() and breaker.allow()
    assert not breaker.allow()  # only two probes at a time
    breaker.record_success()
    assert current(breaker) is BreakerState.HALF_OPEN
    breaker.record_success()
    assert current(breaker) is BreakerState.CLOSED and gauge(registry, "engine") == 0
    assert breaker.error_rate() == 0.0  # the window starts afresh


def test_a_failed_probe_reopens(clock: Clock, guard_metrics: GuardMetrics) -> None:
    breaker = CircuitBreaker("retrieval", SETTINGS, metrics=guard_metrics, clock=clock)
    for _ in range(4):
        breaker.record_failure()
    clock.now += 10
    assert breaker.allow()
    breaker.record_failure()
    assert current(breaker) is BreakerState.OPEN
    clock.now += 5
    assert not breaker.allow()


def test_old_outcomes_leave_the_window(clock: Clock, guard_metrics: GuardMetrics) -> None:
    breaker = CircuitBreaker("retrieval", SETTINGS, metrics=guard_metrics, clock=clock)
    for _ in range(3):
        breaker.record_failure()
    clock.now += 31
    for _ in range(3):
        breaker.record_success()
    breaker.record_failure()
    # Inside the window: 3 successes and 1 failure -> 25%, closed. Without trimming it would be 57%.
    assert current(breaker) is BreakerState.CLOSED
    assert breaker.error_rate() == pytest.approx(0.25)


def test_call_counts_exceptions_and_refuses_when_open(clock: Clock, guard_metrics: GuardMetrics) -> None:
    breaker = CircuitBreaker("engine", SETTINGS, metrics=guard_metrics, clock=clock)

    async def fail() -> str:
        raise RuntimeError("engine down")

    async def succeed() -> str:
        return "ok"

    async def scenario() -> None:
        assert await breaker.call(succeed) == "ok"
        for _ in range(3):
            with pytest.raises(RuntimeError):
                await breaker.call(fail)
        with pytest.raises(BreakerOpen):
            await breaker.call(succeed)
        clock.now += 10
        assert await breaker.call(succeed) == "ok"
        assert await breaker.call(succeed) == "ok"

    asyncio.run(scenario())
    assert current(breaker) is BreakerState.CLOSED
