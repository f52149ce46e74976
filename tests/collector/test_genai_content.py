"""Chat content in every form GenAI instrumentations send it: span attributes and events of current and
earlier versions, and OTLP log events on ``/v1/logs`` (HTTP protobuf and JSON, gRPC)."""

import base64
import json
import time
from collections.abc import Callable
from typing import Any

import grpc
import httpx
import psycopg
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue, KeyValueList
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from sqlalchemy.orm import Session

from collector._genai import event_messages, value_messages
from collector.log_store import DatabaseUnavailable, LogReceiver
from collector.logs import decode_logs_body
from collector.runtime import Collector
from collector.validate import SpanLimits
from evallens.cases import trace_questions
from evallens.db import create_db_engine
from evallens.telemetry import attributes as names
from evallens.telemetry.messages import answer_from_attribute, question_from_attribute
from tests.collector.conftest import (
    count_spans,
    fetch_spans,
    kill_decode_worker,
    make_request,
    make_span,
    otlp_attributes,
)
from tests.collector.test_auth import new_key

PROTOBUF = {"content-type": "application/x-protobuf"}
QUESTION, ANSWER = "How do I reset my password?", "Open Settings, then Security."


def any_value(value: Any) -> AnyValue:
    """An OTLP ``AnyValue`` for nested Python values (maps and lists too)."""
    if isinstance(value, dict):
        pairs = [KeyValue(key=key, value=any_value(item)) for key, item in value.items()]
        return AnyValue(kvlist_value=KeyValueList(values=pairs))
    if isinstance(value, list):
        result = AnyValue()
        result.array_value.values.extend(any_value(item) for item in value)
        return result
    if isinstance(value, int):
        return AnyValue(int_value=value)
    return AnyValue(string_value=str(value))


def with_events(span: Span, events: list[tuple[str, dict[str, Any]]]) -> Span:
    for name, attributes in events:
        event = span.events.add(name=name, time_unix_nano=span.start_time_unix_nano)
        event.attributes.extend(otlp_attributes(attributes))
    return span


CHAT = [{"role": "user", "content": QUESTION}]
SPAN_FORMS: dict[str, tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]] = {
    "flattened gen_ai.prompt.N": (
        {
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": "Be brief.",
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": QUESTION,
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": ANSWER,
        },
        [],
    ),
    "gen_ai.prompt JSON": (
        {names.GEN_AI_PROMPT: json.dumps(CHAT), names.GEN_AI_COMPLETION: ANSWER},
        [],
    ),
    "openinference flattened": (
        {
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.contents.0.message_content.type": "text",
            "llm.input_messages.0.message.contents.0.message_content.text": QUESTION,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": ANSWER,
        },
        [],
    ),
    "content span events": (
        {},
        [
            (names.EVENT_GEN_AI_CONTENT_PROMPT, {names.GEN_AI_PROMPT: json.dumps(CHAT)}),
            (names.EVENT_GEN_AI_CONTENT_COMPLETION, {names.GEN_AI_COMPLETION: ANSWER}),
        ],
    ),
    "message span events": (
        {},
        [
            ("gen_ai.system.message", {"content": "Be brief."}),
            ("gen_ai.user.message", {"content": QUESTION}),
            (names.EVENT_GEN_AI_CHOICE, {"index": 0, "finish_reason": "stop", "content": ANSWER}),
        ],
    ),
}


