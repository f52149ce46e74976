"""Walking a request span by span gives exactly what parsing the whole message gives."""

import time

import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from collector import _wire
from collector.decode import Rejections, count_spans, iter_spans, message_groups
from collector.logs import parse_logs
from collector.records import SpanRecord
from collector.validate import SpanLimits
from tests.collector.conftest import make_request, make_span

NOW = time.time_ns()


def decode_both(body: bytes) -> tuple[list[SpanRecord], list[SpanRecord]]:
    limits = SpanLimits()
    whole = list(
        iter_spans(message_groups(ExportTraceServiceRequest.FromString(body)), limits, Rejections(), NOW)
    )
    walked = list(iter_spans(_wire.resource_groups(body), limits, Rejections(), NOW))
    return whole, walked


@st.composite  # type: ignore[untyped-decorator]
def requests(draw: st.DrawFn) -> bytes:
    request = ExportTraceServiceRequest()
    for resource_index in range(draw(st.integers(0, 3))):
        spans = [
            make_span(
                resource_index * 100 + i, start_ns=NOW - 10**9, attributes={"k": draw(st.text(max_size=5))}
            )
            for i in range(draw(st.integers(0, 4)))
        ]
        part = make_request(spans, {"service.name": f"svc-{resource_index}", "evallens.tenant": "t"})
        request.resource_spans.extend(part.resource_spans)
        if draw(st.booleans()):  # a second scope in the same resource
            request.resource_spans[-1].scope_spans.add().spans.append(make_span(999 + resource_index))
    return bytes(request.SerializeToString())


@settings(max_examples=60, deadline=None)  # type: ignore[untyped-decorator]
@given(requests())  # type: ignore[untyped-decorator]
def test_walking_equals_parsing(body: bytes) -> None:
    whole, walked = decode_both(body)
    assert walked == whole
    assert _wire.count_records(body) == count_spans(ExportTraceServiceRequest.FromString(body))


def test_repeated_resource_and_scope_fields_merge_like_protobuf() -> None:
    first = make_request([make_span(0)], {"service.name": "one", "a": 1})
    second = make_request([make_span(1)], {"b": 2})
    # one ResourceSpans whose resource (field 1) and scope spans (field 2) are each sent twice
    resource_spans = (
        first.resource_spans[0].SerializeToString() + second.resource_spans[0].SerializeToString()
    )
    body = b"\x0a" + _wire.varint_bytes(len(resource_spans)) + resource_spans
    whole, walked = decode_both(body)
    assert walked == whole and len(walked) == 2
    assert walked[0].resource == {"service.name": "one", "a": 1, "b": 2}


@pytest.mark.parametrize(
    "body",
    [b"\x0a\xff\xff\xff\xff\x0f", b"\x0a\x05\x12\x03\x12\x01", b"\x0b", b"\x00\x01", b"\x0a\x02\x12\x05"],
    ids=["huge length", "truncated span", "group", "field zero", "nested overrun"],
)
def test_malformed_bodies_raise(body: bytes) -> None:
    with pytest.raises(_wire.WireError):
        list(iter_spans(_wire.resource_groups(body), SpanLimits(), Rejections(), NOW))


def tag(number: int, wire_type: int) -> bytes:
    return _wire.varint_bytes(number << 3 | wire_type)


def group(number: int, *content: bytes) -> bytes:
    """A group field (wire types 3 and 4) holding ``content``."""
    return tag(number, 3) + b"".join(content) + tag(number, 4)


def field(number: int, value: bytes) -> bytes:
    return tag(number, 2) + _wire.varint_bytes(len(value)) + value


# an unknown group with a varint, a string, a fixed64 and a nested group of its own
UNKNOWN_GROUP = group(
    99, tag(1, 0) + b"\x96\x01", field(2, b"text"), tag(3, 1) + bytes(8), group(98, tag(4, 5) + bytes(4))
)


