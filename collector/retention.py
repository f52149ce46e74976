"""Retention: drop whole daily partitions of spans, and the scraped metric samples and their rollups,
older than a cutoff."""

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import Connection, Engine, delete

from evallens.db.models import MetricRollup, MetricSample
from evallens.db.partitions import drop_span_partitions_before
from evallens.durations import parse_duration


@dataclass(frozen=True)
class PruneReport:
    """What ``evallens collector prune`` did."""

    cutoff: date
    dropped: list[str]
    num_samples_deleted: int = 0


def parse_age(text: str) -> timedelta:
    """``30d`` or ``4w`` as a timedelta (partitions are daily, so nothing finer; ``0d``: before today)."""
    return parse_duration(text, option="--older-than", units="dw", allow_zero=True)


def prune_spans(engine: Engine, older_than: timedelta, today: date | None = None) -> PruneReport:
    """Drop every span partition whose whole day is older than ``older_than`` before today (UTC), and
    the metric samples and rollups of those days."""
    cutoff = (today or datetime.now(UTC).date()) - older_than
    with engine.begin() as connection:
        dropped = drop_span_partitions_before(connection, cutoff)
        num_samples = delete_samples_before(connection, datetime.combine(cutoff, time(), UTC))
    return PruneReport(cutoff=cutoff, dropped=dropped, num_samples_deleted=num_samples)


def delete_samples_before(connection: Connection, cutoff: datetime) -> int:
    """Delete the metric samples taken before ``cutoff`` and the rollup buckets that start before it
    (``cutoff`` at a whole hour: exactly the buckets of those samples); return how many samples."""
    connection.execute(delete(MetricRollup).where(MetricRollup.bucket_start < cutoff))
    return connection.execute(delete(MetricSample).where(MetricSample.time < cutoff)).rowcount
