"""Spans received by the collector, partitioned by day on ``start_time``."""

from datetime import date, datetime
from typing import Any

from sqlalchemy import BigInteger, CheckConstraint, Date, Index, SmallInteger, String, Text, func, text
from sqlalchemy.dialects.postgresql import DOUBLE_PRECISION, JSONB, TIMESTAMP
from sqlalchemy.orm import Mapped, mapped_column

from evallens.db.base import Base
from evallens.telemetry.attributes import DEFAULT_PROJECT

__all__ = ["DEFAULT_PROJECT", "Span", "SpanRetention"]


class Span(Base):
    """One OpenTelemetry span, with the GenAI fields the dashboard and gate query pulled into columns.

    The primary key includes ``start_time`` because PostgreSQL requires the partition key in every
    unique constraint; a client retry resends the same span with the same start time, so it still
    deduplicates. It includes ``project`` so that two projects sending the same ids never share a row.
    """

    __tablename__ = "spans"
    __table_args__ = (
        Index("ix_spans_trace_id", "trace_id"),
        Index("ix_spans_start_time", "start_time"),
        Index(
            "ix_spans_eval_run_id",
            "eval_run_id",
            postgresql_where=text("eval_run_id IS NOT NULL"),
        ),
        Index("ix_spans_project_start_time", "project", "start_time"),
        {"postgresql_partition_by": "RANGE (start_time)"},
    )

    trace_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    span_id: Mapped[str] = mapped_column(String(16), primary_key=True)
    start_time: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), primary_key=True)
    end_time: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True))
    duration_ms: Mapped[float] = mapped_column(DOUBLE_PRECISION)
    parent_span_id: Mapped[str | None] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(Text)
    kind: Mapped[int] = mapped_column(SmallInteger, comment="OTLP SpanKind enum value")
    service_name: Mapped[str | None] = mapped_column(Text)
    scope_name: Mapped[str | None] = mapped_column(Text)
    scope_version: Mapped[str | None] = mapped_column(Text)
    status_code: Mapped[int] = mapped_column(SmallInteger, comment="0 unset, 1 ok, 2 error")
    status_message: Mapped[str | None] = mapped_column(Text)
    attributes: Mapped[dict[str, Any]] = mapped_column(JSONB)
    resource: Mapped[dict[str, Any]] = mapped_column(JSONB)
    events: Mapped[list[Any]] = mapped_column(JSONB)
    project: Mapped[str] = mapped_column(Text, primary_key=True, server_default=DEFAULT_PROJECT)
    model: Mapped[str | None] = mapped_column(Text)
    input_tokens: Mapped[int | None] = mapped_column(BigInteger)
    output_tokens: Mapped[int | None] = mapped_column(BigInteger)
    cost_usd: Mapped[float | None] = mapped_column(DOUBLE_PRECISION)
    tenant: Mapped[str | None] = mapped_column(Text)
    user_id: Mapped[str | None] = mapped_column(Text)
    feature: Mapped[str | None] = mapped_column(Text)
    eval_run_id: Mapped[str | None] = mapped_column(Text)
    eval_case_id: Mapped[str | None] = mapped_column(Text)


class SpanRetention(Base):
    """How far ``evallens collector prune`` has dropped spans: the days before ``pruned_before`` are gone
    and get no partition again (a late span of one goes to the quarantine). One row, raised by each prune."""

    __tablename__ = "span_retention"
    __table_args__ = (CheckConstraint("id = 1", name="one_row"),)

    id: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    pruned_before: Mapped[date] = mapped_column(
        Date, comment="the latest prune cutoff: no span partition of an earlier day is made again"
    )
    pruned_at: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), server_default=func.now())
