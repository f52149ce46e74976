"""Telemetry conventions shared by the service, the collector and the eval engine."""

from evallens.telemetry import attributes
from evallens.telemetry.cost import Price, gpu_time_cost_usd, token_cost_usd

__all__ = ["Price", "attributes", "gpu_time_cost_usd", "token_cost_usd"]
