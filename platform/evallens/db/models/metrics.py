"""Prometheus samples scraped from the reference service and vLLM."""

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Identity, Index, Text
from sqlalchemy.dialects.postgresql import DOUBLE_PRECISION, TIMESTAMP
from sqlalchemy.orm import Mapped, mapped_column

from evallens.db.base import Base
from evallens.db.models.traces import DEFAULT_PROJECT


class MetricSample(Base):
    """One scraped sample: a metric name, its labels and a value at a time, from one target.

    ``project`` is the project the scrape target is bound to (the collector's scrape project), so a
    project's pages show only its own service.
    """

    __tablename__ = "metric_samples"
    __table_args__ = (Index("ix_metric_samples_project_name_time", "project", "name", "time"),)

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    project: Mapped[str] = mapped_column(Text, server_default=DEFAULT_PROJECT)
    time: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True))
    name: Mapped[str] = mapped_column(Text)
    labels: Mapped[dict[str, Any]] = mapped_column()
    value: Mapped[float] = mapped_column(DOUBLE_PRECISION)
    target: Mapped[str] = mapped_column(Text, comment="URL of the /metrics endpoint scraped")
