"""OTLP logs: the GenAI content events clients send as log records, stored beside their spans.

Newer GenAI instrumentations (``opentelemetry-instrumentation-openai-v2`` with content capture in
``event_only`` mode, older versions always) send the prompt and completion as log events
(``gen_ai.user.message``, ``gen_ai.choice``, ``gen_ai.client.inference.operation.details``), not
on the span. Each one becomes ``genai_content`` rows keyed by trace and span id, which mining joins
onto the trace. Other log records are not stored.

Durability is simpler than for spans and still holds: the answer comes after the rows are committed;
while PostgreSQL is away the request is refused as retryable (503 / UNAVAILABLE with a delay), and
OTLP exporters send it again. A retry stores nothing twice (``uq_genai_content_event``).
"""

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from sqlalchemy import Engine
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import DBAPIError

from collector._anyvalue import any_value, key_values
from collector._body import gunzip_capped
from collector._genai import event_messages
from collector._sqlstate import describe, is_outage
from collector.otlp_json import MalformedRequest, rewrite_ids
from collector.records import datetime_from_ns
from collector.validate import InvalidSpan, SpanLimits, key_text
from evallens.db.models import GenAIContent
from evallens.telemetry import attributes as names
from evallens.telemetry.attributes import DEFAULT_PROJECT

__all__ = ["ContentRow", "DatabaseUnavailable", "LogReceiver", "decode_logs", "parse_logs"]

TRACE_ID_BYTES, SPAN_ID_BYTES = 16, 8
MAX_SHOWN_REASONS = 5
MAX_SHOWN_NAME = 80  # of an event name in a rejection reason


