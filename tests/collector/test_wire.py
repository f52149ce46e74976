"""Walking a request span by span gives exactly what parsing the whole message gives."""

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from collector import _wire
from collector.decode import Rejections, count_spans, iter_spans, message_groups
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
