"""Retention: drop whole daily partitions of spans older than a cutoff."""

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import Engine

from evallens.db.partitions import drop_span_partitions_before
from evallens.durations import parse_duration


@dataclass(frozen=True)
class PruneReport:
    """What ``evallens collector prune`` did."""

    cutoff: date
    dropped: list[str]


def parse_age(text: str) -> timedelta:
    """``30d`` or ``4w`` as a timedelta (partitions are daily, so nothing finer; ``0d``: before today)."""
    return parse_duration(text, option="--older-than", units="dw", allow_zero=True)


def prune_spans(engine: Engine, older_than: timedelta, today: date | None = None) -> PruneReport:
    """Drop every span partition whose whole day is older than ``older_than`` before today (UTC)."""
    cutoff = (today or datetime.now(UTC).date()) - older_than
    with engine.begin() as connection:
        dropped = drop_span_partitions_before(connection, cutoff)
    return PruneReport(cutoff=cutoff, dropped=dropped)
