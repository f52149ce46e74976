"""What the dashboard reads instead of spans: one row per trace, spend and traffic per day, and the
values seen per day for the filter boxes. A trigger on ``spans`` (migration 0006) keeps all three
up to date in the transaction that stores the spans."""

from datetime import date, datetime

from sqlalchemy import BigInteger, Boolean, Date, Index, Integer, Text, text
from sqlalchemy.dialects.postgresql import DOUBLE_PRECISION, TIMESTAMP
from sqlalchemy.orm import Mapped, mapped_column

from evallens.db.base import Base

__all__ = ["ProductionHistogram", "SpanDimension", "SpanRollup", "TraceSummary"]

PRODUCTION = "asked AND eval_run_id IS NULL AND rated_trace_id IS NULL AND latency_ms IS NOT NULL"


def _by_bucket(measure: str) -> Index:
    """Production summaries by ``measure``'s histogram bucket, then start (migration 0010)."""
    return Index(
        f"ix_trace_summaries_production_{measure}",
        "project",
        text(f"evallens_log_bucket({measure})"),
        "start_time",
        postgresql_include=[measure],
        postgresql_where=text(f"{PRODUCTION} AND {measure} IS NOT NULL"),
    )


class TraceSummary(Base):
    """The spans of one trace folded into one row; spans of one trace may arrive in any order and in
    several requests, each merge gives the same row as folding all of them at once.

    Not partitioned: a trace's start moves earlier when an earlier span arrives late, and a moving
    partition key would cost every batch a probe of every partition. Retention deletes by start.
    """

    __tablename__ = "trace_summaries"
    __table_args__ = (
        Index("ix_trace_summaries_project_start_time", "project", "start_time"),
        Index("ix_trace_summaries_project_tenant_start_time", "project", "tenant", "start_time"),
        Index(
            "ix_trace_summaries_project_eval_run_id",
            "project",
            "eval_run_id",
            postgresql_where=text("eval_run_id IS NOT NULL"),
        ),
        Index(
            "ix_trace_summaries_project_errors",
            "project",
            "start_time",
            postgresql_where=text("error"),
        ),
        Index(
            "ix_trace_summaries_project_rated_trace_id",
            "project",
            "rated_trace_id",
            postgresql_where=text("rated_trace_id IS NOT NULL"),
        ),
        # production traffic as bad-case mining reads it, with every column it reads (migration 0008)
        Index(
            "ix_trace_summaries_production",
            "project",
            "start_time",
            postgresql_include=[
                "trace_id",
                "end_time",
                "latency_ms",
                "cost_usd",
                "error",
                "degraded",
                "timeout",
                "guarded",
                "rag",
                "cited",
                "refusal_hint",
                "own_feedback",
            ],  # fmt: skip
            postgresql_where=text(PRODUCTION),
        ),
        _by_bucket("latency_ms"),
        _by_bucket("cost_usd"),
    )

    project: Mapped[str] = mapped_column(Text, primary_key=True)
    trace_id: Mapped[str] = mapped_column(Text, primary_key=True)
    start_time: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), comment="earliest span start")
    end_time: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), comment="latest span end")
    latency_ms: Mapped[float | None] = mapped_column(DOUBLE_PRECISION, comment="the root span's duration")
    root_name: Mapped[str | None] = mapped_column(Text)
    num_spans: Mapped[int] = mapped_column(Integer)
    error: Mapped[bool] = mapped_column(Boolean, comment="a span ended with status error")
    model: Mapped[str | None] = mapped_column(Text)
    tenant: Mapped[str | None] = mapped_column(Text)
    user_id: Mapped[str | None] = mapped_column(Text)
    feature: Mapped[str | None] = mapped_column(Text)
    eval_run_id: Mapped[str | None] = mapped_column(Text)
    input_tokens: Mapped[int | None] = mapped_column(BigInteger)
    output_tokens: Mapped[int | None] = mapped_column(BigInteger)
    cost_usd: Mapped[float | None] = mapped_column(DOUBLE_PRECISION)
    degraded: Mapped[bool] = mapped_column(Boolean)
    timeout: Mapped[bool] = mapped_column(Boolean)
    guarded: Mapped[bool] = mapped_column(Boolean, comment="the scope or safety guard declined")
    rag: Mapped[bool] = mapped_column(Boolean, comment="a span retrieved documents")
    cited: Mapped[bool] = mapped_column(Boolean, comment="a span names cited documents")
    cache_hit: Mapped[bool] = mapped_column(Boolean, comment="answered from the exact or semantic cache")
    refusal_hint: Mapped[bool] = mapped_column(Boolean, comment="an answer loosely looks like a refusal")
    asked: Mapped[bool] = mapped_column(Boolean, comment="a span or content event carries a user question")
    own_feedback: Mapped[float | None] = mapped_column(DOUBLE_PRECISION, comment="lowest score on the trace")
    rated_trace_id: Mapped[str | None] = mapped_column(Text, comment="the trace this feedback trace rates")
    rating: Mapped[float | None] = mapped_column(DOUBLE_PRECISION, comment="lowest score given to it")
    rating_comment: Mapped[str | None] = mapped_column(Text, comment="the comment of that score")


class SpanRollup(Base):
    """Spend, requests (root spans) and failed requests per UTC day and model, tenant and feature
    (``''`` for none); eval traffic apart so that pages can leave it out."""

    __tablename__ = "span_rollups"

    project: Mapped[str] = mapped_column(Text, primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    model: Mapped[str] = mapped_column(Text, primary_key=True)
    tenant: Mapped[str] = mapped_column(Text, primary_key=True)
    feature: Mapped[str] = mapped_column(Text, primary_key=True)
    eval: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    num_requests: Mapped[int] = mapped_column(BigInteger)
    num_errors: Mapped[int] = mapped_column(BigInteger)
    cost_usd: Mapped[float | None] = mapped_column(DOUBLE_PRECISION)


class SpanDimension(Base):
    """A model, tenant, feature or eval run seen on a UTC day: the filter boxes' options."""

    __tablename__ = "span_dimensions"

    project: Mapped[str] = mapped_column(Text, primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    kind: Mapped[str] = mapped_column(Text, primary_key=True, comment="model | tenant | feature | eval_run")
    value: Mapped[str] = mapped_column(Text, primary_key=True)


class ProductionHistogram(Base):
    """Production traces (as mining counts them) per UTC hour of their start and log-spaced bucket of
    latency or cost; kept by triggers on ``trace_summaries`` (migration 0010)."""

    __tablename__ = "production_histograms"

    project: Mapped[str] = mapped_column(Text, primary_key=True)
    measure: Mapped[str] = mapped_column(Text, primary_key=True, comment="latency_ms or cost_usd")
    hour: Mapped[datetime] = mapped_column(
        TIMESTAMP(timezone=True), primary_key=True, comment="the UTC hour the traces start in"
    )
    bucket: Mapped[int] = mapped_column(Integer, primary_key=True, comment="evallens_log_bucket(value)")
    num_traces: Mapped[int] = mapped_column(BigInteger)
