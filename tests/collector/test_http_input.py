"""OTLP/HTTP input handling: JSON, gzip, idempotency, and every kind of bad input with its status."""

import gzip
import threading
from collections.abc import Callable

import httpx
import orjson
import psutil
import psycopg
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from collector.runtime import Collector
from tests.collector.conftest import count_spans, fetch_spans, make_request, make_span

PROTOBUF = {"content-type": "application/x-protobuf"}


def traces_url(collector: Collector) -> str:
    return f"http://127.0.0.1:{collector.http_port}/v1/traces"


def test_otlp_json_with_unknown_fields_lands(running_collector: Collector, database_url: str) -> None:
    document = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "json-svc"}}]},
                "someFutureField": {"x": 1},
                "scopeSpans": [
                    {
                        "scope": {"name": "json-scope", "version": "0.1"},
                        "spans": [
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b174",
                                "parentSpanId": "eee19b7ec3c1b173",
                                "name": "chat",
                                "kind": 3,
                                "startTimeUnixNano": str(1_000 + __import__("time").time_ns() - 10**9),
                                "endTimeUnixNano": str(2_000 + __import__("time").time_ns() - 10**9),
                                "unknownSpanField": [1, 2, 3],
                                "attributes": [
                                    {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
                                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "2000"}},
                                    {"key": "gen_ai.usage.output_tokens", "value": {"intValue": 100}},
                                ],
                                "status": {"code": 2, "message": "boom"},
                            }
                        ],
                    }
                ],
            }
        ]
    }
    response = httpx.post(
        traces_url(running_collector),
        content=orjson.dumps(document),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {}
    (row,) = fetch_spans(database_url)
    assert (row["trace_id"], row["span_id"], row["parent_span_id"]) == (
        "5b8efff798038103d269b633813fc60c",
        "eee19b7ec3c1b174",
        "eee19b7ec3c1b173",
    )
    assert (row["kind"], row["status_code"], row["status_message"]) == (3, 2, "boom")
    assert (row["model"], row["input_tokens"], row["output_tokens"]) == ("gpt-4o", 2000, 100)
    assert row["cost_usd"] == 2000 * 2.5 / 1e6 + 100 * 10.0 / 1e6
    assert row["service_name"] == "json-svc" and row["scope_name"] == "json-scope"


def test_gzip_body_and_resend_is_stored_once(running_collector: Collector, database_url: str) -> None:
    body = gzip.compress(make_request([make_span(i) for i in range(20)]).SerializeToString())
    headers = {**PROTOBUF, "content-encoding": "gzip"}
    for _ in range(2):  # a client retry
        response = httpx.post(traces_url(running_collector), content=body, headers=headers)
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/x-protobuf"
        assert not ExportTraceServiceResponse.FromString(response.content).HasField("partial_success")
    assert count_spans(database_url) == 20


def test_mixed_batch_stores_good_spans_and_counts_bad_ones(
    running_collector: Collector, database_url: str
) -> None:
    good = [make_span(i) for i in range(3)]
    short_trace_id = make_span(10, trace_id=b"\x01" * 8)
    zero_span_id = make_span(11)
    zero_span_id.span_id = b"\x00" * 8
    ends_before_start = make_span(12)
    ends_before_start.end_time_unix_nano = ends_before_start.start_time_unix_nano - 1
    no_start_time = make_span(13, start_ns=0)
    bad_parent = make_span(14, parent=b"\x01\x02")
    request = make_request(
        [
            good[0],
            short_trace_id,
            good[1],
            zero_span_id,
            ends_before_start,
            no_start_time,
            bad_parent,
            good[2],
        ]
    )
    response = httpx.post(
        traces_url(running_collector), content=request.SerializeToString(), headers=PROTOBUF
    )
    assert response.status_code == 200
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 5
    assert "invalid trace id" in answer.partial_success.error_message
    assert "end time is before start time" in answer.partial_success.error_message
    assert sorted(row["name"] for row in fetch_spans(database_url)) == ["span-0", "span-1", "span-2"]


def test_malformed_protobuf_is_400_with_status(running_collector: Collector, database_url: str) -> None:
    response = httpx.post(
        traces_url(running_collector), content=b"\x0a\xff\xff\xff\xff\x0f garbage", headers=PROTOBUF
    )
    assert response.status_code == 400
    status = status_pb2.Status.FromString(response.content)
    assert status.code == code_pb2.INVALID_ARGUMENT and "protobuf" in status.message
    assert count_spans(database_url) == 0


def test_malformed_json_is_400_with_status(running_collector: Collector) -> None:
    for body in (
        b"{not json",
        b"[1, 2]",
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "soon"}]}]}]}',
    ):
        response = httpx.post(
            traces_url(running_collector), content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code == 400, body
        assert response.json()["code"] == code_pb2.INVALID_ARGUMENT and response.json()["message"]


def test_wrong_content_type_or_encoding_is_415(running_collector: Collector) -> None:
    body = make_request([make_span(0)]).SerializeToString()
    assert (
        httpx.post(
            traces_url(running_collector), content=body, headers={"content-type": "text/plain"}
        ).status_code
        == 415
    )
    response = httpx.post(
        traces_url(running_collector), content=body, headers={**PROTOBUF, "content-encoding": "br"}
    )
    assert response.status_code == 415


def test_bad_gzip_is_400(running_collector: Collector) -> None:
    headers = {**PROTOBUF, "content-encoding": "gzip"}
    assert (
        httpx.post(traces_url(running_collector), content=b"not gzip at all", headers=headers).status_code
        == 400
    )
    truncated = gzip.compress(make_request([make_span(0)]).SerializeToString())[:-12]
    assert httpx.post(traces_url(running_collector), content=truncated, headers=headers).status_code == 400


def test_every_member_of_a_gzip_body_is_read_and_trailing_junk_is_400(
    running_collector: Collector, database_url: str
) -> None:
    """A gzip body may hold several members (RFC 1952; Go's reader, the OpenTelemetry Collector's,
    reads them all): only the first was read, and the spans of the rest were acknowledged and lost."""
    headers = {**PROTOBUF, "content-encoding": "gzip"}
    first, second = (make_request([make_span(i)]).SerializeToString() for i in (0, 1))
    body = gzip.compress(first) + gzip.compress(second)
    response = httpx.post(traces_url(running_collector), content=body, headers=headers)
    assert response.status_code == 200, response.content
    assert [span["name"] for span in fetch_spans(database_url)] == ["span-0", "span-1"]
    junk = gzip.compress(make_request([make_span(2)]).SerializeToString()) + b"not gzip"
    response = httpx.post(traces_url(running_collector), content=junk, headers=headers)
    assert response.status_code == 400
    assert "not valid gzip" in status_pb2.Status.FromString(response.content).message
    assert count_spans(database_url) == 2


def test_oversized_bodies_are_413_and_a_gzip_bomb_stays_small(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    collector = make_collector(database_url, collector_max_request_bytes=1024 * 1024)
    too_big = b"\x00" * (1024 * 1024 + 1)
    assert httpx.post(traces_url(collector), content=too_big, headers=PROTOBUF).status_code == 413
    chunked = httpx.post(
        traces_url(collector), content=iter([too_big[:600_000], too_big[600_000:]]), headers=PROTOBUF
    )
    assert chunked.status_code == 413
    bomb = gzip.compress(b"\x00" * (512 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < 1024 * 1024
    process = psutil.Process()
    before = process.memory_info().rss
    response = httpx.post(
        traces_url(collector), content=bomb, headers={**PROTOBUF, "content-encoding": "gzip"}, timeout=60
    )
    assert response.status_code == 413
    assert "decompressed" in status_pb2.Status.FromString(response.content).message
    assert process.memory_info().rss - before < 64 * 1024 * 1024
    assert count_spans(database_url) == 0


def test_full_queue_is_429_with_retry_after(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    collector = make_collector(database_url, collector_queue_max_spans=10)
    with psycopg.connect(database_url) as blocker:
        blocker.execute("LOCK TABLE spans IN ACCESS EXCLUSIVE MODE")  # the writer stalls behind this
        first: list[httpx.Response] = []
        body = make_request([make_span(i) for i in range(10)]).SerializeToString()
        sender = threading.Thread(
            target=lambda: first.append(
                httpx.post(traces_url(collector), content=body, headers=PROTOBUF, timeout=60)
            )
        )
        sender.start()
        while collector.ingestor.num_queued_spans < 10:
            threading.Event().wait(0.01)
        refused = httpx.post(
            traces_url(collector), content=make_request([make_span(50)]).SerializeToString(), headers=PROTOBUF
        )
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "2"
        blocker.rollback()
    sender.join()
    assert first[0].status_code == 200
    assert count_spans(database_url) == 10


def test_database_down_without_spool_is_503(tmp_path, make_collector: Callable[..., Collector]) -> None:
    nowhere = f"postgresql:///evallens?host={tmp_path}/no-socket-here"
    collector = make_collector(nowhere, collector_spool_enabled=False)
    body = make_request([make_span(0)]).SerializeToString()
    response = httpx.post(traces_url(collector), content=body, headers=PROTOBUF)
    assert response.status_code == 503
    assert response.headers["retry-after"] == "2"
    assert status_pb2.Status.FromString(response.content).code == code_pb2.UNAVAILABLE
    assert httpx.get(f"http://127.0.0.1:{collector.http_port}/healthz").status_code == 503


def test_database_down_with_spool_acknowledges_only_after_fsync(
    tmp_path, make_collector: Callable[..., Collector]
) -> None:
    nowhere = f"postgresql:///evallens?host={tmp_path}/no-socket-here"
    collector = make_collector(nowhere)
    response = httpx.post(
        traces_url(collector), content=make_request([make_span(0)]).SerializeToString(), headers=PROTOBUF
    )
    assert response.status_code == 200
    spooled = collector.spool.pending() if collector.spool else []
    assert len(spooled) == 1 and b"span-0" in spooled[0].read_bytes()


def test_own_metrics_and_health(running_collector: Collector) -> None:
    request = make_request([make_span(0), make_span(1, start_ns=0)])
    httpx.post(traces_url(running_collector), content=request.SerializeToString(), headers=PROTOBUF)
    base = f"http://127.0.0.1:{running_collector.http_port}"
    text = httpx.get(f"{base}/metrics").text
    assert "evallens_collector_spans_received_total 2.0" in text
    assert "evallens_collector_spans_rejected_total 1.0" in text
    assert "evallens_collector_spans_stored_total 1.0" in text
    assert "evallens_collector_flush_seconds_count 1.0" in text
    health = httpx.get(f"{base}/healthz")
    assert health.status_code == 200 and health.json()["database_up"] is True