def test_span_content_in_earlier_forms_reads_as_the_current_one(
    running_collector: Collector, database_url: str
) -> None:
    spans = [
        with_events(make_span(index, attributes=attributes), events)
        for index, (attributes, events) in enumerate(SPAN_FORMS.values())
    ]
    spans.append(make_span(99, attributes={names.GEN_AI_REQUEST_MODEL: "m"}))  # no content: none added
    body = make_request(spans).SerializeToString()
    url = f"http://127.0.0.1:{running_collector.http_port}/v1/traces"
    assert httpx.post(url, content=body, headers=PROTOBUF).status_code == 200
    rows = {row["span_id"]: row["attributes"] for row in fetch_spans(database_url)}
    for index, form in enumerate(SPAN_FORMS):
        attributes = rows[(index + 1).to_bytes(8, "big").hex()]
        assert question_from_attribute(attributes[names.GEN_AI_INPUT_MESSAGES]) == QUESTION, form
        assert answer_from_attribute(attributes[names.GEN_AI_OUTPUT_MESSAGES]) == ANSWER, form
    assert names.GEN_AI_INPUT_MESSAGES not in rows[(100).to_bytes(8, "big").hex()]


def test_event_forms() -> None:
    details = event_messages(
        names.EVENT_GEN_AI_OPERATION_DETAILS,
        {
            names.GEN_AI_INPUT_MESSAGES: [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}],
            names.GEN_AI_OUTPUT_MESSAGES: json.dumps([{"role": "assistant", "parts": [{"content": ANSWER}]}]),
        },
        None,
    )
    assert details == [
        ("input", [{"role": "user", "content": QUESTION}]),
        ("output", [{"role": "assistant", "content": ANSWER}]),
    ]
    choice = {"index": 0, "finish_reason": "stop", "message": {"content": ANSWER}}
    assert event_messages("gen_ai.choice", {}, choice) == [
        ("output", [{"role": "assistant", "content": ANSWER}])
    ]
    assert event_messages("gen_ai.user.message", {}, {"content": QUESTION}) == [
        ("input", [{"role": "user", "content": QUESTION}])
    ]
    # content capture off: the event carries no text, so there is nothing to store
    assert event_messages("gen_ai.user.message", {}, None) == []
    assert event_messages("app.login", {}, {"content": "x"}) == []
    # an OpenInference input.value document and plain text
    document = {"messages": CHAT, "model": "m"}
    assert value_messages(json.dumps(document), "user") == [{"role": "user", "content": QUESTION}]
    assert value_messages("plain", "assistant") == [{"role": "assistant", "content": "plain"}]


def log_record(name: str, body: Any, trace_id: bytes, span_id: bytes, **attributes: Any) -> LogRecord:
    record = LogRecord(time_unix_nano=time.time_ns(), trace_id=trace_id, span_id=span_id, event_name=name)
    if body is not None:
        record.body.CopyFrom(any_value(body))
    record.attributes.extend(otlp_attributes(attributes))
    return record


def logs_request(
    records: list[LogRecord], resource: dict[str, Any] | None = None
) -> ExportLogsServiceRequest:
    resource_logs = ResourceLogs(scope_logs=[ScopeLogs(log_records=records)])
    resource_logs.resource.attributes.extend(otlp_attributes(resource or {"service.name": "chat-app"}))
    return ExportLogsServiceRequest(resource_logs=[resource_logs])


def legacy_events(trace_id: bytes, span_id: bytes, question: str = QUESTION) -> list[LogRecord]:
    """What earlier ``opentelemetry-instrumentation-openai-v2`` versions send with content capture on."""
    return [
        log_record("gen_ai.system.message", {"content": "Be brief."}, trace_id, span_id),
        log_record("gen_ai.user.message", {"content": question}, trace_id, span_id),
        log_record(
            "gen_ai.choice",
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}},
            trace_id,
            span_id,
        ),
    ]


def stored_content(database_url: str) -> list[dict[str, Any]]:
    with psycopg.connect(database_url) as connection, connection.cursor() as cursor:
        cursor.execute(
            "SELECT project, trace_id, span_id, event_name, direction, messages FROM genai_content"
        )
        columns = [column.name for column in cursor.description or []]
        return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def to_otlp_json(request: ExportLogsServiceRequest) -> bytes:
    """OTLP/JSON as exporters write it: hex trace and span ids."""
    document = json_format.MessageToDict(request)
    for resource_logs in document["resourceLogs"]:
        for scope_logs in resource_logs["scopeLogs"]:
            for record in scope_logs["logRecords"]:
                for key in ("traceId", "spanId"):
                    if key in record:  # an empty id is left out
                        record[key] = base64.b64decode(record[key]).hex()
    return json.dumps(document).encode()


