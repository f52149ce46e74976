"""GenAI content that clients send as OTLP log events, kept beside the spans they belong to."""

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, CheckConstraint, Identity, Index, String, Text, UniqueConstraint, func
from sqlalchemy.dialects.postgresql import JSONB, TIMESTAMP
from sqlalchemy.orm import Mapped, mapped_column

from evallens.db.base import Base


class GenAIContent(Base):
    """The messages of one GenAI content event (``gen_ai.user.message``, ``gen_ai.choice``,
    ``gen_ai.client.inference.operation.details``...), joined to its span by trace and span id.

    ``direction`` says whether the messages went to the model (input) or came from it (output); a client
    retry resends the same event, which ``digest`` (of the messages) and the time deduplicate.
    """

    __tablename__ = "genai_content"
    __table_args__ = (
        CheckConstraint("direction IN ('input', 'output')", name="direction"),
        UniqueConstraint(
            "project",
            "trace_id",
            "span_id",
            "time",
            "event_name",
            "direction",
            "digest",
            name="uq_genai_content_event",
        ),
        Index("ix_genai_content_project_trace_id", "project", "trace_id"),
        Index("ix_genai_content_project_time", "project", "time"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    project: Mapped[str] = mapped_column(Text)
    trace_id: Mapped[str] = mapped_column(String(32))
    span_id: Mapped[str] = mapped_column(String(16))
    time: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), comment="the event's time")
    event_name: Mapped[str] = mapped_column(Text)
    direction: Mapped[str] = mapped_column(Text)
    messages: Mapped[list[dict[str, Any]]] = mapped_column(
        JSONB, comment='[{"role": ..., "content": ...}] in the order sent'
    )
    digest: Mapped[str] = mapped_column(Text, comment="md5 of the messages, for deduplicating retries")
    received_at: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), server_default=func.now())
