"""Prometheus samples scraped from the reference service and vLLM, and their per-minute and per-hour
rollups (kept by a trigger, migration 0007) that the Serving metrics page reads for wide windows."""

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Identity, Index, Integer, Text
from sqlalchemy.dialects.postgresql import DOUBLE_PRECISION, TIMESTAMP
from sqlalchemy.orm import Mapped, mapped_column

from evallens.db.base import Base
from evallens.db.models.traces import DEFAULT_PROJECT

__all__ = ["ROLLUP_WIDTHS_S", "MetricRollup", "MetricSample"]

# The bucket widths the trigger keeps; buckets start at whole UTC minutes and hours.
ROLLUP_WIDTHS_S = (60, 3600)


class MetricSample(Base):
    """One scraped sample: a metric name, its labels and a value at a time, from one target.

    ``project`` is the project the scrape target is bound to (the collector's scrape project), so a
    project's pages show only its own service.
    """

    __tablename__ = "metric_samples"
    __table_args__ = (
        Index("ix_metric_samples_project_name_time", "project", "name", "time"),
        Index("ix_metric_samples_project_time", "project", "time"),
    )

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    project: Mapped[str] = mapped_column(Text, server_default=DEFAULT_PROJECT)
    time: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True))
    name: Mapped[str] = mapped_column(Text)
    labels: Mapped[dict[str, Any]] = mapped_column()
    value: Mapped[float] = mapped_column(DOUBLE_PRECISION)
    target: Mapped[str] = mapped_column(Text, comment="URL of the /metrics endpoint scraped")


class MetricRollup(Base):
    """The samples of one series (project, name, target, labels) in one bucket of ``width_s`` seconds:
    their count, sum and maximum, which merge by adding and by ``greatest`` in any order; the first and
    last sample; and a counter's growth between them, a reset counting from zero, exact when the
    series' samples are stored in time order (migration 0013 says what a late sample adds)."""

    __tablename__ = "metric_rollups"

    project: Mapped[str] = mapped_column(Text, primary_key=True)
    width_s: Mapped[int] = mapped_column(Integer, primary_key=True, comment="60 or 3600")
    name: Mapped[str] = mapped_column(Text, primary_key=True)
    bucket_start: Mapped[datetime] = mapped_column(TIMESTAMP(timezone=True), primary_key=True)
    target: Mapped[str] = mapped_column(Text, primary_key=True)
    labels: Mapped[dict[str, Any]] = mapped_column(primary_key=True)
    num_samples: Mapped[int] = mapped_column(BigInteger)
    value_sum: Mapped[float] = mapped_column(DOUBLE_PRECISION)
    value_max: Mapped[float] = mapped_column(DOUBLE_PRECISION, comment="the highest value in the bucket")
    first_time: Mapped[datetime] = mapped_column(
        TIMESTAMP(timezone=True), comment="the bucket's earliest sample"
    )
    first_value: Mapped[float] = mapped_column(
        DOUBLE_PRECISION, comment="the value of the bucket's earliest sample"
    )
    last_time: Mapped[datetime] = mapped_column(
        TIMESTAMP(timezone=True), comment="the bucket's latest sample"
    )
    last_value: Mapped[float] = mapped_column(
        DOUBLE_PRECISION, comment="the value of the bucket's latest sample"
    )
    value_increase: Mapped[float] = mapped_column(
        DOUBLE_PRECISION,
        comment="a counter's growth between the bucket's samples, a reset counting from zero",
    )
