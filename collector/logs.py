"""OTLP logs: the GenAI content events clients send as log records, stored beside their spans.

Newer GenAI instrumentations (``opentelemetry-instrumentation-openai-v2`` with content capture in
``event_only`` mode, older versions always) send the prompt and completion as log events
(``gen_ai.user.message``, ``gen_ai.choice``, ``gen_ai.client.inference.operation.details``), not
on the span. Each one becomes ``genai_content`` rows keyed by trace and span id, which mining joins
onto the trace. Other log records are not stored.

This module decodes: a logs body is inflated, parsed and turned into COPY text rows in the collector's
decode pool (``decode_logs_body``, run by ``collector.workers``), as a traces body is, so the process
that acknowledges spans only moves bytes. ``collector.log_store`` commits the rows.
"""

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs

from collector._anyvalue import any_value, key_values
from collector._body import gunzip_capped
from collector._genai import event_messages
from collector._wire import WireError, count_entries, parse_lenient
from collector.copy_rows import json_text, text, timestamp_text
from collector.otlp_json import (
    NOT_HEX,
    Level,
    MalformedRequest,
    count_json_entries,
    entries_named,
    load_json_document,
    not_hex_reason,
    parse_readable,
    rewrite_ids,
)
from collector.validate import (
    SPAN_ID_BYTES,
    TRACE_ID_BYTES,
    InvalidSpan,
    SpanLimits,
    check_entry_counts,
    check_record_count,
    check_time,
    invalid_id_reason,
    key_text,
    time_window,
)
from evallens.telemetry import attributes as names
from evallens.telemetry.attributes import DEFAULT_PROJECT

__all__ = [
    "CONTENT_COLUMNS",
    "ContentRow",
    "LogBatch",
    "LogsJob",
    "decode_logs",
    "decode_logs_body",
    "logs_response",
    "parse_logs",
    "shown_name",
]

CONTENT_COLUMNS = ("project", "trace_id", "span_id", "time", "event_name", "direction", "messages", "digest")
MAX_SHOWN_REASONS = 5
MAX_SHOWN_NAME = 80  # of an event name in a rejection reason
# uq_genai_content_event indexes the project and event name beside ids, time, direction and digest
# (some 130 bytes): a btree row holds 2,704 bytes.
MAX_CONTENT_KEY_BYTES = 2400


@dataclass(frozen=True)
class ContentRow:
    """One ``genai_content`` row: the messages of one direction of one event."""

    project: str
    trace_id: str
    span_id: str
    time_ns: int
    event_name: str
    direction: str
    messages: list[dict[str, str]]

    def line(self) -> str:
        """The row as a COPY text line in ``CONTENT_COLUMNS`` order (with its newline)."""
        # the digest as every version wrote it, so a resend after an upgrade is still stored once
        digest_of = json.dumps(self.messages, ensure_ascii=False, sort_keys=True).encode()
        fields = (
            text(self.project),
            self.trace_id,
            self.span_id,
            timestamp_text(self.time_ns),
            text(self.event_name),
            self.direction,
            json_text(self.messages),
            hashlib.md5(digest_of, usedforsecurity=False).hexdigest(),
        )
        return "\t".join(fields) + "\n"


@dataclass
class LogBatch:
    """What one logs request turned into: rows to store (COPY text lines, cheap to hand from a decode
    worker to the receiver), records refused (with why), records ignored."""

    lines: list[str] = field(default_factory=list)
    num_rejected: int = 0
    reasons: list[str] = field(default_factory=list)
    num_ignored: int = 0

    def reject(self, reason: str) -> None:
        """Count one refused log record."""
        self.num_rejected += 1
        if len(self.reasons) < MAX_SHOWN_REASONS:
            self.reasons.append(reason)


@dataclass(frozen=True)
class LogsJob:
    """One logs request body and everything a decode worker needs to turn it into content rows."""

    body: bytes
    body_format: str
    gzip: bool
    max_body_bytes: int
    limits: SpanLimits
    project: str | None


