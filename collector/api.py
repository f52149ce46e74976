"""OTLP/HTTP: content types, gzip, size caps and status codes; everything else is ``receive``'s job."""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from collector._body import BadEncoding, BodyTimeout, BodyTooLarge, read_capped
from collector.log_store import DatabaseUnavailable, LogReceiver
from collector.otlp_json import MalformedRequest, message_to_json
from collector.pipeline import Overloaded, Refused
from collector.receive import TraceReceiver, export_response
from collector.slots import RequestSlots, SlotsTaken
from collector.validate import SpansTooLarge, TooManyRecords
from collector.workers import BodyFormat, DecoderBusy, WorkerLost
from evallens.auth import AuthError, AuthGate, KeyLookups, Scope
from evallens.http_protocol import client_address

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
FORMATS: dict[str, BodyFormat] = {PROTOBUF: "protobuf", "application/protobuf": "protobuf", JSON: "json"}
AUTH_CODES = {
    401: code_pb2.UNAUTHENTICATED,
    403: code_pb2.PERMISSION_DENIED,
    429: code_pb2.RESOURCE_EXHAUSTED,
    500: code_pb2.INTERNAL,  # PostgreSQL refused the lookup
    503: code_pb2.UNAVAILABLE,
}
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


class HttpError(Exception):
    """An answer other than 200: HTTP status, ``google.rpc`` code, message and optional Retry-After."""

    def __init__(
        self, status: int, code: int, message: str, retry_after_s: int | None = None, close: bool = False
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.retry_after_s = status, code, retry_after_s
        self.close = close  # end the connection with the answer (the body may be left unread)


@dataclass(frozen=True)
class HttpLimits:
    """Largest body accepted, on the wire and after gzip, how long a body may pause and take in all."""

    max_request_bytes: int = 16 * 1024 * 1024
    body_idle_timeout_s: float = 30.0
    body_timeout_s: float = 60.0
    max_concurrent_requests: int | None = None
    retry_after_s: int = 2
    project_share: float = 0.5


def create_app(
    receiver: TraceReceiver,
    limits: HttpLimits,
    health: Callable[[], dict[str, Any]],
    gate: AuthGate | None = None,
    log_receiver: LogReceiver | None = None,
    *,
    lookups: KeyLookups,
) -> Starlette:
    """The OTLP/HTTP app: ``POST /v1/traces``, ``POST /v1/logs`` (with a ``log_receiver``),
    ``GET /metrics``, ``GET /healthz``.

    With an enabled ``gate``, posts need an ingest key and store what they carry in the key's project;
    a refused key's answer closes its connection. Keys the gate does not know are looked up within
    ``lookups`` (per client address, and at once).
    """
    slots = RequestSlots(limits.max_concurrent_requests, limits.retry_after_s, limits.project_share)

    async def traces(request: Request) -> Response:
        content_type = media_type(request.headers.get("content-type", ""))
        try:
            project = await admit(gate, lookups, request)
            with slots.take(project):
                answer = await export(request, receiver, limits, content_type, project)
        except SlotsTaken as error:
            return error_response(slots_refusal(error), content_type)
        except HttpError as error:
            return error_response(error, content_type)
        return encode(answer, content_type, 200)

    async def logs(request: Request) -> Response:
        content_type = media_type(request.headers.get("content-type", ""))
        if log_receiver is None:
            return error_response(HttpError(404, code_pb2.NOT_FOUND, "no logs receiver"), content_type)
        try:
            project = await admit(gate, lookups, request)
            with slots.take(project):
                answer = await export_logs(request, log_receiver, receiver, limits, content_type, project)
        except SlotsTaken as error:
            return error_response(slots_refusal(error), content_type)
        except HttpError as error:
            return error_response(error, content_type)
        return encode(answer, content_type, 200)

    async def metrics(_: Request) -> Response:
        return Response(receiver.stats.exposition(), media_type=PROMETHEUS_TEXT)

    async def healthz(_: Request) -> Response:
        report = health()
        return Response(orjson.dumps(report), status_code=200 if report["ok"] else 503, media_type=JSON)

    return Starlette(
        routes=[
            Route("/v1/traces", traces, methods=["POST"]),
            Route("/v1/logs", logs, methods=["POST"]),
            Route("/metrics", metrics, methods=["GET"]),
            Route("/healthz", healthz, methods=["GET"]),
        ]
    )


def slots_refusal(error: SlotsTaken) -> HttpError:
    """A post no request slot is free for: 429 when its project holds its share, else 503."""
    if error.share_taken:
        return HttpError(429, code_pb2.RESOURCE_EXHAUSTED, str(error), error.retry_after_s)
    return HttpError(503, code_pb2.UNAVAILABLE, str(error), error.retry_after_s)


async def admit(gate: AuthGate | None, lookups: KeyLookups, request: Request) -> str | None:
    """The project of the request's API key (None with auth off), before any of its body is read: a key
    the gate knows is answered here, an unknown one only while its client address has attempts left and
    a lookup slot is free."""
    if gate is None or not gate.enabled:
        return None
    try:
        principal = await lookups.admit(gate, request.headers, Scope.INGEST, client_address(request))
    except AuthError as error:
        raise HttpError(
            error.status,
            AUTH_CODES[error.status],
            str(error),
            getattr(error, "retry_after_s", None),
            close=error.status in (401, 403),  # nothing the client sends next on it would get in
        ) from None
    return principal.project if principal is not None else None


async def export(
    request: Request,
    receiver: TraceReceiver,
    limits: HttpLimits,
    content_type: str,
    project: str | None = None,
) -> Message:
    """Read one export request, decode it in the worker pool, queue it; answer once it is durable.

    The event loop only moves bytes: inflating, parsing and decoding happen in a worker process.
    """
    body_format, encoding = check_headers(request, limits, content_type)
    try:
        with receiver.admit(project=project) as reservation:
            body = await read_body(request, limits, reservation.cover)
            decoded = await receiver.pool.decode(receiver.job(body, body_format, encoding == "gzip", project))
        durable = await asyncio.wrap_future(receiver.queue(decoded, project))
    except (BodyTooLarge, TooManyRecords, SpansTooLarge) as error:
        raise HttpError(413, code_pb2.RESOURCE_EXHAUSTED, str(error)) from None
    except (BadEncoding, MalformedRequest) as error:
        raise HttpError(400, code_pb2.INVALID_ARGUMENT, str(error)) from None
    except (Refused, DecoderBusy, WorkerLost) as error:
        receiver.refused(error)
        busy = isinstance(error, Overloaded | DecoderBusy)
        status, code = (429, code_pb2.RESOURCE_EXHAUSTED) if busy else (503, code_pb2.UNAVAILABLE)
        raise HttpError(status, code, str(error), error.retry_after_s) from None
    return export_response(decoded, durable)


def check_headers(request: Request, limits: HttpLimits, content_type: str) -> tuple[BodyFormat, str]:
    """The body format and content encoding of a post, or the ``HttpError`` refusing it."""
    body_format = FORMATS.get(content_type)
    if body_format is None:
        raise HttpError(415, code_pb2.INVALID_ARGUMENT, f"unsupported content type {content_type!r}")
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("gzip", "identity", ""):
        raise HttpError(415, code_pb2.INVALID_ARGUMENT, f"unsupported content encoding {encoding!r}")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limits.max_request_bytes:
        raise HttpError(
            413, code_pb2.RESOURCE_EXHAUSTED, f"request body is over {limits.max_request_bytes} bytes"
        )
    return body_format, encoding


async def read_body(request: Request, limits: HttpLimits, on_size: Callable[[int], None]) -> bytes:
    """The request's body, its bytes counted in the decode budget as they arrive (``on_size``).

    Counted as read, not as declared: a client that declares 16 MiB and stalls holds what it sent,
    not a quarter of the budget; one that stops sending is answered 408 after the idle timeout, and
    one that trickles after the body timeout.
    """
    try:
        return await read_capped(
            request.stream(),
            limits.max_request_bytes,
            on_size,
            limits.body_idle_timeout_s,
            limits.body_timeout_s,
        )
    except BodyTimeout as error:
        raise HttpError(408, code_pb2.DEADLINE_EXCEEDED, str(error)) from None
    except ClientDisconnect:
        raise HttpError(400, code_pb2.CANCELLED, "the client left before sending the whole body") from None


async def export_logs(
    request: Request,
    log_receiver: LogReceiver,
    receiver: TraceReceiver,
    limits: HttpLimits,
    content_type: str,
    project: str | None,
) -> Message:
    """Read one logs request, decode it in the worker pool and store its GenAI content, its bytes
    counted in the decode budget until the rows are committed."""
    body_format, encoding = check_headers(request, limits, content_type)
    try:
        with receiver.pool.reserve(project=project) as reservation:
            body = await read_body(request, limits, reservation.cover)
            batch = await receiver.pool.decode_logs(
                log_receiver.job(body, body_format, encoding == "gzip", project)
            )
            return await asyncio.wrap_future(log_receiver.submit(batch))
    except (BodyTooLarge, TooManyRecords) as error:
        raise HttpError(413, code_pb2.RESOURCE_EXHAUSTED, str(error)) from None
    except (BadEncoding, MalformedRequest) as error:
        raise HttpError(400, code_pb2.INVALID_ARGUMENT, str(error)) from None
    except DecoderBusy as error:
        raise HttpError(429, code_pb2.RESOURCE_EXHAUSTED, str(error), error.retry_after_s) from None
    except (DatabaseUnavailable, WorkerLost) as error:
        raise HttpError(503, code_pb2.UNAVAILABLE, str(error), error.retry_after_s) from None


def media_type(header: str) -> str:
    """``application/json`` from ``Application/JSON; charset=utf-8``."""
    return header.split(";", 1)[0].strip().lower()


def encode(
    message: Message, content_type: str, status: int, headers: dict[str, str] | None = None
) -> Response:
    """``message`` in the request's encoding (protobuf unless the request was JSON)."""
    if content_type == JSON:
        return Response(message_to_json(message), status_code=status, media_type=JSON, headers=headers)
    return Response(message.SerializeToString(), status_code=status, media_type=PROTOBUF, headers=headers)


def error_response(error: HttpError, content_type: str) -> Response:
    """A ``google.rpc.Status`` body saying what was wrong, JSON unless the request was protobuf."""
    status = status_pb2.Status(code=error.code, message=str(error))
    headers = {"Retry-After": str(error.retry_after_s)} if error.retry_after_s is not None else {}
    if error.close:
        headers["Connection"] = "close"
    answer_type = content_type if content_type in FORMATS else JSON
    return encode(status, PROTOBUF if answer_type != JSON else JSON, error.status, headers)
