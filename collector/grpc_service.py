"""OTLP/gRPC: the same decode and write path as HTTP, behind ``TraceServiceServicer``."""

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from collector.pipeline import Refused, WriteFailed
from collector.receive import TraceReceiver, export_response


class TraceService(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
    """``Export`` answers once the spans are durable; UNAVAILABLE (retryable) when they cannot be."""

    def __init__(self, receiver: TraceReceiver) -> None:
        self._receiver = receiver

    def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:  # noqa: N802
        """Store the spans of one export request."""
        try:
            self._receiver.ingestor.check_admission()
            batch, future = self._receiver.accept(request, request.ByteSize())
            future.result()
        except Refused as error:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(error))
        except WriteFailed as error:
            context.abort(grpc.StatusCode.INTERNAL, f"PostgreSQL refused the spans: {error}")
        return export_response(batch)


def create_grpc_server(
    receiver: TraceReceiver, address: str, workers: int, max_message_bytes: int
) -> tuple[Any, int]:
    """A started-able gRPC server bound to ``address`` (port 0 picks one) and the port it got."""
    server = grpc.server(
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="collector-grpc"),
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.so_reuseport", 0),
        ],
    )
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(TraceService(receiver), server)
    port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot bind OTLP/gRPC to {address}")
    return server, port
