"""OTLP trace collector: receive, decode and store spans; scrape Prometheus metrics.

``Collector(settings, database_url)`` builds the whole process (``start_in_background`` for tests);
``create_app`` and ``create_grpc_server`` build the receivers alone around a ``TraceReceiver``.
"""

from collector.api import create_app
from collector.commands import run_collector
from collector.decode import SpanLimits, decode_request
from collector.grpc_service import create_grpc_server
from collector.receive import TraceReceiver
from collector.records import DecodedBatch, SpanRecord
from collector.runtime import Collector

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
