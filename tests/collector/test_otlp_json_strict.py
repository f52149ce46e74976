"""OTLP/JSON that ``json_format`` reads other than as sent.

Numbers: proto3 JSON takes an integer as a JSON number or as a decimal string, a float also as
"NaN"/"Infinity"/"-Infinity". ``json_format`` reads such text with ``int()`` and ``float()``, which
take much more ("1e3", "+5", "1_000", "١٢"): a span carrying one is rejected, saying why, as
``collector.validate`` refuses a number sent as text that JSON would not write. Field names: a field
sent under both its names (``traceId``, ``trace_id``) is refused, not read as the last one."""

import base64
from typing import Any

import httpx
import orjson
import pytest

from collector.logs import LogsJob, decode_logs_body, parse_logs
from collector.pricebook import PriceBook
from collector.runtime import Collector
from collector.validate import SpanLimits, TooManyRecords
from collector.workers import DecodeJob, decode_body
from tests.collector.conftest import fetch_spans, make_request, make_span
from tests.collector.test_genai_content import (
    QUESTION,
    log_record,
    logs_request,
    stored_content,
    to_otlp_json,
)
from tests.collector.test_transports import otlp_json

INT_TEXT_REFUSED = ["1e3", "+5", "1_000", "1.0", "012", " 12", "12\n", "\t7", "١٢", "１２", "0x10", "-0.0"]
FLOAT_TEXT_REFUSED = [" 1.5", "1_0.5", "+1.5", "inf", "infinity", "١.٥", ".5", "1."]
# as JSON numbers, an integral 1e3 or 1.0 is an integer: proto3 JSON's conformance tests require it
INT_ACCEPTED: list[tuple[Any, int]] = [
    ("12", 12),
    ("-5", -5),
    ("0", 0),
    ("-0", 0),
    ("9223372036854775807", 2**63 - 1),
    (12, 12),
    (1e3, 1000),
    (-3.0, -3),
]
FLOAT_ACCEPTED: list[tuple[Any, Any]] = [
    ("1.5", 1.5),
    ("-2e-3", -2e-3),
    ("1E3", 1000.0),
    ("7", 7.0),
    ("NaN", "nan"),
    ("Infinity", "inf"),
    ("-Infinity", "-inf"),
    (0.25, 0.25),
]


def json_spans(values: list[tuple[str, Any]]) -> dict[str, Any]:
    """An OTLP/JSON document of one span per (AnyValue field, value), each in attribute ``odd``."""
    spans = [make_span(index, attributes={"odd": 0}) for index in range(len(values))]
    document: dict[str, Any] = orjson.loads(otlp_json(make_request(spans)))
    for span, (field, value) in zip(
        document["resourceSpans"][0]["scopeSpans"][0]["spans"], values, strict=True
    ):
        span["attributes"][0]["value"] = {field: value}
    return document