def test_logs_over_http_protobuf_json_and_grpc(running_collector: Collector, database_url: str) -> None:
    url = f"http://127.0.0.1:{running_collector.http_port}/v1/logs"
    span_ids = [(index + 1).to_bytes(8, "big") for index in range(3)]
    trace_id = (7).to_bytes(16, "big")
    other_log = log_record("", "user logged in", trace_id, span_ids[0])  # not a content event
    protobuf = logs_request([*legacy_events(trace_id, span_ids[0]), other_log])
    answer = httpx.post(url, content=protobuf.SerializeToString(), headers=PROTOBUF)
    assert answer.status_code == 200
    response = ExportLogsServiceResponse.FromString(answer.content)
    assert response.partial_success.rejected_log_records == 0
    assert "1 log records are not GenAI content events" in response.partial_success.error_message

    as_json = to_otlp_json(logs_request(legacy_events(trace_id, span_ids[1])))
    answer = httpx.post(url, content=as_json, headers={"content-type": "application/json"})
    assert answer.status_code == 200, answer.text

    with grpc.insecure_channel(f"127.0.0.1:{running_collector.grpc_port}") as channel:
        stub = logs_service_pb2_grpc.LogsServiceStub(channel)
        request = logs_request(legacy_events(trace_id, span_ids[2]))
        stub.Export(request, timeout=10)
        stub.Export(request, timeout=10)  # a client's retry stores nothing twice

    rows = stored_content(database_url)
    assert len(rows) == 9 and {row["trace_id"] for row in rows} == {trace_id.hex()}
    for span_id in span_ids:
        mine = [row for row in rows if row["span_id"] == span_id.hex()]
        assert [row["event_name"] for row in mine] == [
            "gen_ai.system.message",
            "gen_ai.user.message",
            "gen_ai.choice",
        ]
        assert mine[1]["messages"] == [{"role": "user", "content": QUESTION}]
        assert (mine[2]["direction"], mine[2]["messages"][0]["content"]) == ("output", ANSWER)
    assert {row["project"] for row in rows} == {"default"}
    # promotion reads the question of a trace whose spans carry none from its content events
    engine = create_db_engine(database_url)
    with Session(engine) as session:
        assert trace_questions(session, [trace_id.hex()], "default") == {trace_id.hex(): QUESTION}
        assert trace_questions(session, [trace_id.hex()], "other") == {trace_id.hex(): None}
    engine.dispose()


def test_logs_bad_input(running_collector: Collector, database_url: str) -> None:
    url = f"http://127.0.0.1:{running_collector.http_port}/v1/logs"
    garbage = httpx.post(url, content=b"\xff\x00 not protobuf", headers=PROTOBUF)
    assert garbage.status_code == 400
    bad_json = httpx.post(url, content=b"[1, 2", headers={"content-type": "application/json"})
    assert bad_json.status_code == 400 and "not valid JSON" in bad_json.json()["message"]
    wrong_type = httpx.post(url, content=b"x", headers={"content-type": "text/plain"})
    assert wrong_type.status_code == 415
    no_ids = logs_request([log_record("gen_ai.user.message", {"content": QUESTION}, b"", b"")])
    answer = httpx.post(url, content=no_ids.SerializeToString(), headers=PROTOBUF)
    assert answer.status_code == 200
    partial = ExportLogsServiceResponse.FromString(answer.content).partial_success
    assert partial.rejected_log_records == 1 and "no trace and span id" in partial.error_message
    assert stored_content(database_url) == []


