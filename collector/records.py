"""Plain records the decoder produces and the writer stores: no ORM objects on the hot path."""

from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import Any

from evallens.telemetry.attributes import DEFAULT_PROJECT

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Column order of the spans table as the writer COPYs it.
SPAN_COLUMNS = (
    "trace_id",
    "span_id",
    "start_time",
    "end_time",
    "duration_ms",
    "parent_span_id",
    "name",
    "kind",
    "service_name",
    "scope_name",
    "scope_version",
    "status_code",
    "status_message",
    "attributes",
    "resource",
    "events",
    "project",
    "model",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "tenant",
    "user_id",
    "feature",
    "eval_run_id",
    "eval_case_id",
)


def datetime_from_ns(unix_ns: int) -> datetime:
    """An aware UTC datetime from nanoseconds since the epoch (to the microsecond PostgreSQL keeps)."""
    return EPOCH + timedelta(microseconds=unix_ns // 1000)


@dataclass(slots=True)
class SpanRecord:
    """One decoded span: every column of ``spans``, times as Unix nanoseconds, JSON as Python values."""

    trace_id: str
    span_id: str
    start_time_ns: int
    end_time_ns: int
    parent_span_id: str | None
    name: str
    kind: int
    service_name: str | None
    scope_name: str | None
    scope_version: str | None
    status_code: int
    status_message: str | None
    attributes: dict[str, Any]
    resource: dict[str, Any]
    events: list[Any]
    project: str = DEFAULT_PROJECT
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    tenant: str | None = None
    user_id: str | None = None
    feature: str | None = None
    eval_run_id: str | None = None
    eval_case_id: str | None = None
    engine_time_s: float | None = field(default=None, compare=False)
    concurrent_requests: int | None = field(default=None, compare=False)

    @property
    def duration_ms(self) -> float:
        """Wall time of the span in milliseconds."""
        return (self.end_time_ns - self.start_time_ns) / 1e6

    @property
    def start_time(self) -> datetime:
        """Start as an aware UTC datetime."""
        return datetime_from_ns(self.start_time_ns)


@dataclass(frozen=True, slots=True)
class DecodedBatch:
    """What one export request turned into: the spans to store and the ones rejected, with why."""

    spans: list[SpanRecord]
    num_rejected: int = 0
    rejection_messages: tuple[str, ...] = ()

    @property
    def error_message(self) -> str:
        """A short summary of the rejections for ``partial_success.error_message``."""
        if not self.num_rejected:
            return ""
        shown = "; ".join(self.rejection_messages[:5])
        more = self.num_rejected - min(len(self.rejection_messages), 5)
        return f"{self.num_rejected} spans rejected: {shown}" + (f" (and {more} more)" if more > 0 else "")


RECORD_FIELDS = tuple(item.name for item in fields(SpanRecord))


def record_to_dict(span: SpanRecord) -> dict[str, Any]:
    """Every field of ``span`` as JSON-ready values (for the quarantine)."""
    return {name: getattr(span, name) for name in RECORD_FIELDS}


def record_from_dict(values: dict[str, Any]) -> SpanRecord:
    """The record ``record_to_dict`` wrote (unknown keys ignored, so older rows still load)."""
    return SpanRecord(**{name: values[name] for name in RECORD_FIELDS if name in values})
