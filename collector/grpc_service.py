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
from evallens.auth import AuthError, AuthGate, RateLimited, Scope, metadata_headers
from evallens.telemetry import attributes as attr

AUTH_STATUS = {
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    503: grpc.StatusCode.UNAVAILABLE,
}


class TraceService(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
    """``Export`` answers once the spans are durable; UNAVAILABLE (retryable) when they cannot be."""

    def __init__(self, receiver: TraceReceiver, gate: AuthGate | None = None) -> None:
        self._receiver, self._gate = receiver, gate

    def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:  # noqa: N802
        """Store the spans of one export request (in the project of its API key when auth is on)."""
        project = self._admit(context)
        try:
            self._receiver.ingestor.check_admission()
            batch, future = self._receiver.accept(request, request.ByteSize(), project)
            future.result()
        except Refused as error:
            context.abort(grpc.StatusCode.UNAVAILABLE, str(error))
        except WriteFailed as error:
            context.abort(grpc.StatusCode.INTERNAL, f"PostgreSQL refused the spans: {error}")
        return export_response(batch)

    def _admit(self, context: Any) -> str | None:
        if self._gate is None or not self._gate.enabled:
            return None
        try:
            principal = self._gate.admit(metadata_headers(context.invocation_metadata()), Scope.INGEST)
        except AuthError as error:
            if isinstance(error, RateLimited):
                context.set_trailing_metadata(((attr.HEADER_RETRY_AFTER, str(error.retry_after_s)),))
            context.abort(AUTH_STATUS[error.status], str(error))
        return principal.project if principal is not None else None


def create_grpc_server(
    receiver: TraceReceiver,
    address: str,
    workers: int,
    max_message_bytes: int,
    gate: AuthGate | None = None,
) -> tuple[Any, int]:
    """A started-able gRPC server bound to ``address`` (port 0 picks one) and the port it got."""
    server = grpc.server(
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="collector-grpc"),
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.so_reuseport", 0),
        ],
    )
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(TraceService(receiver, gate), server)
    port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot bind OTLP/gRPC to {address}")
    return server, port
