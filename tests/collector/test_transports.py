"""OTLP/HTTP protobuf, OTLP/HTTP JSON and OTLP/gRPC behave alike: partial_success, resends, rate limits,
refusals with a retry delay, and the limits that bound memory (issue 14, finding 5)."""

import base64
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import grpc
import httpx
import orjson
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from sqlalchemy.orm import Session

from collector.runtime import Collector
from evallens.auth import create_key
from evallens.db import create_db_engine
from tests.collector.conftest import count_spans, kill_decode_worker, make_request, make_span

ID_KEYS = ("traceId", "spanId", "parentSpanId")


@dataclass(frozen=True)
class Answer:
    """What one export got back, whatever the transport."""

    ok: bool
    status: str  # "200", "429", ... or the gRPC code name
    rejected: int = 0
    message: str = ""
    retry_after_s: float | None = None


def otlp_json(request: ExportTraceServiceRequest) -> bytes:
    """The request as OTLP/JSON: lowerCamelCase, ids in hex (not protobuf JSON's base64)."""
    document = json_format.MessageToDict(request)
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ID_KEYS:
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return orjson.dumps(document)


def send_http(
    collector: Collector, request: ExportTraceServiceRequest, headers: dict[str, str], json: bool
) -> Answer:
    content_type = "application/json" if json else "application/x-protobuf"
    body = otlp_json(request) if json else request.SerializeToString()
    response = httpx.post(
        f"http://127.0.0.1:{collector.http_port}/v1/traces",
        content=body,
        headers={"content-type": content_type, **headers},
        timeout=60,
    )
    retry_after = response.headers.get("retry-after")
    retry_after_s = float(retry_after) if retry_after is not None else None
    if response.status_code != 200:
        status = (
            status_pb2.Status(**response.json())
            if json or not response.headers["content-type"].endswith("protobuf")
            else status_pb2.Status.FromString(response.content)
        )
        return Answer(False, str(response.status_code), message=status.message, retry_after_s=retry_after_s)
    answer = (
        json_format.Parse(response.content, ExportTraceServiceResponse())
        if json
        else ExportTraceServiceResponse.FromString(response.content)
    )
    partial = answer.partial_success
    return Answer(True, "200", partial.rejected_spans, partial.error_message)


def send_grpc(collector: Collector, request: ExportTraceServiceRequest, headers: dict[str, str]) -> Answer:
    with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        try:
            answer = stub.Export(request, metadata=tuple(headers.items()), timeout=60)
        except grpc.RpcError as error:
            trailers = dict(error.trailing_metadata() or ())
            retry_after_s = None
            if "google.rpc.retryinfo-bin" in trailers:
                delay = RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"]).retry_delay
                retry_after_s = delay.seconds + delay.nanos / 1e9
            return Answer(False, error.code().name, message=error.details(), retry_after_s=retry_after_s)
    partial = answer.partial_success
    return Answer(True, "OK", partial.rejected_spans, partial.error_message)


Send = Callable[[Collector, ExportTraceServiceRequest, dict[str, str]], Answer]
TRANSPORTS: dict[str, Send] = {
    "http-protobuf": lambda c, r, h: send_http(c, r, h, json=False),
    "http-json": lambda c, r, h: send_http(c, r, h, json=True),
    "grpc": send_grpc,
}
BUSY = {"http-protobuf": "429", "http-json": "429", "grpc": "RESOURCE_EXHAUSTED"}
TOO_BIG = {"http-protobuf": "413", "http-json": "413", "grpc": "INVALID_ARGUMENT"}


@pytest.fixture(params=list(TRANSPORTS))
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_partial_success(running_collector: Collector, database_url: str, transport: str) -> None:
    good = [make_span(i) for i in range(3)]
    short_trace_id = make_span(10, trace_id=b"\x01" * 8)
    ends_before_start = make_span(12)
    ends_before_start.end_time_unix_nano = ends_before_start.start_time_unix_nano - 1
    no_start_time = make_span(13, start_ns=0)
    request = make_request([good[0], short_trace_id, good[1], ends_before_start, no_start_time, good[2]])
    answer = TRANSPORTS[transport](running_collector, request, {})
    assert answer.ok and answer.rejected == 3
    assert "invalid trace id" in answer.message and "end time is before start time" in answer.message
    assert count_spans(database_url) == 3


def test_resend_is_stored_once(running_collector: Collector, database_url: str, transport: str) -> None:
    request = make_request([make_span(i) for i in range(20)])
    for _ in range(3):
        answer = TRANSPORTS[transport](running_collector, request, {})
        assert answer.ok and answer.rejected == 0
    assert count_spans(database_url) == 20


