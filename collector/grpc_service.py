"""OTLP/gRPC: the same admission, worker-pool decode and write path as HTTP.

``Export`` is registered with no request deserializer: the gRPC thread hands the raw message bytes to
the decode pool instead of building a protobuf tree itself. It is registered as taking a stream of
requests, which is the same on the wire as a unary call, so that the API key (in the call's metadata)
is checked before its worker waits for the message: a unary handler is called only once the message is
in. Refusals carry a ``retry-after`` and a ``google.rpc.retryinfo-bin`` trailer, which OpenTelemetry
exporters honour.
"""

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn
from urllib.parse import unquote

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo

from collector._body import BadEncoding, BodyTooLarge
from collector.log_store import DatabaseUnavailable, LogReceiver
from collector.otlp_json import MalformedRequest
from collector.pipeline import Overloaded, Refused
from collector.receive import TraceReceiver, export_response
from collector.slots import RequestSlots, SlotsTaken
from collector.validate import SpansTooLarge, TooManyRecords
from collector.workers import DecoderBusy, WorkerLost
from evallens.auth import AuthError, AuthGate, KeyLookups, Scope, metadata_headers
from evallens.telemetry import attributes as attr

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
AUTH_STATUS = {
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    500: grpc.StatusCode.INTERNAL,  # PostgreSQL refused the lookup
    503: grpc.StatusCode.UNAVAILABLE,
}
RETRY_INFO_KEY = "google.rpc.retryinfo-bin"


class TraceService:
    """``Export`` answers once the spans are durable; retryable codes (with a delay) when they cannot be."""

    def __init__(
        self, receiver: TraceReceiver, gate: AuthGate | None, lookups: KeyLookups, slots: RequestSlots
    ) -> None:
        self._receiver, self._gate, self._lookups, self._slots = receiver, gate, lookups, slots

    def export(self, messages: Iterator[bytes], context: Any) -> bytes:
        """Store the spans of one serialized export request (in its API key's project when auth is on)."""
        project = admit(self._gate, self._lookups, context)
        return in_slot(self._slots, project, context, lambda: self._export(messages, context, project))

    def _export(self, messages: Iterator[bytes], context: Any, project: str | None) -> bytes:
        body = only_message(messages, context)
        receiver = self._receiver
        try:
            with receiver.admit(len(body), project):
                decoded = receiver.pool.decode_blocking(receiver.job(body, "protobuf", False, project))
            durable = receiver.queue(decoded, project).result()
        except (MalformedRequest, BadEncoding, TooManyRecords, SpansTooLarge) as error:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        except (Refused, DecoderBusy, WorkerLost) as error:
            receiver.refused(error)
            busy = isinstance(error, Overloaded | DecoderBusy)
            code = grpc.StatusCode.RESOURCE_EXHAUSTED if busy else grpc.StatusCode.UNAVAILABLE
            abort_with_retry(context, code, str(error), error.retry_after_s)
        return bytes(export_response(decoded, durable).SerializeToString())


class LogsService:
    """``Export`` of logs: stores the GenAI content events, answering once they are committed."""

    def __init__(
        self,
        receiver: TraceReceiver,
        log_receiver: LogReceiver,
        gate: AuthGate | None,
        lookups: KeyLookups,
        slots: RequestSlots,
    ) -> None:
        self._receiver, self._log_receiver = receiver, log_receiver
        self._gate, self._lookups, self._slots = gate, lookups, slots

    def export(self, messages: Iterator[bytes], context: Any) -> bytes:
        """Store the content events of one serialized logs request (in its API key's project)."""
        project = admit(self._gate, self._lookups, context)
        return in_slot(self._slots, project, context, lambda: self._export(messages, context, project))

    def _export(self, messages: Iterator[bytes], context: Any, project: str | None) -> bytes:
        body = only_message(messages, context)
        pool = self._receiver.pool
        try:
            with pool.reserve(len(body), project):
                batch = pool.decode_logs_blocking(self._log_receiver.job(body, "protobuf", False, project))
                answer = self._log_receiver.submit(batch).result()
        except (MalformedRequest, BadEncoding, BodyTooLarge, TooManyRecords) as error:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        except DecoderBusy as error:
            abort_with_retry(context, grpc.StatusCode.RESOURCE_EXHAUSTED, str(error), error.retry_after_s)
        except (DatabaseUnavailable, WorkerLost) as error:
            abort_with_retry(context, grpc.StatusCode.UNAVAILABLE, str(error), error.retry_after_s)
        return bytes(answer.SerializeToString())


def admit(gate: AuthGate | None, lookups: KeyLookups, context: Any) -> str | None:
    """The project of the call's API key (None with auth off), or the call aborted with why.

    A key the gate does not know is looked up only while the call's client address has attempts left
    and a lookup slot is free (``lookups``)."""
    if gate is None or not gate.enabled:
        return None
    headers = metadata_headers(context.invocation_metadata())
    try:
        principal = gate.admit_cached(headers, Scope.INGEST)
        if principal is None:
            with lookups.lookup(peer_address(context.peer())):
                principal = gate.admit(headers, Scope.INGEST)
    except AuthError as error:
        retry_after_s = getattr(error, "retry_after_s", None)
        if retry_after_s is not None:
            abort_with_retry(context, AUTH_STATUS[error.status], str(error), retry_after_s)
        context.abort(AUTH_STATUS[error.status], str(error))
    return principal.project if principal is not None else None