class DatabaseUnavailable(Exception):
    """PostgreSQL cannot take the rows now; the client should send them again after ``retry_after_s``."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


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

    def values(self) -> dict[str, Any]:
        """The row as column values."""
        text = json.dumps(self.messages, ensure_ascii=False, sort_keys=True)
        return {
            "project": self.project,
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "time": datetime_from_ns(self.time_ns),
            "event_name": self.event_name,
            "direction": self.direction,
            "messages": self.messages,
            "digest": hashlib.md5(text.encode(), usedforsecurity=False).hexdigest(),
        }


@dataclass
class LogBatch:
    """What one logs request turned into: rows to store, records refused (with why), records ignored."""

    rows: list[ContentRow] = field(default_factory=list)
    num_rejected: int = 0
    reasons: list[str] = field(default_factory=list)
    num_ignored: int = 0

    def reject(self, reason: str) -> None:
        """Count one refused log record."""
        self.num_rejected += 1
        if len(self.reasons) < MAX_SHOWN_REASONS:
            self.reasons.append(reason)


def parse_logs(body: bytes, body_format: str) -> ExportLogsServiceRequest:
    """An ``ExportLogsServiceRequest`` from a protobuf or OTLP/JSON body (hex ids in JSON)."""
    request = ExportLogsServiceRequest()
    if body_format != "json":
        try:
            request.ParseFromString(body)
        except Exception as error:  # DecodeError, or RuntimeError for deep recursion
            raise MalformedRequest(f"body is not a protobuf ExportLogsServiceRequest: {error}") from None
        return request
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise MalformedRequest(f"body is not valid JSON: {error}") from None
    if not isinstance(document, dict):
        raise MalformedRequest("body must be a JSON object with resourceLogs")
    for resource_logs in _list(document.get("resourceLogs", document.get("resource_logs"))):
        for scope_logs in _list(_get(resource_logs, "scopeLogs", "scope_logs")):
            for record in _list(_get(scope_logs, "logRecords", "log_records")):
                if isinstance(record, dict):
                    rewrite_ids(record)
    try:
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as error:
        raise MalformedRequest(f"not an OTLP ExportLogsServiceRequest: {error}") from None
    return request


def decode_logs(
    request: ExportLogsServiceRequest, project: str | None, limits: SpanLimits, now_ns: int | None = None
) -> LogBatch:
    """The GenAI content rows of ``request``; ``project`` (from the API key) overrides what records claim."""
    batch = LogBatch()
    now_ns = time.time_ns() if now_ns is None else now_ns
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
                except InvalidSpan as error:
                    batch.reject(f"{name}: {error}")
                    continue
                trace_id, span_id = record.trace_id, record.span_id
                if len(trace_id) != TRACE_ID_BYTES or not any(trace_id) or len(span_id) != SPAN_ID_BYTES:
                    batch.reject(f"{name} has no trace and span id to join it to its span")
                    continue
                time_ns = record.time_unix_nano or record.observed_time_unix_nano or now_ns
                for direction, messages in found:
                    row = ContentRow(
                        owner, trace_id.hex(), span_id.hex(), time_ns, str(name), direction, messages
                    )
                    batch.rows.append(row)
    return batch


def _claimed_project(attributes: dict[str, Any], resource: dict[str, Any], limits: SpanLimits) -> str:
    for source, where in ((attributes, "log record"), (resource, "resource")):
        claimed = key_text(f"{where} {names.PROJECT}", source.get(names.PROJECT), limits)
        if claimed:
            return claimed
    return DEFAULT_PROJECT


class LogReceiver:
    """Decodes a logs request and stores its GenAI content before answering."""

    def __init__(self, engine: Engine, limits: SpanLimits, max_body_bytes: int, retry_after_s: int) -> None:
        self.engine, self.limits = engine, limits
        self.max_body_bytes, self.retry_after_s = max_body_bytes, retry_after_s

    def receive(
        self, body: bytes, body_format: str, gzip: bool, project: str | None
    ) -> ExportLogsServiceResponse:
        """Store the content events of one request; raises ``MalformedRequest``, ``BodyTooLarge``,
        ``BadEncoding`` or ``DatabaseUnavailable``. Runs in a thread (it blocks on PostgreSQL)."""
        body = gunzip_capped(body, self.max_body_bytes) if gzip else body
        batch = decode_logs(parse_logs(body, body_format), project, self.limits)
        if batch.rows:
            self._store(batch)
        return logs_response(batch)

    def _store(self, batch: LogBatch) -> None:
        rows = [row.values() for row in batch.rows]
        try:
            with self.engine.begin() as connection:
                connection.execute(insert(GenAIContent).on_conflict_do_nothing(), rows)
        except DBAPIError as error:
            self._raise_if_outage(error)
            self._store_one_by_one(batch, rows)

    def _store_one_by_one(self, batch: LogBatch, rows: list[dict[str, Any]]) -> None:
        """Store what PostgreSQL takes of a batch it refused as a whole; count the rest as rejected."""
        with self.engine.begin() as connection:
            for row in rows:
                try:
                    with connection.begin_nested():
                        connection.execute(insert(GenAIContent).on_conflict_do_nothing(), [row])
                except DBAPIError as error:
                    self._raise_if_outage(error)
                    name = str(row["event_name"])
                    shown = name if len(name) <= MAX_SHOWN_NAME else name[: MAX_SHOWN_NAME - 3] + "..."
                    batch.reject(f"{shown} refused by PostgreSQL: {describe(error.orig or error)}")

    def _raise_if_outage(self, error: DBAPIError) -> None:
        """``DatabaseUnavailable`` when PostgreSQL is away; nothing for rows it refused (a data error).

        By SQLSTATE, as the span writer decides: ``54000`` (an index row too large) comes as the same
        OperationalError class as a lost connection, yet resending it can never succeed.
        """
        if error.connection_invalidated or is_outage(error.orig or error):
            raise DatabaseUnavailable(
                f"cannot store GenAI content now: {error.orig or error}", self.retry_after_s
            ) from None


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


def _get(item: Any, *keys: str) -> Any:
    if not isinstance(item, dict):
        return None
    return next((item[key] for key in keys if key in item), None)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
