"""Guards of the reference service: circuit breakers, degradation, scope and safety (time budgets are
``evallens.service.budgets``)."""

from evallens.service.guards._metrics import GuardMetrics
from evallens.service.guards.breaker import BreakerOpen, BreakerState, CircuitBreaker
from evallens.service.guards.degrade import (
    ENGINE_UNAVAILABLE_MESSAGE,
    EngineGuard,
    EngineOutcome,
    RetrievalGuard,
    RetrievalOutcome,
    ServiceUnavailable,
)
from evallens.service.guards.safety import REFUSAL_MESSAGE, SafetyGuard, SafetyVerdict
from evallens.service.guards.scope import OUT_OF_SCOPE_MESSAGE, ScopeGuard, ScopeVerdict

__all__ = [
    "ENGINE_UNAVAILABLE_MESSAGE",
    "OUT_OF_SCOPE_MESSAGE",
    "REFUSAL_MESSAGE",
    "BreakerOpen",
    "BreakerState",
    "CircuitBreaker",
    "EngineGuard",
    "EngineOutcome",
    "GuardMetrics",
    "RetrievalGuard",
    "RetrievalOutcome",
    "SafetyGuard",
    "SafetyVerdict",
    "ScopeGuard",
    "ScopeVerdict",
    "ServiceUnavailable",
]
