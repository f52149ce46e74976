"""OTLP export requests (protobuf messages) into plain span records, rejecting bad spans one by one."""

import time
from collections.abc import Iterable, Iterator
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from collector._anyvalue import key_values
from collector._genai import GenAIFields, add_content_attributes, resource_defaults
from collector._wire import ResourceGroup
from collector.otlp_json import NOT_HEX, not_hex_reason
from collector.records import DecodedBatch, SpanRecord
from collector.validate import (
    SPAN_ID_BYTES,
    TRACE_ID_BYTES,
    InvalidSpan,
    SpanLimits,
    check_event_count,
    check_times,
    free_text,
    invalid_id_reason,
    time_window,
)
from evallens.telemetry import attributes as names
from evallens.telemetry.messages import clean_text

MAX_SPAN_KIND = 5
MAX_STATUS_CODE = 2
MAX_MESSAGES = 5

__all__ = [
    "InvalidSpan",
    "Rejections",
    "SpanLimits",
    "count_spans",
    "decode_request",
    "iter_spans",
    "message_groups",
]


class Rejections:
    """How many spans of a request were rejected, and the first few reasons."""

    def __init__(self) -> None:
        self.count = 0
        self.messages: list[str] = []

    def add(self, error: InvalidSpan) -> None:
        """Count one rejected span."""
        self.count += 1
        if len(self.messages) < MAX_MESSAGES:
            self.messages.append(str(error))


def count_spans(request: ExportTraceServiceRequest) -> int:
    """How many spans ``request`` holds, valid or not."""
    return sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)


def message_groups(request: ExportTraceServiceRequest) -> Iterator[ResourceGroup]:
    """The resources, scopes and spans of a parsed request, in the shape ``iter_spans`` reads."""
    for resource_spans in request.resource_spans:
        scopes = ((scope_spans.scope, iter(scope_spans.spans)) for scope_spans in resource_spans.scope_spans)
        yield resource_spans.resource, scopes


def decode_request(
    request: ExportTraceServiceRequest, limits: SpanLimits, now_ns: int | None = None
) -> DecodedBatch:
    """Every valid span of ``request`` as a record; invalid ones counted with a message."""
    rejections = Rejections()
    spans = list(iter_spans(message_groups(request), limits, rejections, now_ns))
    return DecodedBatch(
        spans=spans, num_rejected=rejections.count, rejection_messages=tuple(rejections.messages)
    )


def iter_spans(
    groups: Iterable[ResourceGroup],
    limits: SpanLimits,
    rejections: Rejections,
    now_ns: int | None = None,
    *,
    hex_ids: bool = False,
) -> Iterator[SpanRecord]:
    """The valid spans of a request (``message_groups`` or ``_wire.resource_groups``) one by one; each
    invalid one is added to ``rejections``. ``hex_ids``: the request was OTLP/JSON, whose ids that
    were not hex ``rewrite_ids`` marked ``NOT_HEX``. ``TooManyRecords`` once the spans' events number
    more than a request may hold spans, before they are read."""
    window = time_window(limits, time.time_ns() if now_ns is None else now_ns)
    num_events = 0
    for resource_message, scopes in groups:
        resource = key_values(resource_message.attributes)
        service_name = resource.get(names.SERVICE_NAME)
        service_name = free_text(service_name, limits) if isinstance(service_name, str) else None
        try:
            defaults = resource_defaults(resource, limits)
        except InvalidSpan as error:
            for _, spans in scopes:
                for _ in spans:
                    rejections.add(error)
            continue
        for scope_message, spans in scopes:
            scope = (
                free_text(clean_text(scope_message.name), limits) or None,
                free_text(clean_text(scope_message.version), limits) or None,
            )
            for span in spans:
                num_events += len(span.events)
                check_event_count(num_events, limits)
                try:
                    origin = (service_name, *scope)
                    yield decode_span(span, resource, origin, defaults, window, limits, hex_ids=hex_ids)
                except InvalidSpan as error:
                    rejections.add(error)