def in_slot(slots: RequestSlots, project: str | None, context: Any, serve: Callable[[], bytes]) -> bytes:
    """``serve()`` holding one of ``slots`` (taken once the call's key is accepted), or the call aborted
    saying when to retry: RESOURCE_EXHAUSTED when its project holds its share, else UNAVAILABLE."""
    try:
        with slots.take(project):
            return serve()
    except SlotsTaken as error:
        code = grpc.StatusCode.RESOURCE_EXHAUSTED if error.share_taken else grpc.StatusCode.UNAVAILABLE
        abort_with_retry(context, code, str(error), error.retry_after_s)


def peer_address(peer: str) -> str:
    """The address in a gRPC peer (``ipv4:10.0.0.7:51234``, ``ipv6:%5B::1%5D:51234``) as HTTP gives it
    (``10.0.0.7``, ``::1``), so that one client has one budget over both; other peers as they are."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return peer
    return unquote(rest).rpartition(":")[0].removeprefix("[").removesuffix("]")


def only_message(messages: Iterator[bytes], context: Any) -> bytes:
    """The one request message of a unary call (read after its key is checked)."""
    body = next(messages, None)
    if body is None:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the call sent no request message")
        raise AssertionError("context.abort raises")  # for the type checker
    return body


def abort_with_retry(context: Any, code: grpc.StatusCode, message: str, retry_after_s: int) -> NoReturn:
    """End the call with ``code`` and say when to retry, as a header and as ``google.rpc.RetryInfo``."""
    retry_info = RetryInfo(retry_delay=Duration(seconds=retry_after_s))
    context.set_trailing_metadata(
        ((attr.HEADER_RETRY_AFTER, str(retry_after_s)), (RETRY_INFO_KEY, retry_info.SerializeToString()))
    )
    context.abort(code, message)
    raise AssertionError("context.abort raises")  # for the type checker


def create_grpc_server(
    receiver: TraceReceiver,
    address: str,
    workers: int,
    max_message_bytes: int,
    gate: AuthGate | None = None,
    max_concurrent_rpcs: int | None = None,
    log_receiver: LogReceiver | None = None,
    connection_age_s: tuple[float, float] = (60.0, 30.0),
    *,
    lookups: KeyLookups,
    project_share: float = 1.0,
    retry_after_s: int = 2,
) -> tuple[Any, int]:
    """A started-able gRPC server bound to ``address`` (port 0 picks one) and the port it got.

    A call takes one of ``max_concurrent_rpcs`` slots, and of ``workers`` (a call is served in a
    worker thread), once its key is accepted; one project holds at most ``project_share`` of them.
    Beyond, the call is answered UNAVAILABLE, or RESOURCE_EXHAUSTED for a project holding its share,
    each with a retry delay. Calls waiting for a worker are not counted (gRPC's own limit counted
    them, keyless ones too, and refused with no retry delay); each holds no more of its message than
    its stream's window (BDP probing off), as a waiting HTTP connection holds its read buffer. Messages
    not yet counted in the decode budget are those of the ``workers`` calls being read. A call whose
    key is accepted waits for its message in a worker thread, with no deadline of its own: connections
    are asked to close after ``connection_age_s[0]`` and closed ``connection_age_s[1]`` later, so a call
    that never sends its message holds its worker for that long at most, not for as long as its client
    likes.
    """
    max_age_s, grace_s = connection_age_s
    limit = workers if max_concurrent_rpcs is None else min(max_concurrent_rpcs, workers)
    slots = RequestSlots(limit, retry_after_s, project_share)
    server = grpc.server(
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="collector-grpc"),
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.so_reuseport", 0),
            ("grpc.max_connection_age_ms", round(max_age_s * 1000)),
            ("grpc.max_connection_age_grace_ms", round(grace_s * 1000)),
            # a call's message is read whole only once a worker takes the call: with BDP probing,
            # gRPC let every waiting call's stream buffer up to 16 MiB beforehand, outside the decode
            # budget (128 waiting 16 MiB exports took the collector from 116 MiB to 1.5 GiB)
            ("grpc.http2.bdp_probe", 0),
        ],
    )
    service = TraceService(receiver, gate, lookups, slots)
    export = grpc.stream_unary_rpc_method_handler(service.export)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {"Export": export}),))
    if log_receiver is not None:
        logs = grpc.stream_unary_rpc_method_handler(
            LogsService(receiver, log_receiver, gate, lookups, slots).export
        )
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(LOGS_SERVICE, {"Export": logs}),)
        )
    port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot bind OTLP/gRPC to {address}")
    return server, port
