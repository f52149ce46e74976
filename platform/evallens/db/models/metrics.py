"""Prometheus samples scraped from the reference service and vLLM."""

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Identity, Index, Text
from sqlalchemy.dialects.postgresql import DOUBLE_PRECISION, TIMESTAMP
from sqlalchemy.orm import Mapped, mapped_column

from evallens.db.base import Base


class MetricSample(Base):
    """One scraped sample: a metric name, its labels and a value at a time, from one target."""

    __tablename__ = "metric_samples"
    __table_args__ = (Index("ix_metric_samples_name_time", "name", "time"),)

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    time: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True))
    name: Mapped[str] = mapped_column(Text)
    labels: Mapped[dict[str, Any]] = mapped_column()
    value: Mapped[float] = mapped_column(DOUBLE_PRECISION)
    target: Mapped[str] = mapped_column(Text, comment="URL of the /metrics endpoint scraped")
