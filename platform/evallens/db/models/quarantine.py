"""Spans the collector acknowledged but PostgreSQL refused: kept with the reason, never dropped."""

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Identity, Index, Text, func
from sqlalchemy.dialects.postgresql import JSONB, TIMESTAMP
from sqlalchemy.orm import Mapped, mapped_column

from evallens.db.base import Base


class QuarantinedSpan(Base):
    """One refused span: its full record as the collector decoded it, its project, why and when.

    ``evallens collector quarantine retry`` writes it into ``spans`` again (after a fix), ``drop``
    deletes it; the dashboard and ``/metrics`` count what is here.
    """

    __tablename__ = "collector_quarantine"
    __table_args__ = (Index("ix_collector_quarantine_project_quarantined_at", "project", "quarantined_at"),)

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    project: Mapped[str] = mapped_column(Text)
    trace_id: Mapped[str] = mapped_column(Text)
    span_id: Mapped[str] = mapped_column(Text)
    reason: Mapped[str] = mapped_column(Text, comment="PostgreSQL's error (SQLSTATE and message)")
    span: Mapped[dict[str, Any]] = mapped_column(JSONB, comment="the decoded span record, every field")
    quarantined_at: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), server_default=func.now())