def with_groups(request: ExportTraceServiceRequest) -> bytes:
    """``request`` serialized with unknown groups in the request, each resource, scope and span."""
    resources = b""
    for resource_spans in request.resource_spans:
        scopes = b""
        for scope_spans in resource_spans.scope_spans:
            spans = b"".join(field(2, span.SerializeToString() + UNKNOWN_GROUP) for span in scope_spans.spans)
            scopes += field(2, UNKNOWN_GROUP + field(1, scope_spans.scope.SerializeToString()) + spans)
        resource = field(1, resource_spans.resource.SerializeToString() + UNKNOWN_GROUP)
        resources += field(1, resource + UNKNOWN_GROUP + scopes + group(7))
    return UNKNOWN_GROUP + resources + UNKNOWN_GROUP


def test_unknown_group_fields_are_skipped_as_protobuf_skips_them() -> None:
    request = make_request([make_span(i, start_ns=NOW - 10**9) for i in range(3)])
    body = with_groups(request)
    parsed = ExportTraceServiceRequest.FromString(body)  # the real classes skip them too
    assert count_spans(parsed) == 3 and parsed.resource_spans[0].scope_spans[0].scope.name == "tests"
    whole, walked = decode_both(body)
    assert len(walked) == 3 and walked == whole
    assert walked == decode_both(request.SerializeToString())[1]  # as if they were never there
    assert _wire.count_records(body) == 3


def test_a_span_with_a_group_and_bad_utf8_is_repaired_keeping_the_group() -> None:
    span = make_span(1)
    span.name = "ok"
    body = bytes(span.SerializeToString()).replace(b"\x02ok", b"\x02o\xff") + UNKNOWN_GROUP
    with pytest.raises(DecodeError):
        Span.FromString(body)
    repaired = _wire.parse_lenient(Span, body)
    assert repaired.name == "o\ufffd" and repaired.SerializeToString().endswith(UNKNOWN_GROUP)


@pytest.mark.parametrize(
    "body",
    [
        tag(99, 4),
        group(99) + tag(98, 4),
        tag(99, 3) + tag(98, 4),
        tag(99, 3) + tag(98, 3) + tag(99, 4) + tag(98, 4),
        tag(99, 3) + tag(1, 0) + b"\x05",
        tag(99, 3) + group(98),
        tag(99, 3) + field(2, b"text")[:-1],
        tag(99, 3) + tag(2, 2) + b"\x7f" + tag(99, 4),
        group(99, tag(3, 7)),
        tag(99, 3) * (_wire.MAX_DEPTH + 1) + tag(99, 4) * (_wire.MAX_DEPTH + 1),
    ],
    ids=[
        "end without start",
        "second end",
        "end of another field",
        "crossed ends",
        "no end",
        "nested group, outer one not ended",
        "truncated inside",
        "length past the end tag",
        "bad wire type inside",
        "too deep",
    ],
)
def test_malformed_groups_raise_as_protobuf_refuses_them(body: bytes) -> None:
    with pytest.raises(DecodeError):
        ExportTraceServiceRequest.FromString(body)
    with pytest.raises(_wire.WireError):
        _wire.count_records(body)
    request = make_request([make_span(1, start_ns=NOW - 10**9)]).SerializeToString()
    for where in (body + request, request + body):  # before or after good fields
        with pytest.raises(_wire.WireError):
            list(iter_spans(_wire.resource_groups(where), SpanLimits(), Rejections(), NOW))


def test_groups_nested_as_deep_as_protobuf_allows_are_skipped() -> None:
    deep = tag(99, 3) * _wire.MAX_DEPTH + tag(99, 4) * _wire.MAX_DEPTH
    body = deep + make_request([make_span(1, start_ns=NOW - 10**9)]).SerializeToString()
    assert count_spans(ExportTraceServiceRequest.FromString(body)) == 1
    assert len(decode_both(body)[1]) == 1


def test_a_logs_request_with_unknown_groups_is_read() -> None:
    record = LogRecord(event_name="gen_ai.user.message", trace_id=bytes(range(1, 17)), span_id=bytes(8))
    scope_logs = field(2, UNKNOWN_GROUP + field(2, record.SerializeToString() + UNKNOWN_GROUP))
    body = UNKNOWN_GROUP + field(1, scope_logs + UNKNOWN_GROUP)
    request, unreadable = parse_logs(body, "protobuf", SpanLimits())
    assert unreadable == () and request == ExportLogsServiceRequest.FromString(body)
    assert request.resource_logs[0].scope_logs[0].log_records[0].event_name == "gen_ai.user.message"