def post_json(collector: Collector, document: dict[str, Any]) -> dict[str, Any]:
    answer = httpx.post(
        f"http://127.0.0.1:{collector.http_port}/v1/traces",
        content=orjson.dumps(document),
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def test_numbers_as_text_that_json_would_not_write_reject_their_spans(
    running_collector: Collector, database_url: str
) -> None:
    refused = [("intValue", text) for text in INT_TEXT_REFUSED]
    refused += [("doubleValue", text) for text in FLOAT_TEXT_REFUSED]
    accepted = [("intValue", value) for value, _ in INT_ACCEPTED]
    accepted += [("doubleValue", value) for value, _ in FLOAT_ACCEPTED]
    document = json_spans(accepted + refused)

    partial = post_json(running_collector, document)["partialSuccess"]

    assert partial["rejectedSpans"] == str(len(refused)), partial
    assert "intValue '1e3' is not an integer as JSON writes one" in partial["errorMessage"]
    stored = {row["name"]: row["attributes"]["odd"] for row in fetch_spans(database_url)}
    expected = [value for _, value in INT_ACCEPTED + FLOAT_ACCEPTED]
    assert stored == {f"span-{index}": value for index, value in enumerate(expected)}


def test_a_time_or_an_enum_as_text_json_would_not_write_rejects_its_span(
    running_collector: Collector, database_url: str
) -> None:
    document = json_spans([("intValue", 1)] * 5)
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    start_ns = int(spans[0]["startTimeUnixNano"])
    spans[1]["startTimeUnixNano"] = f"{start_ns:e}".replace("e+", "e")  # "1.7...e18": a float as text
    spans[2]["endTimeUnixNano"] = f"+{spans[2]['endTimeUnixNano']}"
    spans[3]["kind"] = " 2"
    spans[4]["kind"] = "SPAN_KIND_SERVER"
    spans[0]["kind"] = "3"

    partial = post_json(running_collector, document)["partialSuccess"]

    assert partial["rejectedSpans"] == "3", partial
    assert "kind ' 2' is not" in partial["errorMessage"]
    rows = {row["name"]: row for row in fetch_spans(database_url)}
    assert sorted(rows) == ["span-0", "span-4"]
    assert (rows["span-0"]["kind"], rows["span-4"]["kind"]) == (3, 2)


def test_a_log_record_with_a_number_as_text_json_would_not_write_is_rejected() -> None:
    ids = ((1).to_bytes(16, "big"), (1).to_bytes(8, "big"))
    request = logs_request(
        [log_record("gen_ai.user.message", {"content": text}, *ids) for text in (QUESTION, "hi")]
    )
    document = orjson.loads(to_otlp_json(request))
    records = document["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    records[1]["timeUnixNano"] = "1_000"

    parsed, unreadable = parse_logs(orjson.dumps(document), "json", SpanLimits())

    assert len(parsed.resource_logs[0].scope_logs[0].log_records) == 1
    assert len(unreadable) == 1 and "timeUnixNano '1_000' is not an integer" in unreadable[0], unreadable


def test_a_json_body_holding_spans_under_both_names_is_counted_whole() -> None:
    """``resourceSpans`` and ``resource_spans`` name one field; json_format reads the last, the span cap
    counted the first: 500,000 ``{}`` spans after an empty ``resourceSpans`` passed it."""
    spans: list[dict[str, Any]] = [{} for _ in range(11)]
    body = orjson.dumps({"resourceSpans": [], "resource_spans": [{"scopeSpans": [{"spans": spans}]}]})
    job = DecodeJob(body, "json", False, 1 << 20, SpanLimits(max_spans_per_request=10), None, PriceBook([]))
    with pytest.raises(TooManyRecords, match="holds 11 spans"):
        decode_body(job)


def test_a_field_sent_under_both_its_names_is_refused_not_half_read(
    running_collector: Collector, database_url: str
) -> None:
    """json_format keeps the last of ``traceId`` and ``trace_id`` (or of ``scopeSpans`` and
    ``scope_spans``) and drops the other without a word: acknowledged spans were never stored."""
    document = json_spans([("intValue", 1)] * 3)
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[1]["span_id"] = "00000000000000ff"
    answer = post_json(running_collector, document)["partialSuccess"]
    assert answer["rejectedSpans"] == "1" and "spanId and span_id are one field" in answer["errorMessage"]
    assert [row["name"] for row in fetch_spans(database_url)] == ["span-0", "span-2"]

    resource = document["resourceSpans"][0]
    resource["scope_spans"] = [{"spans": [spans.pop()]}]
    answer = httpx.post(
        f"http://127.0.0.1:{running_collector.http_port}/v1/traces",
        content=orjson.dumps(document),
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 400 and "scopeSpans and scope_spans are one field" in answer.text, (
        answer.text
    )


def spaced(hex_id: str, gap: str = " ") -> str:
    """An id as ``bytes.fromhex`` reads it but no exporter writes it: its digit pairs apart."""
    return gap.join(hex_id[at : at + 2] for at in range(0, len(hex_id), 2))


def test_an_id_with_whitespace_in_its_hex_rejects_its_span(
    running_collector: Collector, database_url: str
) -> None:
    """``bytes.fromhex`` skips whitespace: "00 00 ... 02" was stored as a trace id, a parent id with a
    space as that parent. OTLP/JSON ids are hex digits only (either case, as the spec allows)."""
    document = json_spans([("intValue", 1)] * 5)
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[1]["traceId"] = spaced(spans[1]["traceId"])
    spans[2]["spanId"] = spaced(spans[2]["spanId"], "\t")
    spans[3]["parentSpanId"] = spaced(spans[0]["spanId"]) + "\n"
    spans[4]["traceId"] = spans[4]["traceId"].upper()
    spans[4]["parentSpanId"] = spans[0]["spanId"].upper()

    partial = post_json(running_collector, document)["partialSuccess"]

    assert partial["rejectedSpans"] == "3", partial
    message = partial["errorMessage"]
    for which in ("trace id is not hex", "span id is not hex", "parent span id is not hex"):
        assert which in message, message
    rows = {row["name"]: row for row in fetch_spans(database_url)}
    assert sorted(rows) == ["span-0", "span-4"]
    assert rows["span-4"]["parent_span_id"] == spans[0]["spanId"]


def test_a_protobuf_id_of_the_json_not_hex_marker_s_bytes_is_of_the_wrong_length_not_hex() -> None:
    """The JSON decoder marks an id that is not hex as three 0xff bytes; protobuf sent those bytes and
    was told its id was not hex, and to send hex digits, when its id was three bytes long."""
    marker = b"\xff\xff\xff"
    spans = [make_span(0, trace_id=marker), make_span(1), make_span(2, parent=marker)]
    spans[1].span_id = marker
    body = make_request(spans).SerializeToString()

    decoded = decode_body(DecodeJob(body, "protobuf", False, 1 << 20, SpanLimits(), None, PriceBook([])))

    assert decoded.num_rejected == 3
    assert list(decoded.rejection_messages) == [
        "invalid trace id 'ffffff' of 3 bytes (need 16 non-zero bytes)",
        f"invalid span id 'ffffff' of 3 bytes in trace {spans[1].trace_id.hex()} (need 8 non-zero bytes)",
        f"invalid parent span id 'ffffff' of 3 bytes for span {spans[2].span_id.hex()} (need 8 bytes)",
    ]
    # a log record's too: it was told it had no ids to join it to its span, when it sent them
    trace_id = (1).to_bytes(16, "big")
    records = [
        log_record("gen_ai.user.message", {"content": "hi"}, marker, marker),
        log_record("gen_ai.user.message", {"content": "hi"}, trace_id, marker),
        log_record("gen_ai.user.message", {"content": "hi"}, b"", b""),
    ]
    job = LogsJob(logs_request(records).SerializeToString(), "protobuf", False, 1 << 20, SpanLimits(), "p")
    assert decode_logs_body(job).reasons == [
        "gen_ai.user.message: invalid trace id 'ffffff' of 3 bytes (need 16 non-zero bytes)",
        "gen_ai.user.message: invalid span id 'ffffff' of 3 bytes (need 8 non-zero bytes)",
        "gen_ai.user.message has no trace and span id to join it to its span",
    ]


def test_a_log_record_with_an_id_that_is_not_hex_is_rejected_saying_so(
    running_collector: Collector, database_url: str
) -> None:
    """Worded as a span's: the generic "no trace and span id" sent a client looking for a missing id
    when it had sent one, in base64 or with whitespace."""
    ids = ((1).to_bytes(16, "big"), (1).to_bytes(8, "big"))
    request = logs_request([log_record("gen_ai.user.message", {"content": text}, *ids) for text in "abcd"])
    document = orjson.loads(to_otlp_json(request))
    records = document["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    records[1]["traceId"] = spaced(records[1]["traceId"])
    records[2]["spanId"] = base64.b64encode(ids[1]).decode()  # as protobuf's JSON mapping writes bytes
    del records[3]["spanId"]

    answer = httpx.post(
        f"http://127.0.0.1:{running_collector.http_port}/v1/logs",
        content=orjson.dumps(document),
        headers={"content-type": "application/json"},
    )

    assert answer.status_code == 200, answer.text
    partial = answer.json()["partialSuccess"]
    assert partial["rejectedLogRecords"] == "3", partial
    reasons = partial["errorMessage"].split("; ")
    assert reasons[:3] == [
        "gen_ai.user.message: trace id is not hex: OTLP/JSON carries ids as hex strings (32 digits), "
        "not base64",
        "gen_ai.user.message: span id is not hex: OTLP/JSON carries ids as hex strings (16 digits), "
        "not base64",
        "gen_ai.user.message has no trace and span id to join it to its span",
    ], partial
    assert [row["messages"][0]["content"] for row in stored_content(database_url)] == ["a"]


# proto3 JSON: bytes as standard or URL-safe base64, padded or not; json_format dropped what is outside
# the alphabet ("aGVs bG8=" stored as "hello")
BYTES_ACCEPTED = [
    ("aGVsbG8=", "aGVsbG8="),
    ("aGVsbG8", "aGVsbG8="),
    ("+/+/", "+/+/"),
    ("-_-_", "+/+/"),
    ("-_8", "+/8="),
    ("", ""),
]
BYTES_REFUSED = [
    "aGVs bG8=",
    "aGVsbG8*",
    "aGVsbG8=\n",
    "a",
    "aGVsbG8===",
    "aGVs=bG8",
    "AAAA=",
    "+_+_",
    "aGVsbG8!",
]


def test_bytes_that_are_not_base64_reject_their_spans(
    running_collector: Collector, database_url: str
) -> None:
    refused = [("bytesValue", text) for text in BYTES_REFUSED]
    document = json_spans([("bytesValue", value) for value, _ in BYTES_ACCEPTED] + refused)
    nested = json_spans([("intValue", 1)])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    nested["name"] = "nested"
    nested["spanId"] = "00000000000000ff"
    nested["attributes"][0]["value"] = {"arrayValue": {"values": [{"bytesValue": "aGVs bG8="}]}}
    document["resourceSpans"][0]["scopeSpans"][0]["spans"].append(nested)

    partial = post_json(running_collector, document)["partialSuccess"]

    assert partial["rejectedSpans"] == str(len(refused) + 1), partial
    message = partial["errorMessage"]
    assert "bytesValue 'aGVs bG8=' is not base64 (standard or URL-safe, padded or not)" in message, message
    stored = {row["name"]: row["attributes"]["odd"] for row in fetch_spans(database_url)}
    assert stored == {f"span-{index}": value for index, (_, value) in enumerate(BYTES_ACCEPTED)}
