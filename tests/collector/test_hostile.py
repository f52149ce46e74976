"""What a hostile or careless client found after issue 14: each case answered with a clear status,
nothing good in the same request lost, and the collector still taking an honest client's data."""

import base64
import contextlib
import json
import random
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import httpx
import orjson
import psutil
import psycopg
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span
from sqlalchemy import select
from sqlalchemy.orm import Session

from collector._wire import varint_bytes
from collector.logs import LogBatch, LogsJob, decode_logs_body
from collector.otlp_json import MalformedRequest, load_json_request
from collector.pricebook import PriceBook
from collector.runtime import Collector
from collector.validate import SpanLimits, TooManyRecords
from collector.workers import Decoded, DecodeJob, decode_body
from evallens.cases import promote_traces, trace_questions
from evallens.db import create_db_engine
from evallens.db.models import EvalCase, EvalSet
from evallens.ports import free_port
from evallens.telemetry import attributes as names
from evallens.telemetry.messages import question_from_attribute
from tests.collector.conftest import fetch_spans, make_request, make_span, start_collector_process
from tests.collector.test_auth import new_key
from tests.collector.test_genai_content import (
    QUESTION,
    any_value,
    log_record,
    logs_request,
    stored_content,
    to_otlp_json,
)
from tests.collector.test_poison import quarantined
from tests.collector.test_transports import TOO_BIG, TRANSPORTS, otlp_json, send_grpc

PROTOBUF = {"content-type": "application/x-protobuf"}
# Deeper than Python's recursion limit: ``json.loads`` raises RecursionError, not ValueError.
DEEP_JSON = "[" * 100_000
MIB = 1024 * 1024


@pytest.fixture(params=list(TRANSPORTS))
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# JSON escapes a lone UTF-16 surrogate (``json.dumps("\ud800")``); decoded, no UTF-8 text can hold it.
LONE_SURROGATE_MESSAGES = '[{"role": "user", "content": "reset\\ud800my \\udfffpassword"}]'