def decode_span(
    span: Any,
    resource: dict[str, Any],
    origin: tuple[str | None, str | None, str | None],
    defaults: tuple[str | None, ...],
    window: tuple[int, int],
    limits: SpanLimits,
    *,
    hex_ids: bool = False,
) -> SpanRecord:
    """One OTLP ``Span`` as a record, or ``InvalidSpan`` saying what is wrong with it.

    ``origin`` is (service name, scope name, scope version); ``defaults`` come from the resource.
    """
    trace_id, span_id, parent_span_id = span_ids(span, hex_ids=hex_ids)
    start_ns, end_ns = span.start_time_unix_nano, span.end_time_unix_nano
    check_times(span_id, start_ns, end_ns, window, limits)
    attributes = key_values(span.attributes)
    try:
        fields = GenAIFields(attributes, defaults, limits)
    except InvalidSpan as error:
        raise InvalidSpan(f"span {span_id}: {error}") from None
    events = [decode_event(event) for event in span.events] if span.events else []
    add_content_attributes(attributes, events)
    status = span.status
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        start_time_ns=start_ns,
        end_time_ns=end_ns,
        parent_span_id=parent_span_id,
        name=free_text(clean_text(span.name), limits),
        kind=span.kind if 0 <= span.kind <= MAX_SPAN_KIND else 0,
        service_name=origin[0],
        scope_name=origin[1],
        scope_version=origin[2],
        status_code=status.code if 0 <= status.code <= MAX_STATUS_CODE else 0,
        status_message=free_text(clean_text(status.message), limits) or None,
        attributes=attributes,
        resource=resource,
        events=events,
        project=fields.project,
        model=fields.model,
        input_tokens=fields.input_tokens,
        output_tokens=fields.output_tokens,
        cost_usd=fields.cost_usd,
        tenant=fields.tenant,
        user_id=fields.user_id,
        feature=fields.feature,
        eval_run_id=fields.eval_run_id,
        eval_case_id=fields.eval_case_id,
        engine_time_s=fields.engine_time_s,
        concurrent_requests=fields.concurrent_requests,
    )


def span_ids(span: Any, *, hex_ids: bool = False) -> tuple[str, str, str | None]:
    """Hex trace, span and parent ids, checked for length and for the all-zero invalid id.

    ``hex_ids``: the span came from OTLP/JSON, where ``NOT_HEX`` marks an id that was not hex; a
    protobuf id of those three bytes is only an id of the wrong length.
    """
    trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
    for which, value, size in (
        ("trace id", trace_id, TRACE_ID_BYTES),
        ("span id", span_id, SPAN_ID_BYTES),
        ("parent span id", parent, SPAN_ID_BYTES),
    ):
        if hex_ids and value == NOT_HEX:
            raise InvalidSpan(not_hex_reason(which, size))
    if len(trace_id) != TRACE_ID_BYTES or not any(trace_id):
        raise InvalidSpan(invalid_id_reason("trace id", trace_id, TRACE_ID_BYTES))
    if len(span_id) != SPAN_ID_BYTES or not any(span_id):
        where = f" in trace {trace_id.hex()}"
        raise InvalidSpan(invalid_id_reason("span id", span_id, SPAN_ID_BYTES, where=where))
    if parent and len(parent) != SPAN_ID_BYTES:
        where = f" for span {span_id.hex()}"
        raise InvalidSpan(
            invalid_id_reason("parent span id", parent, SPAN_ID_BYTES, where=where, non_zero=False)
        )
    return trace_id.hex(), span_id.hex(), (parent.hex() if any(parent) else None)


def decode_event(event: Any) -> dict[str, Any]:
    """A span event as JSON: name, time and attributes."""
    return {
        "name": clean_text(event.name),
        "time_unix_nano": event.time_unix_nano,
        "attributes": key_values(event.attributes),
    }
