"""Fixtures for the guard tests (the clock, registry and span capture live one folder up)."""

import pytest
from prometheus_client import CollectorRegistry

from evallens.service.guards import GuardMetrics


@pytest.fixture
def guard_metrics(registry: CollectorRegistry) -> GuardMetrics:
    return GuardMetrics.create(registry)