def decode_logs_body(job: LogsJob) -> LogBatch:
    """Runs in a decode worker: a logs body to the GenAI content rows it holds.

    Raises ``BodyTooLarge``/``BadEncoding`` (gzip), ``MalformedRequest`` or ``TooManyRecords``.
    """
    body = gunzip_capped(job.body, job.max_body_bytes) if job.gzip else job.body
    request, unreadable = parse_logs(body, job.body_format, job.limits)
    batch = decode_logs(request, job.project, job.limits, hex_ids=job.body_format == "json")
    for reason in unreadable:
        batch.reject(reason)
    return batch


LOG_LEVELS = (
    Level(("resourceLogs", "resource_logs"), ResourceLogs, "resource"),
    Level(("scopeLogs", "scope_logs"), ScopeLogs, "scope"),
    Level(("logRecords", "log_records"), LogRecord, "log record"),
)


def parse_logs(
    body: bytes, body_format: str, limits: SpanLimits
) -> tuple[ExportLogsServiceRequest, tuple[str, ...]]:
    """An ``ExportLogsServiceRequest`` from a protobuf or OTLP/JSON body (hex ids in JSON), and why
    each log record of a JSON body that ``json_format`` cannot read (or its resource or scope) was
    left out: one such record made the whole request a 400, and every good record in it was lost.

    ``TooManyRecords`` when the body holds more log records (or resource or scope entries) than a
    request may, counted before any is built: 16 MiB held 5.6 million ``{}`` records (8 million empty
    ones as protobuf), and building and reading them took a decode worker, which every request waits
    for, about a minute.
    """
    if body_format != "json":
        try:
            counted = count_entries(body, stop_after=limits.max_spans_per_request)
        except WireError as error:
            raise MalformedRequest(f"body is not a protobuf ExportLogsServiceRequest: {error}") from None
        check_entry_counts(counted.num_resources, counted.num_scopes, limits, "log records")
        check_record_count(counted.num_records, limits, "log records")
        try:
            return parse_lenient(ExportLogsServiceRequest, body), ()
        except Exception as error:  # DecodeError, or RuntimeError for deep recursion
            raise MalformedRequest(f"body is not a protobuf ExportLogsServiceRequest: {error}") from None
    document = load_json_document(body, "resourceLogs")
    cap = limits.max_spans_per_request
    check_entry_counts(*count_json_entries(document, LOG_LEVELS, cap), limits, "log records")
    records = [
        record
        for resource_logs in entries_named(document, LOG_LEVELS[0].keys)
        for scope_logs in entries_named(resource_logs, LOG_LEVELS[1].keys)
        for record in entries_named(scope_logs, LOG_LEVELS[2].keys)
    ]
    check_record_count(len(records), limits, "log records")
    for record in records:
        if isinstance(record, dict):
            rewrite_ids(record, mark_not_hex=True)
    request = ExportLogsServiceRequest()
    unreadable = parse_readable(document, request, LOG_LEVELS)
    return request, unreadable


