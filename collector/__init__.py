"""OTLP trace collector: receive, decode and store spans; scrape Prometheus metrics.

``Collector(settings, database_url)`` builds the whole process (``start_in_background`` for tests);
``create_app`` and ``create_grpc_server`` build the receivers alone around a ``TraceReceiver``.
Names load on first use, so a decode worker importing ``collector.workers`` starts without the
servers and the database layer.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collector.api import create_app
    from collector.commands import run_collector
    from collector.decode import decode_request
    from collector.grpc_service import create_grpc_server
    from collector.receive import TraceReceiver
    from collector.records import DecodedBatch, SpanRecord
    from collector.runtime import Collector
    from collector.validate import SpanLimits

_HOMES = {
    "Collector": "collector.runtime",
    "DecodedBatch": "collector.records",
    "SpanLimits": "collector.validate",
    "SpanRecord": "collector.records",
    "TraceReceiver": "collector.receive",
    "create_app": "collector.api",
    "create_grpc_server": "collector.grpc_service",
    "decode_request": "collector.decode",
    "run_collector": "collector.commands",
}
__all__ = [
    "Collector",
    "DecodedBatch",
    "SpanLimits",
    "SpanRecord",
    "TraceReceiver",
    "create_app",
    "create_grpc_server",
    "decode_request",
    "run_collector",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'collector' has no attribute {name!r}")
    return getattr(import_module(_HOMES[name]), name)