def test_a_logs_key_of_one_project_never_writes_into_another(
    make_collector: Callable[..., Collector], database_url: str
) -> None:
    auth_collector = make_collector(database_url, auth_enabled=True, auth_cache_ttl_s=0)
    url = f"http://127.0.0.1:{auth_collector.http_port}/v1/logs"
    body = logs_request(
        legacy_events((9).to_bytes(16, "big"), (1).to_bytes(8, "big")), {names.PROJECT: "alpha"}
    ).SerializeToString()
    assert httpx.post(url, content=body, headers=PROTOBUF).status_code == 401
    key = new_key(database_url, "beta")
    answer = httpx.post(url, content=body, headers={**PROTOBUF, "authorization": f"Bearer {key}"})
    assert answer.status_code == 200
    assert {row["project"] for row in stored_content(database_url)} == {"beta"}
    with grpc.insecure_channel(f"127.0.0.1:{auth_collector.grpc_port}") as channel:
        stub = logs_service_pb2_grpc.LogsServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Export(ExportLogsServiceRequest.FromString(body), timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_logs_while_postgres_is_away_are_refused_as_retryable() -> None:
    engine = create_db_engine("postgresql://nobody@127.0.0.1:1/none", connect_timeout_s=2)
    receiver = LogReceiver(engine, SpanLimits(), 1 << 20, retry_after_s=3)
    body = logs_request(legacy_events((5).to_bytes(16, "big"), (1).to_bytes(8, "big"))).SerializeToString()
    batch = decode_logs_body(receiver.job(body, "protobuf", False, None))
    with pytest.raises(DatabaseUnavailable) as unavailable:
        receiver.store(batch)
    assert unavailable.value.retry_after_s == 3
    engine.dispose()


def export_logs(
    collector: Collector, request: ExportLogsServiceRequest, transport: str
) -> tuple[str, float | None]:
    """Send a logs request; its status ("200", "503", "OK", "UNAVAILABLE") and Retry-After, if any."""
    if transport == "grpc":
        with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
            try:
                logs_service_pb2_grpc.LogsServiceStub(channel).Export(request, timeout=60)
            except grpc.RpcError as error:
                trailers = dict(error.trailing_metadata() or ())
                retry_after = trailers.get(names.HEADER_RETRY_AFTER)
                return error.code().name, float(retry_after) if retry_after is not None else None
            return "OK", None
    url = f"http://127.0.0.1:{collector.http_port}/v1/logs"
    answer = httpx.post(url, content=request.SerializeToString(), headers=PROTOBUF, timeout=60)
    retry_after = answer.headers.get("retry-after")
    return str(answer.status_code), float(retry_after) if retry_after is not None else None


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_a_decode_worker_lost_under_a_logs_request_is_a_retryable_refusal(
    make_collector: Callable[..., Collector], database_url: str, transport: str
) -> None:
    """Logs bodies are decoded in the worker pool, as spans are: a worker killed under one (as the OOM
    killer would) costs that request a retryable refusal, never the collector; the resend is stored."""
    collector = make_collector(database_url, collector_decode_workers=1, collector_retry_after_s=3)
    kill_decode_worker(collector)
    request = logs_request(legacy_events((11).to_bytes(16, "big"), (1).to_bytes(8, "big")))
    assert export_logs(collector, request, transport) == (
        ("503", 3.0) if transport == "http" else ("UNAVAILABLE", 3.0)
    )
    assert stored_content(database_url) == []
    assert export_logs(collector, request, transport) == (
        ("200", None) if transport == "http" else ("OK", None)
    )
    assert len(stored_content(database_url)) == 3 and collector.pool.num_restarts == 1
    spans = make_request([make_span(index) for index in range(5)]).SerializeToString()
    traces = httpx.post(f"http://127.0.0.1:{collector.http_port}/v1/traces", content=spans, headers=PROTOBUF)
    assert traces.status_code == 200 and count_spans(database_url) == 5


def test_log_record_times_outside_the_accepted_window_are_rejected(
    running_collector: Collector, database_url: str
) -> None:
    """A log record's time was stored as sent: ``timeUnixNano`` 2**64-1 was an event of the year 2554,
    and one of 1970 an event older than any span kept. Its time (its observed time when it has none,
    as the OTLP spec says) is checked as a span's start is."""
    now = time.time_ns()
    trace_id = (13).to_bytes(16, "big")
    times = {
        "now": (now, 0),
        "observed only": (0, now - 86_400 * 10**9),
        "2**64-1": (2**64 - 1, now),
        "observed 2**64-1": (0, 2**64 - 1),
        "400 days ago": (now - 400 * 86_400 * 10**9, now),
        "2 days ahead": (now + 2 * 86_400 * 10**9, now),
    }
    records = []
    for index, (label, (time_ns, observed_ns)) in enumerate(times.items()):
        record = log_record(
            "gen_ai.user.message", {"content": label}, trace_id, (index + 1).to_bytes(8, "big")
        )
        record.time_unix_nano, record.observed_time_unix_nano = time_ns, observed_ns
        records.append(record)
    url = f"http://127.0.0.1:{running_collector.http_port}/v1/logs"
    answer = httpx.post(url, content=logs_request(records).SerializeToString(), headers=PROTOBUF)
    assert answer.status_code == 200, answer.text
    partial = ExportLogsServiceResponse.FromString(answer.content).partial_success
    assert partial.rejected_log_records == 4, partial.error_message
    assert f"gen_ai.user.message: time {2**64 - 1} ns is outside the accepted window" in partial.error_message
    with psycopg.connect(database_url) as connection:
        stored = connection.execute(
            "SELECT messages->0->>'content', (extract(epoch FROM time) * 1e6)::bigint FROM genai_content"
        ).fetchall()
    assert sorted(stored) == [("now", now // 1000), ("observed only", (now - 86_400 * 10**9) // 1000)]


@pytest.mark.parametrize("body_format", ["protobuf", "json"])
def test_a_log_record_with_an_all_zero_id_is_rejected_as_a_span_is(
    body_format: str, running_collector: Collector, database_url: str
) -> None:
    """OTLP: an all-zero trace or span id is invalid. A log record's all-zero span id was stored, joining
    its content to no span (and every such record of every trace to one id); an all-zero trace id was
    told it had no ids. Both are refused with the reason a span gets; an empty span id still means none."""
    trace_id, span_id = (21).to_bytes(16, "big"), (21).to_bytes(8, "big")
    zero_trace, zero_span = bytes(16), bytes(8)
    records = [
        log_record("gen_ai.user.message", {"content": "kept"}, trace_id, span_id),
        log_record("gen_ai.user.message", {"content": "zero span"}, trace_id, zero_span),
        log_record("gen_ai.user.message", {"content": "zero trace"}, zero_trace, span_id),
        log_record("gen_ai.user.message", {"content": "no span"}, trace_id, b""),
    ]
    request = logs_request(records)
    if body_format == "json":
        content, headers = to_otlp_json(request), {"content-type": "application/json"}
    else:
        content, headers = request.SerializeToString(), PROTOBUF
    url = f"http://127.0.0.1:{running_collector.http_port}/v1/logs"

    answer = httpx.post(url, content=content, headers=headers)

    assert answer.status_code == 200, answer.text
    if body_format == "json":
        partial = answer.json()["partialSuccess"]
        num_rejected, message = int(partial["rejectedLogRecords"]), partial["errorMessage"]
    else:
        parsed = ExportLogsServiceResponse.FromString(answer.content).partial_success
        num_rejected, message = parsed.rejected_log_records, parsed.error_message
    assert num_rejected == 3, message
    assert message.split("; ") == [
        f"gen_ai.user.message: invalid span id '{zero_span.hex()}' (need 8 non-zero bytes)",
        f"gen_ai.user.message: invalid trace id '{zero_trace.hex()}' (need 16 non-zero bytes)",
        "gen_ai.user.message has no trace and span id to join it to its span",
    ]
    assert [row["messages"][0]["content"] for row in stored_content(database_url)] == ["kept"]