def decode_logs(
    request: ExportLogsServiceRequest,
    project: str | None,
    limits: SpanLimits,
    now_ns: int | None = None,
    *,
    hex_ids: bool = False,
) -> LogBatch:
    """The GenAI content rows of ``request``; ``project`` (from the API key) overrides what records claim.
    ``hex_ids``: ``request`` came from OTLP/JSON."""
    batch = LogBatch()
    now_ns = time.time_ns() if now_ns is None else now_ns
    window = time_window(limits, now_ns)
    for resource_logs in request.resource_logs:
        resource = key_values(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                attributes = key_values(record.attributes)
                name = record.event_name or attributes.get(names.EVENT_NAME)
                body = any_value(record.body) if record.HasField("body") else None
                found = event_messages(name, attributes, body)
                if not found:
                    batch.num_ignored += 1
                    continue
                try:
                    owner = project or _claimed_project(attributes, resource, limits)
                    _check_content_key(owner, str(name))
                except InvalidSpan as error:
                    batch.reject(f"{shown_name(str(name))}: {error}")
                    continue
                trace_id, span_id = record.trace_id, record.span_id
                problem = _id_problem(trace_id, span_id, hex_ids)
                if problem:
                    batch.reject(f"{name}{problem}")
                    continue
                # the OTLP spec: the observed time stands in for a time of 0 (unknown)
                time_ns = record.time_unix_nano or record.observed_time_unix_nano or now_ns
                try:
                    check_time("time", time_ns, window)
                except InvalidSpan as error:
                    batch.reject(f"{name}: {error}")
                    continue
                for direction, messages in found:
                    row = ContentRow(
                        owner, trace_id.hex(), span_id.hex(), time_ns, str(name), direction, messages
                    )
                    batch.lines.append(row.line())
    return batch


def _id_problem(trace_id: bytes, span_id: bytes, hex_ids: bool) -> str | None:
    """What keeps a log record's ids from joining it to its span (after its event name), None if nothing;
    ``hex_ids``: the record came from OTLP/JSON (``NOT_HEX`` marks an id that was not hex there)."""
    for which, value, size in (("trace id", trace_id, TRACE_ID_BYTES), ("span id", span_id, SPAN_ID_BYTES)):
        if hex_ids and value == NOT_HEX:
            return f": {not_hex_reason(which, size)}"
    # sent, but of the wrong length or all zero (invalid in OTLP, as a span's): a client told its ids
    # are missing looks for a bug it does not have
    if trace_id and (len(trace_id) != TRACE_ID_BYTES or not any(trace_id)):
        return f": {invalid_id_reason('trace id', trace_id, TRACE_ID_BYTES)}"
    if span_id and (len(span_id) != SPAN_ID_BYTES or not any(span_id)):
        return f": {invalid_id_reason('span id', span_id, SPAN_ID_BYTES)}"
    if not trace_id or not span_id:
        return " has no trace and span id to join it to its span"
    return None


def _check_content_key(project: str, event_name: str) -> None:
    """``InvalidSpan`` unless ``uq_genai_content_event`` can index the project and event name: PostgreSQL
    refused a longer one (SQLSTATE 54000), and the batch holding it was stored again in pieces."""
    if (len(project) + len(event_name)) * 4 <= MAX_CONTENT_KEY_BYTES:  # no UTF-8 character is wider
        return
    num_bytes = len(project.encode()) + len(event_name.encode())
    if num_bytes > MAX_CONTENT_KEY_BYTES:
        raise InvalidSpan(
            f"project and event name together are {num_bytes} bytes of UTF-8; "
            f"at most {MAX_CONTENT_KEY_BYTES} can be indexed"
        )


def shown_name(name: str) -> str:
    """An event name as a rejection reason shows it: cut to ``MAX_SHOWN_NAME`` characters."""
    return name if len(name) <= MAX_SHOWN_NAME else name[: MAX_SHOWN_NAME - 3] + "..."


def _claimed_project(attributes: dict[str, Any], resource: dict[str, Any], limits: SpanLimits) -> str:
    for source, where in ((attributes, "log record"), (resource, "resource")):
        claimed = key_text(f"{where} {names.PROJECT}", source.get(names.PROJECT), limits)
        if claimed:
            return claimed
    return DEFAULT_PROJECT


def logs_response(batch: LogBatch) -> ExportLogsServiceResponse:
    """Empty on success; ``partial_success`` with the refused records and why (and a note on ignored ones)."""
    response = ExportLogsServiceResponse()
    notes = list(batch.reasons)
    if batch.num_ignored:
        notes.append(f"{batch.num_ignored} log records are not GenAI content events and were not stored")
    if batch.num_rejected or notes:
        response.partial_success.CopyFrom(
            ExportLogsPartialSuccess(rejected_log_records=batch.num_rejected, error_message="; ".join(notes))
        )
    return response