def test_rate_limit_says_when_to_retry(
    database_url: str, make_collector: Callable[..., Collector], transport: str
) -> None:
    collector = make_collector(
        database_url, auth_enabled=True, auth_rate_limit_burst=2, auth_rate_limit_per_s=0.001
    )
    engine = create_db_engine(database_url)
    with Session(engine) as session, session.begin():
        key = create_key(session, "alpha").key
    engine.dispose()
    headers = {"authorization": f"Bearer {key}"}
    send = TRANSPORTS[transport]
    assert [send(collector, make_request([make_span(i)]), headers).ok for i in range(2)] == [True, True]
    limited = send(collector, make_request([make_span(9)]), headers)
    assert not limited.ok and limited.status == BUSY[transport]
    assert limited.retry_after_s is not None and limited.retry_after_s >= 1
    assert count_spans(database_url) == 2


def test_too_many_spans_in_one_request(
    database_url: str, make_collector: Callable[..., Collector], transport: str
) -> None:
    collector = make_collector(database_url, collector_max_spans_per_request=10)
    assert TRANSPORTS[transport](collector, make_request([make_span(i) for i in range(10)]), {}).ok
    refused = TRANSPORTS[transport](collector, make_request([make_span(i) for i in range(100, 111)]), {})
    assert not refused.ok and refused.status == TOO_BIG[transport]
    assert "11 spans; at most 10 per request" in refused.message
    assert count_spans(database_url) == 10


@pytest.fixture
def held_upload(database_url: str, make_collector: Callable[..., Collector]) -> Iterator[Collector]:
    """A collector whose decode budget (100 kB) is mostly taken by an upload that stalls half way."""
    collector = make_collector(database_url, collector_max_inflight_bytes=100_000)
    body = make_request([make_span(i) for i in range(2_000)]).SerializeToString()
    assert len(body) > 100_000  # a request alone always gets in, even larger than the budget
    release = threading.Event()

    def stalling() -> Iterator[bytes]:
        yield body[: len(body) // 2]
        release.wait(60)
        yield body[len(body) // 2 :]

    statuses: list[int] = []
    sender = threading.Thread(
        target=lambda: statuses.append(
            httpx.post(
                f"http://127.0.0.1:{collector.http_port}/v1/traces",
                content=stalling(),
                headers={"content-type": "application/x-protobuf"},
                timeout=120,
            ).status_code
        )
    )
    sender.start()
    deadline = time.monotonic() + 30
    while collector.pool.bytes_in_flight < len(body) // 2:
        assert time.monotonic() < deadline, "the stalled upload never took its bytes"
        time.sleep(0.01)
    yield collector
    release.set()
    sender.join(120)
    assert statuses == [200]  # the held request itself completes normally


def test_bytes_in_flight_are_bounded_across_http_and_grpc(held_upload: Collector, transport: str) -> None:
    refused = TRANSPORTS[transport](
        held_upload, make_request([make_span(i) for i in range(30_000, 32_000)]), {}
    )
    assert not refused.ok and refused.status == BUSY[transport]
    assert refused.retry_after_s == 2 and "decoding" in refused.message
    assert httpx.get(f"http://127.0.0.1:{held_upload.http_port}/healthz").json()["decode_bytes_in_flight"] > 0


def test_decoding_leaves_the_event_loop_free(running_collector: Collector, database_url: str) -> None:
    """While a large request is decoded (its upload done), /healthz keeps answering and sees it in
    flight: on the event loop, decoding would hold every other request until it ended."""
    body = make_request([make_span(i) for i in range(100_000)]).SerializeToString()
    uploaded = threading.Event()

    def upload() -> Iterator[bytes]:
        yield body[: len(body) // 2]
        yield body[len(body) // 2 :]
        uploaded.set()  # runs once the last chunk went out

    answers: list[int] = []
    sender = threading.Thread(
        target=lambda: answers.append(
            httpx.post(
                f"http://127.0.0.1:{running_collector.http_port}/v1/traces",
                content=upload(),
                headers={"content-type": "application/x-protobuf"},
                timeout=300,
            ).status_code
        )
    )
    sender.start()
    assert uploaded.wait(60)
    seen_in_flight = 0
    with httpx.Client(timeout=60) as client:
        while not answers:
            health = client.get(f"http://127.0.0.1:{running_collector.http_port}/healthz").json()
            seen_in_flight += health["decode_bytes_in_flight"] > 0
    sender.join()
    assert answers == [200] and count_spans(database_url) == 100_000
    assert seen_in_flight >= 3, seen_in_flight


def test_a_dead_decode_worker_is_replaced(
    database_url: str, make_collector: Callable[..., Collector], transport: str
) -> None:
    """A worker killed (as the kernel's OOM killer would) costs the request in its hands a 503, never
    the collector: the pool starts again and the resend is stored."""
    collector = make_collector(database_url, collector_decode_workers=1)
    kill_decode_worker(collector)
    request = make_request([make_span(i) for i in range(5)])
    lost = TRANSPORTS[transport](collector, request, {})
    assert not lost.ok and lost.status in ("503", "UNAVAILABLE") and "decode worker died" in lost.message
    assert TRANSPORTS[transport](collector, request, {}).ok
    assert count_spans(database_url) == 5 and collector.pool.num_restarts == 1