@pytest.mark.parametrize(
    ("prompt", "content"),
    [(DEEP_JSON, DEEP_JSON), (LONE_SURROGATE_MESSAGES, "reset\ufffdmy \ufffdpassword")],
    ids=["deeply-nested", "lone-surrogate"],
)
def test_chat_content_the_collector_cannot_read_as_sent_is_stored(
    running_collector: Collector, database_url: str, transport: str, prompt: str, content: str
) -> None:
    """Text that is not a JSON document (here: too deep to read) is the message itself. A lone
    surrogate escape decodes to a str that orjson, psycopg and PostgreSQL refuse: the whole request
    was a 500 with a traceback (its good span lost); like NUL, it is stored as U+FFFD."""
    good = make_span(0, attributes={names.GEN_AI_PROMPT: json.dumps([{"role": "user", "content": QUESTION}])})
    odd = make_span(1, attributes={names.GEN_AI_PROMPT: prompt})
    answer = TRANSPORTS[transport](running_collector, make_request([good, odd]), {})
    assert (answer.ok, answer.rejected) == (True, 0), answer
    stored = {span["name"]: span["attributes"] for span in fetch_spans(database_url)}
    assert set(stored) == {"span-0", "span-1"}
    assert json.loads(stored["span-1"][names.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": content}]}
    ]
    health = httpx.get(f"http://127.0.0.1:{running_collector.http_port}/healthz").json()
    assert health["ok"] and health["writer_running"]


def test_deeply_nested_json_question_does_not_break_its_readers(
    running_collector: Collector, database_url: str
) -> None:
    assert question_from_attribute(DEEP_JSON) == DEEP_JSON
    span = make_span(2, attributes={names.GEN_AI_INPUT_MESSAGES: DEEP_JSON})
    answer = TRANSPORTS["http-protobuf"](running_collector, make_request([span]), {})
    assert (answer.ok, answer.rejected) == (True, 0), answer
    trace_id = (3).to_bytes(16, "big").hex()
    engine = create_db_engine(database_url)
    with Session(engine) as session:
        assert trace_questions(session, [trace_id], "default") == {trace_id: DEEP_JSON}
    engine.dispose()


def test_deeply_nested_json_in_a_content_log_event_is_stored(
    running_collector: Collector, database_url: str
) -> None:
    trace_id, span_id = (11).to_bytes(16, "big"), (1).to_bytes(8, "big")
    nested = log_record("gen_ai.content.prompt", None, trace_id, span_id, **{names.GEN_AI_PROMPT: DEEP_JSON})
    good = log_record("gen_ai.user.message", {"content": QUESTION}, trace_id, span_id)
    url = f"http://127.0.0.1:{running_collector.http_port}/v1/logs"
    answer = httpx.post(url, content=logs_request([nested, good]).SerializeToString(), headers=PROTOBUF)
    assert answer.status_code == 200, answer.text
    rows = {row["event_name"]: row["messages"] for row in stored_content(database_url)}
    assert rows == {
        "gen_ai.content.prompt": [{"role": "user", "content": DEEP_JSON}],
        "gen_ai.user.message": [{"role": "user", "content": QUESTION}],
    }


# An index a user added on the content; a random (incompressible) content this long cannot be a btree
# index row: PostgreSQL refuses the row with SQLSTATE 54000.
CONTENT_INDEX = "CREATE INDEX content_blob ON genai_content ((messages -> 0 ->> 'content'))"


def add_content_index(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute(CONTENT_INDEX)


def test_a_log_event_postgres_refuses_is_rejected_not_retried_forever(
    running_collector: Collector, database_url: str
) -> None:
    """A row too large for an index is SQLSTATE 54000, which psycopg raises as the OperationalError
    class of a lost connection: it must read as a bad record, not as an outage."""
    add_content_index(database_url)
    trace_id, span_id = (12).to_bytes(16, "big"), (1).to_bytes(8, "big")
    poison = log_record("gen_ai.user.message", {"content": secrets.token_hex(4000)}, trace_id, span_id)
    good = log_record("gen_ai.user.message", {"content": QUESTION}, trace_id, span_id)
    url = f"http://127.0.0.1:{running_collector.http_port}/v1/logs"
    answer = httpx.post(url, content=logs_request([poison, good]).SerializeToString(), headers=PROTOBUF)
    assert answer.status_code == 200, answer.text
    partial = ExportLogsServiceResponse.FromString(answer.content).partial_success
    assert partial.rejected_log_records == 1 and "54000" in partial.error_message
    assert [row["event_name"] for row in stored_content(database_url)] == ["gen_ai.user.message"]
    # the collector still takes an honest client's spans
    honest = TRANSPORTS["http-protobuf"](running_collector, make_request([make_span(5)]), {})
    assert honest.ok and len(fetch_spans(database_url)) == 1


@pytest.mark.parametrize("body_format", ["protobuf", "json"])
def test_a_log_event_whose_name_the_unique_index_cannot_hold_is_rejected_before_postgres(
    body_format: str,
) -> None:
    """``uq_genai_content_event`` indexes the project and the event name: a name of 8,000 random
    characters (``gen_ai.<them>.message``) was refused by PostgreSQL (SQLSTATE 54000), and each such
    event made its whole batch be stored again in pieces. Refused in the decode worker, as a span's
    rollup key too wide to index is."""
    ids = ((1).to_bytes(16, "big"), (1).to_bytes(8, "big"))
    long_name = f"gen_ai.{secrets.token_hex(4000)}.message"
    wide_name = f"gen_ai.{'é' * 1300}.message"  # 2,600 bytes of UTF-8 in 1,322 characters
    records = [
        log_record(name, {"content": QUESTION}, *ids)
        for name in (long_name, wide_name, "gen_ai.user.message")
    ]
    request = logs_request(records)
    body = to_otlp_json(request) if body_format == "json" else request.SerializeToString()

    batch = decode_logs_body(LogsJob(body, body_format, False, MIB, SpanLimits(), "p"))

    assert batch.num_rejected == 2 and len(batch.lines) == 1, batch.reasons
    assert all("can be indexed" in reason and len(reason) < 300 for reason in batch.reasons), batch.reasons


# Counts the statements that stored GenAI content (a real trigger; one rolled back is not counted).
COUNT_CONTENT_INSERTS = """
CREATE TABLE content_inserts (stored boolean);
CREATE FUNCTION count_content_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO content_inserts VALUES (true);
  RETURN NULL;
END $$;
CREATE TRIGGER count_content_insert AFTER INSERT ON genai_content
  FOR EACH STATEMENT EXECUTE FUNCTION count_content_insert();
"""


def test_one_log_event_postgres_refuses_does_not_make_the_rest_go_one_by_one(
    running_collector: Collector, database_url: str
) -> None:
    """A logs request PostgreSQL refused as a whole was stored again one row at a time, each in a
    savepoint of one transaction: one poison event among 50,000 held a store thread (of two, which
    every logs request waits for) and that transaction for 546 s. Now the batch is bisected: the good
    rows go in a few statements, as a refused span batch does. (The poison then was an event name too
    long for the unique index, refused before PostgreSQL now; here, a user's index.)"""
    add_content_index(database_url)
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute(COUNT_CONTENT_INSERTS)
    trace_id = (12).to_bytes(16, "big")
    records = [
        log_record("gen_ai.user.message", {"content": f"question {i}"}, trace_id, (i + 1).to_bytes(8, "big"))
        for i in range(200)
    ]
    poison = {"content": secrets.token_hex(4000)}
    records.insert(123, log_record("gen_ai.user.message", poison, trace_id, (1).to_bytes(8, "big")))
    url = f"http://127.0.0.1:{running_collector.http_port}/v1/logs"

    answer = httpx.post(url, content=logs_request(records).SerializeToString(), headers=PROTOBUF)

    assert answer.status_code == 200, answer.text
    partial = ExportLogsServiceResponse.FromString(answer.content).partial_success
    assert partial.rejected_log_records == 1 and "54000" in partial.error_message
    assert len(stored_content(database_url)) == 200
    with psycopg.connect(database_url) as connection:
        (num_statements,) = connection.execute("SELECT count(*) FROM content_inserts").fetchone() or (0,)
    assert num_statements <= 2 * 8, num_statements  # a few a halving (201 rows: 8 halvings), not 200


@pytest.mark.parametrize("value", [DEEP_JSON, f'{{"messages": {DEEP_JSON}'])
def test_question_from_attribute_reads_unreadable_json_as_text(value: str) -> None:
    assert question_from_attribute(value) == value


NUL_MESSAGES = json.dumps([{"role": "user", "content": "reset\u0000my password"}])


@pytest.mark.parametrize(
    ("messages", "question"),
    [(NUL_MESSAGES, "reset\ufffdmy password"), (LONE_SURROGATE_MESSAGES, "reset\ufffdmy \ufffdpassword")],
    ids=["nul", "lone-surrogate"],
)
def test_an_escape_postgres_cannot_store_in_a_json_question_can_be_promoted(
    running_collector: Collector, database_url: str, messages: str, question: str
) -> None:
    """``\\u0000`` and ``\\ud800`` inside a JSON attribute are plain text on the wire (the collector
    stores them), but the question read from it holds NUL or a lone surrogate, which PostgreSQL text
    refuses: promoting it must still work."""
    assert "\x00" not in messages and "\\u" in messages
    assert question_from_attribute(messages) == question
    span = make_span(3, attributes={names.GEN_AI_INPUT_MESSAGES: messages})
    answer = TRANSPORTS["http-protobuf"](running_collector, make_request([span]), {})
    assert (answer.ok, answer.rejected) == (True, 0), answer
    trace_id = (4).to_bytes(16, "big").hex()
    engine = create_db_engine(database_url)
    with Session(engine) as session, session.begin():
        session.add(EvalSet(project="default", name="support", version=1, content_hash="h1"))
    with Session(engine) as session, session.begin():
        report = promote_traces(session, [trace_id], eval_set_name="support", scenario="account")
    with Session(engine) as session:
        stored = session.scalars(select(EvalCase.question).where(EvalCase.source_trace_id == trace_id))
        assert list(stored) == [question]
    engine.dispose()
    assert report.version == 2 and len(report.cases) == 1


# What JavaScript's JSON.stringify writes for a string cut inside an emoji (OpenTelemetry JS truncates
# attribute values by UTF-16 length): a lone high surrogate escape. An escaped backslash before "ud83d"
# is text, not an escape, and a whole pair is an emoji; both stay as they are.
JS_CUT = ("cut \\ud83d", "cut \ufffd")
TEXT_BACKSLASH = ("path \\\\ud83d", "path \\ud83d")
LOW_ALONE = ("low \\\\\\udc00", "low \\\ufffd")
PAIR = ("emoji \\ud83d\\ude00", "emoji \U0001f600")


def test_lone_surrogate_escapes_in_an_otlp_json_body_are_stored_as_replacement_characters(
    running_collector: Collector, database_url: str
) -> None:
    """orjson refuses the body ("no low surrogate in string"): the whole request was a 400 and its good
    spans lost. Go's encoding/json, which the OpenTelemetry Collector uses, reads them as U+FFFD."""
    spans = [make_span(index, attributes={"note": f"MARK{index}"}) for index in range(4)]
    body = otlp_json(make_request(spans)).decode()
    for index, (escaped, _) in enumerate((JS_CUT, TEXT_BACKSLASH, LOW_ALONE, PAIR)):
        body = body.replace(f"MARK{index}", escaped)
    response = httpx.post(
        f"http://127.0.0.1:{running_collector.http_port}/v1/traces",
        content=body.encode(),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 200, response.text
    assert "partialSuccess" not in response.json() or not response.json()["partialSuccess"]
    stored = {span["name"]: span["attributes"]["note"] for span in fetch_spans(database_url)}
    assert stored == {
        f"span-{i}": read for i, (_, read) in enumerate((JS_CUT, TEXT_BACKSLASH, LOW_ALONE, PAIR))
    }


def test_a_lone_surrogate_escape_in_an_otlp_json_logs_body_is_stored(
    running_collector: Collector, database_url: str
) -> None:
    trace_id, span_id = (14).to_bytes(16, "big"), (1).to_bytes(8, "big")
    record = log_record("gen_ai.user.message", {"content": "MARK"}, trace_id, span_id)
    body = to_otlp_json(logs_request([record])).decode().replace("MARK", JS_CUT[0])
    url = f"http://127.0.0.1:{running_collector.http_port}/v1/logs"
    answer = httpx.post(url, content=body.encode(), headers={"content-type": "application/json"})
    assert answer.status_code == 200, answer.text
    assert [row["messages"] for row in stored_content(database_url)] == [
        [{"role": "user", "content": JS_CUT[1]}]
    ]


def test_a_body_that_is_not_json_is_still_refused_saying_so() -> None:
    with pytest.raises(MalformedRequest, match="body is not valid JSON"):
        load_json_request(b'{"resourceSpans": [\\ud83d]}')


# What protobuf.js (OpenTelemetry JS's OTLP/protobuf exporter) writes for a lone surrogate: its UTF-16
# code unit as three bytes, which are not UTF-8; upb refuses the whole message ("bad UTF-8").
CESU_HALF = b"\xed\xa0\xbd"


def with_bytes(serialized: bytes, marker: bytes, raw: bytes) -> bytes:
    """``serialized`` with each ``marker`` swapped for ``raw`` of the same length (lengths stay right)."""
    assert len(marker) == len(raw) and marker in serialized
    return serialized.replace(marker, raw)


def test_bad_utf8_in_protobuf_strings_is_stored_as_replacement_characters(
    running_collector: Collector, database_url: str
) -> None:
    """The whole request was a 400 ("String field had bad UTF-8") and every good span lost; as the
    OpenTelemetry Collector (which does not check) keeps the span, the bad bytes read as U+FFFD."""
    bad = make_span(1, attributes={"note": "n=QQQ"})
    bad.name = "span-QQQ"
    request = make_request([make_span(0, attributes={"note": "note-0"}), bad])
    body = with_bytes(request.SerializeToString(), b"QQQ", CESU_HALF)
    response = httpx.post(
        f"http://127.0.0.1:{running_collector.http_port}/v1/traces", content=body, headers=PROTOBUF
    )
    assert response.status_code == 200, response.content
    stored = {span["name"]: span["attributes"]["note"] for span in fetch_spans(database_url)}
    assert stored == {"span-0": "note-0", "span-\ufffd\ufffd\ufffd": "n=\ufffd\ufffd\ufffd"}


def test_bad_utf8_in_a_protobuf_log_record_is_stored(running_collector: Collector, database_url: str) -> None:
    trace_id, span_id = (15).to_bytes(16, "big"), (1).to_bytes(8, "big")
    record = log_record("gen_ai.user.message", {"content": "hi QQQ"}, trace_id, span_id)
    body = with_bytes(logs_request([record]).SerializeToString(), b"QQQ", CESU_HALF)
    url = f"http://127.0.0.1:{running_collector.http_port}/v1/logs"
    answer = httpx.post(url, content=body, headers=PROTOBUF)
    assert answer.status_code == 200, answer.content
    assert ExportLogsServiceResponse.FromString(answer.content).partial_success.rejected_log_records == 0
    messages = [row["messages"] for row in stored_content(database_url)]
    assert messages == [[{"role": "user", "content": "hi \ufffd\ufffd\ufffd"}]]


def test_a_truncated_protobuf_body_is_still_refused_saying_so(running_collector: Collector) -> None:
    body = make_request([make_span(0)]).SerializeToString()[:-3]
    response = httpx.post(
        f"http://127.0.0.1:{running_collector.http_port}/v1/traces", content=body, headers=PROTOBUF
    )
    assert response.status_code == 400
    assert (
        "not a protobuf ExportTraceServiceRequest" in status_pb2.Status.FromString(response.content).message
    )


def test_a_nul_escaped_in_a_json_log_event_is_stored(running_collector: Collector, database_url: str) -> None:
    trace_id, span_id = (13).to_bytes(16, "big"), (1).to_bytes(8, "big")
    prompt = json.dumps([{"role": "user", "content": "reset\u0000my password"}])
    record = log_record("gen_ai.content.prompt", None, trace_id, span_id, **{names.GEN_AI_PROMPT: prompt})
    url = f"http://127.0.0.1:{running_collector.http_port}/v1/logs"
    answer = httpx.post(url, content=logs_request([record]).SerializeToString(), headers=PROTOBUF)
    assert answer.status_code == 200, answer.text
    assert ExportLogsServiceResponse.FromString(answer.content).partial_success.rejected_log_records == 0
    assert [row["messages"] for row in stored_content(database_url)] == [
        [{"role": "user", "content": "reset\ufffdmy password"}]
    ]


@pytest.mark.parametrize(
    "rated",
    [secrets.token_hex(4000), {"nested": secrets.token_hex(4000)}],
    ids=["long-text", "map"],
)
def test_an_unindexable_feedback_target_is_rejected_before_it_is_acknowledged(
    running_collector: Collector, database_url: str, transport: str, rated: object
) -> None:
    """Trace summaries index the trace a feedback span rates (``->>`` of the attribute, whatever its
    type). Unbounded, one such span made PostgreSQL refuse its whole batch (54000): every flush that
    held one was bisected, and the span went to the quarantine, where a retry can never succeed."""
    feedback = make_span(6)
    feedback.attributes.add(key=names.FEEDBACK_TARGET_TRACE_ID, value=any_value(rated))
    feedback.attributes.add(key=names.FEEDBACK_SCORE, value=any_value(-1))
    good = make_span(7, attributes={names.FEEDBACK_TARGET_TRACE_ID: "ab" * 16, names.FEEDBACK_SCORE: 1})
    answer = TRANSPORTS[transport](running_collector, make_request([feedback, good]), {})
    assert (answer.ok, answer.rejected) == (True, 1), answer
    assert names.FEEDBACK_TARGET_TRACE_ID in answer.message and "quarantine" not in answer.message
    assert [span["name"] for span in fetch_spans(database_url)] == ["span-7"]
    assert quarantined(database_url) == []


def test_ids_that_are_not_hex_in_otlp_json_are_rejected_saying_so(
    running_collector: Collector, database_url: str
) -> None:
    """protobuf's own JSON (``MessageToDict``) writes ids in base64, which OTLP/JSON does not: such a
    span is rejected with the reason, and a base64 parent id is not read as "no parent"."""
    good = make_span(0)
    child = make_span(1, parent=(7).to_bytes(8, "big"))
    document = json_format.MessageToDict(make_request([good, make_span(2), child]))
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["traceId"] = base64.b64decode(spans[0]["traceId"]).hex()  # the good one, as OTLP/JSON sends it
    spans[0]["spanId"] = base64.b64decode(spans[0]["spanId"]).hex()
    spans[2]["traceId"] = base64.b64decode(spans[2]["traceId"]).hex()  # only its parent stays base64
    spans[2]["spanId"] = base64.b64decode(spans[2]["spanId"]).hex()
    response = httpx.post(
        f"http://127.0.0.1:{running_collector.http_port}/v1/traces",
        content=orjson.dumps(document),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 200, response.text
    partial = response.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 2
    assert "trace id is not hex" in partial["errorMessage"]
    assert "parent span id is not hex" in partial["errorMessage"]
    assert "32 digits" in partial["errorMessage"] and "16 digits" in partial["errorMessage"]
    assert [span["name"] for span in fetch_spans(database_url)] == ["span-0"]


def test_a_json_body_over_the_span_cap_is_refused_before_its_spans_are_built() -> None:
    """The cap is counted on the JSON document: under the 16 MiB limit fit 5.6 million ``{}`` spans
    (3 bytes each), and building a protobuf message for each took ~1.4 GB and 40 s of a decode worker
    before the cap refused them. A span protobuf cannot hold shows the order: the answer is the cap."""
    spans: list[dict[str, str]] = [{} for _ in range(10)] + [{"startTimeUnixNano": "not a number"}]
    body = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
    job = DecodeJob(body, "json", False, 1 << 20, SpanLimits(max_spans_per_request=10), None, PriceBook([]))
    with pytest.raises(TooManyRecords, match="holds 11 spans"):
        decode_body(job)


def test_a_logs_body_over_the_record_cap_is_refused_before_its_records_are_built(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """Logs had no cap: 16 MiB held 5.6 million ``{}`` log records as JSON (8 million empty ones as
    protobuf), and a decode worker, which every request waits for, built and read them for a minute."""
    collector = make_collector(database_url, collector_max_spans_per_request=10)
    ids = (secrets.token_bytes(16), secrets.token_bytes(8))
    request = logs_request([log_record("gen_ai.user.message", {"content": QUESTION}, *ids)] * 11)
    url = f"http://127.0.0.1:{collector.http_port}/v1/logs"
    as_json = httpx.post(url, content=to_otlp_json(request), headers={"content-type": "application/json"})
    as_protobuf = httpx.post(url, content=request.SerializeToString(), headers=PROTOBUF)
    for answer in (as_json, as_protobuf):
        assert answer.status_code == 413 and "holds 11 log records" in answer.text, answer.text
    channel = grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}")
    with channel, pytest.raises(grpc.RpcError) as refused:
        logs_service_pb2_grpc.LogsServiceStub(channel).Export(request, timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, refused.value
    del request.resource_logs[0].scope_logs[0].log_records[10]
    assert httpx.post(url, content=request.SerializeToString(), headers=PROTOBUF).status_code == 200
    assert len(stored_content(database_url)) == 1  # ten of one event: one row


def with_empty_entries(body_format: str, signal: str, level: str, num_entries: int) -> bytes:
    """A request of one span or GenAI content event after ``num_entries`` empty resource or scope entries."""
    ids = (secrets.token_bytes(16), secrets.token_bytes(8))
    one: Any = (
        make_request([make_span(0)])
        if signal == "traces"
        else logs_request([log_record("gen_ai.user.message", {"content": QUESTION}, *ids)])
    )
    resources = one.resource_spans if signal == "traces" else one.resource_logs
    if body_format == "protobuf":  # field 1 of the request, field 2 of a resource: length 0
        if level == "resource":
            return b"\x0a\x00" * num_entries + bytes(one.SerializeToString())
        resource = b"\x12\x00" * num_entries + bytes(resources[0].SerializeToString())
        return b"\x0a" + varint_bytes(len(resource)) + resource
    document = orjson.loads(otlp_json(one) if signal == "traces" else to_otlp_json(one))
    key = "resourceSpans" if signal == "traces" else "resourceLogs"
    if level == "resource":
        document[key] = [{}] * num_entries + document[key]
    else:
        scopes = "scopeSpans" if signal == "traces" else "scopeLogs"
        document[key][0][scopes] = [{}] * num_entries + document[key][0][scopes]
    return orjson.dumps(document)


@pytest.mark.parametrize("level", ["resource", "scope"])
@pytest.mark.parametrize("body_format", ["protobuf", "json"])
@pytest.mark.parametrize("signal", ["traces", "logs"])
def test_more_resource_or_scope_entries_than_a_request_may_hold_spans_are_refused_before_they_are_read(
    signal: str, body_format: str, level: str
) -> None:
    """Only spans and log records were counted against the cap: a 16 MiB protobuf body of 8 million empty
    resource entries (two bytes each) around one span held a decode worker, which every request waits
    for, for 59 s; 10 MB of empty scope entries 25 s; as OTLP/JSON ``{}`` entries, 15 MB 39 s and 28 s;
    a logs body 19 s and 8 s (protobuf), 25 s and 22 s (JSON). Resource entries, and scope entries,
    are now counted as records are: more than a request may hold records is a 413, refused before they
    are read (walking a protobuf body's entries stops there). As many pass."""
    limits = SpanLimits(max_spans_per_request=10)
    called = "spans" if signal == "traces" else "log records"

    def decode(body: bytes) -> object:
        if signal == "traces":
            return decode_body(DecodeJob(body, body_format, False, MIB, limits, None, PriceBook([])))  # type: ignore[arg-type]
        return decode_logs_body(LogsJob(body, body_format, False, MIB, limits, "p"))

    message = f"holds more than 10 {level} entries; at most 10 per request, as {called}"
    with pytest.raises(TooManyRecords, match=message):
        decode(with_empty_entries(body_format, signal, level, 11))
    decoded = decode(with_empty_entries(body_format, signal, level, 9))  # with the entry of its record: 10
    if isinstance(decoded, Decoded):
        assert decoded.packed.num_spans == 1 and decoded.num_rejected == 0
    else:
        assert isinstance(decoded, LogBatch) and len(decoded.lines) == 1 and decoded.num_rejected == 0


@pytest.mark.parametrize("body_format", ["protobuf", "json"])
def test_more_span_events_than_a_request_may_hold_spans_are_refused_before_they_are_read(
    body_format: str,
) -> None:
    """Events were not counted: 16 MiB of protobuf held 8 million empty events (two bytes each) on one
    span, which a decode worker turned into 3.5 GB of Python objects over 19 s before any bound held
    (as OTLP/JSON ``{}`` entries, 2.3 s a MB). A request's events count against the cap as its spans
    do, together: more is a 413."""
    limits = SpanLimits(max_spans_per_request=10)

    def decode(events_per_span: list[int]) -> Decoded:
        spans = [make_span(i) for i in range(len(events_per_span))]
        for span, num_events in zip(spans, events_per_span, strict=True):
            span.events.extend([Span.Event(name="tick")] * num_events)
        request = make_request(spans)
        body = otlp_json(request) if body_format == "json" else request.SerializeToString()
        return decode_body(DecodeJob(body, body_format, False, MIB, limits, None, PriceBook([])))  # type: ignore[arg-type]

    for events_per_span in ([11], [6, 5, 1]):
        with pytest.raises(TooManyRecords, match="holds more than 10 span events; at most 10 per request"):
            decode(events_per_span)
    decoded = decode([6, 4])
    assert decoded.packed.num_spans == 2 and decoded.num_rejected == 0


def test_a_body_of_empty_resource_entries_is_a_413_over_every_transport(
    database_url: str, make_collector: Callable[..., Collector], transport: str
) -> None:
    collector = make_collector(database_url, collector_max_spans_per_request=10)
    request = make_request([make_span(0)])
    request.resource_spans.extend([ResourceSpans()] * 11)

    answer = TRANSPORTS[transport](collector, request, {})

    assert (answer.ok, answer.status) == (False, TOO_BIG[transport]), answer
    assert "more than 10 resource entries" in answer.message, answer
    assert fetch_spans(database_url) == []


def test_a_request_whose_spans_decode_past_the_queue_is_refused_before_they_are_packed(
    database_url: str, make_collector: Callable[..., Collector], transport: str
) -> None:
    """Each span's row carries its resource's attributes: a 0.4 MB body of 2,000 spans sharing a 256 KiB
    resource packed into 525 MB (a decode worker at 1.1 GB; 16 MiB of body reach terabytes, and a worker
    killed for memory takes every request in the pool with it), and a request finding the queue empty
    entered it whatever its size, holding the writer. Now spans decoding past the queue's bytes are
    refused as too large once they do; nothing of them is stored."""
    collector = make_collector(database_url, collector_queue_max_bytes=MIB)
    resource = {"service.name": "svc", "blob": "x" * (64 * 1024)}
    request = make_request([make_span(i) for i in range(100)], resource)  # 70 KB; 6.6 MB packed

    answer = TRANSPORTS[transport](collector, request, {})

    assert (answer.ok, answer.status) == (False, TOO_BIG[transport]), answer
    assert f"decode to more than {MIB} bytes" in answer.message, answer
    assert fetch_spans(database_url) == []
    honest = make_request([make_span(i) for i in range(100, 110)])
    assert TRANSPORTS[transport](collector, honest, {}).ok
    assert len(fetch_spans(database_url)) == 10


def stalled_upload(port: int, path: str = "/v1/traces", declared: int = 16 * 2**20 - 1) -> socket.socket:
    """A client that declares a large body, sends its first bytes, and then sends nothing more."""
    client = socket.create_connection(("127.0.0.1", port))
    head = f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-protobuf\r\n"
    client.sendall(f"{head}content-length: {declared}\r\n\r\n".encode() + b"\x0a" * 1024)
    return client


def in_flight_bytes(collector: Collector) -> int:
    return int(httpx.get(f"http://127.0.0.1:{collector.http_port}/healthz").json()["decode_bytes_in_flight"])


@pytest.mark.parametrize("path", ["/v1/traces", "/v1/logs"])
def test_uploads_that_stall_do_not_hold_the_decode_budget_from_others(
    running_collector: Collector, database_url: str, path: str
) -> None:
    """Each stalled upload reserved the bytes it declared: four of them (16 MiB each, the default
    64 MiB budget) and every honest request was a 429 for as long as they kept their sockets open."""
    stalled = [stalled_upload(running_collector.http_port, path) for _ in range(5)]
    try:
        deadline = time.monotonic() + 30
        while in_flight_bytes(running_collector) < 5 * 1024 and time.monotonic() < deadline:
            time.sleep(0.05)  # the collector has read the first bytes of each
        answer = TRANSPORTS["http-protobuf"](running_collector, make_request([make_span(0)]), {})
        assert (answer.ok, answer.status) == (True, "200"), answer
        assert [span["name"] for span in fetch_spans(database_url)] == ["span-0"]
    finally:
        for client in stalled:
            client.close()


def test_an_upload_that_stalls_past_the_body_timeout_is_a_408_and_gives_its_budget_back(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    collector = make_collector(database_url, collector_body_idle_timeout_s=0.5)
    client = stalled_upload(collector.http_port)
    try:
        client.settimeout(30)
        answer = client.recv(65536).decode(errors="replace")
    finally:
        client.close()
    assert answer.startswith("HTTP/1.1 408 "), answer
    assert "no body bytes for 0.5 s" in answer
    assert in_flight_bytes(collector) == 0


def post_until_stored(collector: Collector, request_body: bytes, timeout_s: float = 60) -> httpx.Response:
    """POST ``request_body`` again after each 503 until an answer that is not one, or ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = httpx.post(
            f"http://127.0.0.1:{collector.http_port}/v1/traces", content=request_body, headers=PROTOBUF
        )
        if answer.status_code != 503 or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def test_connections_that_never_send_a_whole_request_do_not_hold_every_slot(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """uvicorn counts every open connection against the limit and times out none that has not sent a
    request head: four sockets opened and left silent (or cut inside the head) were a 503 to every
    other client for as long as they stayed open, with or without an API key."""
    collector = make_collector(
        database_url, collector_max_concurrent_requests=4, collector_request_head_timeout_s=1
    )
    silent = [socket.create_connection(("127.0.0.1", collector.http_port)) for _ in range(3)]
    silent.append(socket.create_connection(("127.0.0.1", collector.http_port)))
    silent[-1].sendall(b"POST /v1/traces HTTP/1.1\r\nhost: x\r\ncontent-ty")
    try:
        answer = post_until_stored(collector, make_request([make_span(0)]).SerializeToString())
        assert answer.status_code == 200, answer.text
        assert [span["name"] for span in fetch_spans(database_url)] == ["span-0"]
        for client in silent:
            client.settimeout(30)
            assert client.recv(1024) == b""  # the collector closed it
    finally:
        for client in silent:
            client.close()


def test_a_request_head_over_the_cap_is_a_431_and_a_large_body_is_not(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """The key is read from the head, so the head cap is all that stands between a client without one
    and the collector's memory and event loop: a 1 MiB header is refused before it is read whole, and
    its connection closed, while a body of the same size is no head and is stored."""
    collector = make_collector(database_url, auth_enabled=True)
    with socket.create_connection(("127.0.0.1", collector.http_port), timeout=30) as client:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # answered while we sent
            client.sendall(b"POST /v1/traces HTTP/1.1\r\nhost: x\r\nx-padding: ")
            for _ in range(16):
                client.sendall(b"a" * 64 * 1024)
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := client.recv(65536):  # until the collector closes the connection
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    assert b"over 65536 bytes" in answer
    key = new_key(database_url, "alpha")
    attributes = {"padding": "a" * MIB}
    body = make_request([make_span(0, attributes=attributes)]).SerializeToString()
    stored = httpx.post(
        f"http://127.0.0.1:{collector.http_port}/v1/traces",
        content=body,
        headers={**PROTOBUF, "authorization": f"Bearer {key}"},
    )
    assert stored.status_code == 200, stored.text
    assert [span["name"] for span in fetch_spans(database_url)] == ["span-0"]


EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
RESENT_AFTER = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def test_grpc_calls_that_never_send_their_message_do_not_hold_every_worker(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """gRPC waits for a unary call's message in one of the server's worker threads: two calls opened
    and never sent (the default is eight workers) held them all, and every other client's export
    waited in vain for as long as those calls stayed open, with or without an API key."""
    collector = make_collector(
        database_url,
        collector_grpc_workers=2,
        collector_grpc_max_connection_age_s=1,
        collector_grpc_connection_grace_s=1,
    )
    address = f"127.0.0.1:{collector.grpc_port}"
    never = threading.Event()

    def no_message() -> Iterator[bytes]:
        never.wait()
        yield from ()

    with grpc.insecure_channel(address) as silent_channel:
        silent = silent_channel.stream_unary(EXPORT_METHOD)
        stalled = [silent.future(no_message()) for _ in range(2)]
        time.sleep(0.5)  # both reach the collector before the first honest call
        try:
            body = make_request([make_span(0)]).SerializeToString()
            deadline, answer = time.monotonic() + 60, None
            while answer is None and time.monotonic() < deadline:
                with grpc.insecure_channel(address) as channel:
                    try:
                        answer = channel.unary_unary(EXPORT_METHOD)(body, timeout=5)
                    except grpc.RpcError as error:  # an exporter resends after these
                        assert error.code() in RESENT_AFTER
            assert answer is not None, "no export got through while the silent calls were open"
            assert [span["name"] for span in fetch_spans(database_url)] == ["span-0"]
            for call in stalled:
                with pytest.raises(grpc.RpcError):
                    call.result(timeout=30)  # the collector ended it
        finally:
            never.set()
            for call in stalled:
                call.cancel()


def test_uploads_that_trickle_do_not_hold_every_slot(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """The body timeout counted pauses only: a client sending one byte a little more often than every
    collector_body_idle_timeout_s (30 s) held its connection for the length of a 16 MiB body, about
    15 years, and such uploads on every slot but one (uvicorn counts the asking connection) were a
    503 to every other client all along."""
    collector = make_collector(
        database_url,
        collector_max_concurrent_requests=4,
        collector_body_idle_timeout_s=1,
        collector_body_timeout_s=2,
    )
    trickling = [stalled_upload(collector.http_port) for _ in range(3)]
    stop = threading.Event()

    def trickle() -> None:
        while not stop.wait(0.2):
            for client in trickling:
                with contextlib.suppress(OSError):  # the collector answered and closed it
                    client.sendall(b"\x0a")

    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    try:
        answer = post_until_stored(collector, make_request([make_span(0)]).SerializeToString())
        assert answer.status_code == 200, answer.text
        assert [span["name"] for span in fetch_spans(database_url)] == ["span-0"]
        for client in trickling:
            client.settimeout(30)
            assert client.recv(65536).startswith(b"HTTP/1.1 408 ")
    finally:
        stop.set()
        sender.join()
        for client in trickling:
            client.close()


def test_posts_beyond_the_concurrency_limit_are_a_503_with_retry_after(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """collector_max_concurrent_requests counts posts being served (uploads, here stalled ones, hold
    theirs), and one beyond them is told to come back rather than queued."""
    collector = make_collector(database_url, collector_max_concurrent_requests=2)
    url = f"http://127.0.0.1:{collector.http_port}/v1/traces"
    body = make_request([make_span(0)]).SerializeToString()
    stalled = [stalled_upload(collector.http_port) for _ in range(2)]
    try:
        deadline, answer = time.monotonic() + 30, None
        while answer is None or (answer.status_code != 503 and time.monotonic() < deadline):
            time.sleep(0.1)  # until both uploads are being read
            answer = httpx.post(url, content=body, headers=PROTOBUF)
        assert answer.status_code == 503, answer.text
        assert int(answer.headers["retry-after"]) >= 1
        assert status_pb2.Status.FromString(answer.content).message.endswith("requests already")
    finally:
        for client in stalled:
            client.close()
    assert post_until_stored(collector, body).status_code == 200
    assert [span["name"] for span in fetch_spans(database_url)] == ["span-0"]


def test_grpc_calls_beyond_the_concurrency_limit_are_told_when_to_retry(
    database_url: str, make_collector: Callable[..., Collector]
) -> None:
    """gRPC itself refused a call beyond collector_max_concurrent_requests with RESOURCE_EXHAUSTED and
    no RetryInfo, which OTLP exporters take as final: they dropped its spans. It is UNAVAILABLE with a
    delay now, as HTTP's 503 is."""
    collector = make_collector(database_url, collector_max_concurrent_requests=2)
    never = threading.Event()

    def no_message() -> Iterator[bytes]:
        never.wait()
        yield from ()

    request = make_request([make_span(0)])
    with grpc.insecure_channel(f"127.0.0.1:{collector.grpc_port}") as channel:
        silent = channel.stream_unary(EXPORT_METHOD)
        # wait_for_ready: a call started before the channel connects waits for it instead of failing
        # at once (which left no call being served, and the loop below waiting in vain)
        stalled = [silent.future(no_message(), wait_for_ready=True) for _ in range(2)]
        try:
            deadline, answer = time.monotonic() + 30, send_grpc(collector, request, {})
            while answer.ok and time.monotonic() < deadline:  # until both calls are being served
                for index, call in enumerate(stalled):
                    if call.done():  # it came while a probe held a slot and was refused: it retries
                        assert call.code() == grpc.StatusCode.UNAVAILABLE, call.exception()
                        assert call.details().endswith("requests already"), call.exception()
                        stalled[index] = silent.future(no_message(), wait_for_ready=True)
                time.sleep(0.1)
                answer = send_grpc(collector, request, {})
            assert answer.status == "UNAVAILABLE", answer
            assert answer.retry_after_s is not None and answer.retry_after_s >= 1
            assert answer.message.endswith("requests already")
        finally:
            never.set()
            for call in stalled:
                call.cancel()
    deadline, answer = time.monotonic() + 30, send_grpc(collector, request, {})
    while answer.status == "UNAVAILABLE" and time.monotonic() < deadline:  # until the server has seen
        time.sleep(0.1)  # the cancellations and given their slots back, as an exporter retries
        answer = send_grpc(collector, request, {})
    assert answer.ok, answer
    assert [span["name"] for span in fetch_spans(database_url)] == ["span-0"]


def unicode_key(seed: int) -> str:
    """256 characters of four UTF-8 bytes each, as random as a key can be (so nothing compresses)."""
    rnd = random.Random(seed)
    return "".join(chr(0x20000 + rnd.randrange(0xA000)) for _ in range(256))


def test_a_span_whose_rollup_key_postgres_cannot_index_is_rejected_before_it_is_acknowledged(
    running_collector: Collector, database_url: str, transport: str
) -> None:
    """Span rollups are keyed by project, day, model, tenant and feature: three of those at the
    allowed 256 characters of four bytes made the key wider than a btree takes (SQLSTATE 54000), so
    each such span was bisected out of its flush alone. 2,000 of them in one request held the one
    writer (and every other client's spans queued behind them) for 9.5 s; a 500,000-span request
    for most of an hour."""
    wide = {
        names.GEN_AI_REQUEST_MODEL: unicode_key(1),
        names.TENANT: unicode_key(2),
        names.FEATURE: unicode_key(3),
    }
    one_wide_key = {names.GEN_AI_REQUEST_MODEL: unicode_key(4), names.FEATURE: "search"}
    spans = [make_span(8, attributes=wide), make_span(9, attributes=one_wide_key)]
    answer = TRANSPORTS[transport](running_collector, make_request(spans), {})
    assert (answer.ok, answer.rejected) == (True, 1), answer
    assert "bytes" in answer.message and "quarantine" not in answer.message
    assert [span["name"] for span in fetch_spans(database_url)] == ["span-9"]
    assert quarantined(database_url) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        (b'"intValue":"7777777"', b'"intValue":99999999999999999999'),  # JavaScript's 1e20 is an integer
        (b'"intValue":"7777777"', b'"intValue":"-99999999999999999999"'),
        (b'"name":"span-20"', b'"name":["span-20"]'),
    ],
    ids=["int-over-int64", "int-string-under-int64", "name-not-a-string"],
)
def test_a_span_protobuf_json_cannot_read_rejects_that_span_not_its_request(
    running_collector: Collector, database_url: str, field: bytes, value: bytes
) -> None:
    """One span json_format refused made the whole OTLP/JSON request a 400, and the exporter dropped
    every good span in it."""
    odd = make_span(20, attributes={"big": 7777777})
    body = otlp_json(make_request([make_span(21), odd, make_span(22)]))
    assert body.count(field) == 1
    body = body.replace(field, value)
    answer = httpx.post(
        f"http://127.0.0.1:{running_collector.http_port}/v1/traces",
        content=body,
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["partialSuccess"]["rejectedSpans"] == "1", answer.text
    assert [span["name"] for span in fetch_spans(database_url)] == ["span-21", "span-22"]


def nested_arrays(depth: int) -> AnyValue:
    """An ``AnyValue`` of ``depth`` arrays, each holding the next, around an int."""
    value = AnyValue(int_value=1)
    for _ in range(depth):
        value = AnyValue(array_value=ArrayValue(values=[value]))
    return value


def test_a_span_nested_as_deep_as_protobuf_reads_is_stored_over_every_transport(
    running_collector: Collector, database_url: str, transport: str
) -> None:
    """OTLP/JSON counted the depth from the request, three messages above the span: a span upb and
    json_format each read alone made the whole JSON request a 400, and its good spans were lost."""
    deep = make_span(41)
    deep.attributes.append(KeyValue(key="deep", value=nested_arrays(48)))
    answer = TRANSPORTS[transport](running_collector, make_request([make_span(40), deep]), {})
    assert answer.ok and answer.rejected == 0, (answer.status, answer.message)
    assert [span["name"] for span in fetch_spans(database_url)] == ["span-40", "span-41"]


# What JavaScript writes for 1e20 in a number attribute: an integer json_format cannot put in an int64
OVER_INT64 = {"intValue": 10**20}
Mutation = Callable[[dict[str, Any]], None]


def odd_resource(resource: dict[str, Any]) -> None:
    resource["resource"]["attributes"].append({"key": "odd", "value": OVER_INT64})


def odd_scope(resource: dict[str, Any]) -> None:
    scopes = resource["scopeSpans" if "scopeSpans" in resource else "scopeLogs"]
    scopes[0].setdefault("scope", {})["name"] = ["a list"]


@pytest.mark.parametrize(("mutate", "called"), [(odd_resource, "resource"), (odd_scope, "scope")])
def test_a_resource_or_scope_protobuf_json_cannot_read_rejects_its_spans_not_the_request(
    running_collector: Collector, database_url: str, mutate: Mutation, called: str
) -> None:
    """A resource or scope json_format refused made the whole OTLP/JSON request a 400, when one
    unreadable span no longer did: every good span of the other resources and scopes was lost."""
    request = make_request([make_span(30)])
    request.resource_spans.extend(make_request([make_span(31), make_span(32)]).resource_spans)
    document = json.loads(otlp_json(request))
    mutate(document["resourceSpans"][1])
    answer = httpx.post(
        f"http://127.0.0.1:{running_collector.http_port}/v1/traces",
        content=json.dumps(document).encode(),
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 200, answer.text
    partial = answer.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "2" and f"{called} is not OTLP/JSON" in partial["errorMessage"]
    assert [span["name"] for span in fetch_spans(database_url)] == ["span-30"]


def odd_log_record(resource: dict[str, Any]) -> None:
    record = resource["scopeLogs"][0]["logRecords"][0]
    record.setdefault("attributes", []).append({"key": "odd", "value": OVER_INT64})


@pytest.mark.parametrize(
    ("mutate", "called", "kept"),
    [(odd_log_record, "log record", {"kept", "also kept"}), (odd_scope, "scope", {"kept"})]
    + [(odd_resource, "resource", {"kept"})],
    ids=["log-record", "scope", "resource"],
)
def test_a_log_record_protobuf_json_cannot_read_rejects_it_not_the_request(
    running_collector: Collector, database_url: str, mutate: Mutation, called: str, kept: set[str]
) -> None:
    """One log record, or a scope or resource, json_format refused made the whole OTLP/JSON logs
    request a 400, and every good content event sent with it was lost."""
    trace_id, span_ids = (15).to_bytes(16, "big"), [(index + 1).to_bytes(8, "big") for index in range(3)]
    records = [
        log_record("gen_ai.user.message", {"content": content}, trace_id, span_id)
        for content, span_id in zip(("kept", "odd", "also kept"), span_ids, strict=True)
    ]
    request = logs_request(records[:1])
    request.resource_logs.extend(logs_request(records[1:]).resource_logs)
    document = json.loads(to_otlp_json(request))
    mutate(document["resourceLogs"][1])
    answer = httpx.post(
        f"http://127.0.0.1:{running_collector.http_port}/v1/logs",
        content=json.dumps(document).encode(),
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 200, answer.text
    partial = answer.json()["partialSuccess"]
    assert partial["rejectedLogRecords"] == str(3 - len(kept)), partial
    assert f"{called} is not OTLP/JSON" in partial["errorMessage"]
    assert {row["messages"][0]["content"] for row in stored_content(database_url)} == kept


def padded_request(num_bytes: int) -> bytes:
    """An export request of about ``num_bytes``: one resource whose unknown field 15 holds them."""
    resource_spans = varint_bytes(15 << 3 | 2) + varint_bytes(num_bytes) + b"x" * num_bytes
    return varint_bytes(1 << 3 | 2) + varint_bytes(len(resource_spans)) + resource_spans


def peak_rss_bytes(pid: int) -> int:
    """The most resident memory the process has held (Linux: VmHWM)."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def test_grpc_messages_waiting_for_a_worker_are_not_buffered_whole(database_url: str, tmp_path: Path) -> None:
    """gRPC grew each stream's flow-control window (BDP probing) until a call waiting for a worker
    thread had sent its whole message, held outside the decode budget: 128 exports of 16 MiB at once
    took the collector from 116 MiB to 1.5 GiB with the budget at 64 MiB."""
    http_port, grpc_port = free_port(), free_port()
    process = start_collector_process(
        database_url,
        tmp_path,
        http_port,
        EVALLENS_COLLECTOR_GRPC_ENABLED="true",
        EVALLENS_COLLECTOR_GRPC_PORT=str(grpc_port),
        EVALLENS_COLLECTOR_GRPC_WORKERS="2",
        EVALLENS_COLLECTOR_DECODE_WORKERS="1",
    )
    try:
        before = psutil.Process(process.pid).memory_info().rss
        body = padded_request(4 * MIB)

        def export(_: int) -> grpc.StatusCode:
            with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                try:
                    channel.unary_unary(EXPORT_METHOD)(body, timeout=120)
                except grpc.RpcError as error:
                    return error.code()
            return grpc.StatusCode.OK

        with ThreadPoolExecutor(48) as clients:
            codes = set(clients.map(export, range(48)))
        assert codes <= {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}, codes
        # two workers read two 4 MiB messages at a time; 48 buffered whole were 120 MiB or more
        grown = peak_rss_bytes(process.pid) - before
        assert grown < 64 * MIB, f"the collector grew by {grown / MIB:.0f} MiB"
    finally:
        process.terminate()
        process.wait(30)
