"""Walk a serialized ``ExportTraceServiceRequest`` span by span, never holding the whole message tree.

Parsing a 300,000-span request in one go builds a message tree several times its size; here the
request is split along its wire format (resource_spans = 1, scope_spans = 2, spans = 2) and each
span is parsed alone, so a decode worker holds the body, one span, and what it has packed so far.
Repeated singular fields (``resource``, ``scope``) merge as protobuf merges them: by concatenation.
"""

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span

REQUEST_RESOURCE_SPANS = 1
RESOURCE_RESOURCE, RESOURCE_SCOPE_SPANS = 1, 2
SCOPE_SCOPE, SCOPE_SPANS = 1, 2
LENGTH_DELIMITED = 2
START_GROUP, END_GROUP = 3, 4
MAX_VARINT_SHIFT = 64
MAX_DEPTH = 100  # upb's own limit on nested messages

MessageT = TypeVar("MessageT", bound=Message)

ScopeGroup = tuple[InstrumentationScope, Iterator[Span]]
ResourceGroup = tuple[Resource, Iterator[ScopeGroup]]


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def _varint(data: memoryview, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data):
            raise WireError("truncated varint")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7
        if shift >= MAX_VARINT_SHIFT:
            raise WireError("varint too long")


def fields(data: memoryview, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value start, value end) of each field between ``start`` and ``end``.

    A group (wire type 3, deprecated, never in OTLP) is skipped whole, as protobuf skips an unknown
    one, nested groups too; its value is what lies between its start and end tags.
    """
    position = start
    while position < end:
        number, wire_type, position = _tag(data, position)
        if wire_type == END_GROUP:
            raise WireError(f"end of group {number} without its start")
        if wire_type == START_GROUP:
            value_end, after = _group_end(data, position, end, number)
        else:
            position, value_end = _value(data, position, wire_type)
            after = value_end
        if after > end:
            raise WireError("truncated message")
        yield number, wire_type, position, value_end
        position = after


def _tag(data: memoryview, position: int) -> tuple[int, int, int]:
    key, position = _varint(data, position)
    number, wire_type = key >> 3, key & 7
    if number == 0:
        raise WireError("field number 0")
    return number, wire_type, position


def _value(data: memoryview, position: int, wire_type: int) -> tuple[int, int]:
    """Where the value of a field of ``wire_type`` (not a group) starts and ends."""
    if wire_type == 0:
        return position, _varint(data, position)[1]
    if wire_type == 1:
        return position, position + 8
    if wire_type == LENGTH_DELIMITED:
        length, position = _varint(data, position)
        return position, position + length
    if wire_type == 5:
        return position, position + 4
    raise WireError(f"unsupported wire type {wire_type}")


def _group_end(data: memoryview, position: int, end: int, number: int) -> tuple[int, int]:
    """Where the group ``number`` whose fields start at ``position`` ends: its end tag's start, and
    the position after that tag. Walked without recursion, however deep its groups nest."""
    open_groups = [number]
    while True:
        if position >= end:
            raise WireError(f"truncated group {open_groups[-1]}")
        tag_start = position
        inner, wire_type, position = _tag(data, position)
        if wire_type == START_GROUP:
            if len(open_groups) >= MAX_DEPTH:
                raise WireError(f"groups nested deeper than {MAX_DEPTH}")
            open_groups.append(inner)
        elif wire_type == END_GROUP:
            started = open_groups.pop()
            if inner != started:
                raise WireError(f"group {started} ends with the end tag of field {inner}")
            if not open_groups:
                return tag_start, position
        else:
            position = _value(data, position, wire_type)[1]
        if position > end:
            raise WireError(f"truncated group {open_groups[-1]}")


def _nested(data: memoryview, start: int, end: int, number: int) -> Iterator[tuple[int, int]]:
    for field, wire_type, value_start, value_end in fields(data, start, end):
        if field == number and wire_type == LENGTH_DELIMITED:
            yield value_start, value_end


def _parse(
    kind: type[Span] | type[Resource] | type[InstrumentationScope], data: bytes | memoryview
) -> object:
    try:
        return parse_lenient(kind, data)
    except DecodeError as error:
        raise WireError(f"invalid {kind.__name__}: {error}") from None


def parse_lenient(kind: type[MessageT], data: bytes | memoryview) -> MessageT:
    """``kind`` parsed from ``data``, reading string fields that are not UTF-8 with U+FFFD for each
    bad byte; raises ``DecodeError`` for what is not a ``kind`` at all.

    upb refuses a whole message for one such string. protobuf.js, OpenTelemetry JS's OTLP/protobuf
    encoder, writes a lone UTF-16 surrogate (a string cut inside an emoji) as three such bytes, and
    the OpenTelemetry Collector does not check: it keeps the span, and so do we.
    """
    try:
        return kind.FromString(data)  # type: ignore[arg-type]  # upb parses any buffer: no copy
    except DecodeError as error:
        try:
            repaired = utf8_repaired(memoryview(data), kind.DESCRIPTOR)
        except WireError:
            raise error from None
        if repaired == data:
            raise
        return kind.FromString(repaired)


def utf8_repaired(data: memoryview, message: Any, depth: int = 0) -> bytes:
    """The serialized message of descriptor ``message`` (upb's or the pure-Python one) with every
    string field's bad UTF-8 bytes as U+FFFD."""
    if depth > MAX_DEPTH:
        raise WireError(f"nested deeper than {MAX_DEPTH} messages")
    out = bytearray()
    for number, wire_type, start, end in fields(data, 0, len(data)):
        field = message.fields_by_number.get(number)
        value = data[start:end]
        if wire_type == LENGTH_DELIMITED and field is not None:
            if field.type == FieldDescriptor.TYPE_STRING:
                value = memoryview(bytes(value).decode("utf-8", "replace").encode())
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                value = memoryview(utf8_repaired(value, field.message_type, depth + 1))
        out += varint_bytes(number << 3 | wire_type)
        if wire_type == LENGTH_DELIMITED:
            out += varint_bytes(len(value))
        out += value
        if wire_type == START_GROUP:
            out += varint_bytes(number << 3 | END_GROUP)
    return bytes(out)


def varint_bytes(value: int) -> bytes:
    """``value`` as a protobuf varint."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _merged(
    kind: type[Resource] | type[InstrumentationScope], data: memoryview, start: int, end: int, number: int
) -> object:
    return _parse(kind, b"".join(data[s:e] for s, e in _nested(data, start, end, number)))


def resource_groups(body: bytes) -> Iterator[ResourceGroup]:
    """Each resource with its scopes, each scope with its spans, parsed as they are reached.

    Raises ``WireError`` (possibly part way through) when the body is not a well-formed request.
    """
    data = memoryview(body)
    for start, end in _nested(data, 0, len(data), REQUEST_RESOURCE_SPANS):
        resource = _merged(Resource, data, start, end, RESOURCE_RESOURCE)
        assert isinstance(resource, Resource)
        yield resource, _scope_groups(data, start, end)


def _scope_groups(data: memoryview, start: int, end: int) -> Iterator[ScopeGroup]:
    for scope_start, scope_end in _nested(data, start, end, RESOURCE_SCOPE_SPANS):
        scope = _merged(InstrumentationScope, data, scope_start, scope_end, SCOPE_SCOPE)
        assert isinstance(scope, InstrumentationScope)
        yield scope, _spans(data, scope_start, scope_end)


def _spans(data: memoryview, start: int, end: int) -> Iterator[Span]:
    for span_start, span_end in _nested(data, start, end, SCOPE_SPANS):
        span = _parse(Span, data[span_start:span_end])
        assert isinstance(span, Span)
        yield span


@dataclass(frozen=True)
class EntryCount:
    """The resource entries, scope entries (of every resource) and spans or log records of a request."""

    num_resources: int
    num_scopes: int
    num_records: int


def count_records(body: bytes) -> int:
    """How many spans the serialized ``ExportTraceServiceRequest`` holds, or log records the
    ``ExportLogsServiceRequest`` (the same field numbers), without parsing any (``WireError`` if
    malformed)."""
    return count_entries(body).num_records


def count_entries(body: bytes, stop_after: int | None = None) -> EntryCount:
    """``count_records`` with the resource and scope entries; the walk stops as soon as either
    numbers more than ``stop_after`` (then what it has counted is returned): 8 million empty resource
    entries fit in 16 MiB, and reading them took a decode worker a minute."""
    data = memoryview(body)
    limit = math.inf if stop_after is None else stop_after
    num_resources = num_scopes = num_records = 0
    for start, end in _nested(data, 0, len(data), REQUEST_RESOURCE_SPANS):
        num_resources += 1
        if num_resources > limit:
            break
        for scope_start, scope_end in _nested(data, start, end, RESOURCE_SCOPE_SPANS):
            num_scopes += 1
            if num_scopes > limit:
                return EntryCount(num_resources, num_scopes, num_records)
            num_records += sum(1 for _ in _nested(data, scope_start, scope_end, SCOPE_SPANS))
    return EntryCount(num_resources, num_scopes, num_records)
