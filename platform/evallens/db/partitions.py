"""Daily partitions of the spans table: created ahead by the app, dropped whole for retention."""

import re
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import Connection, text

PARTITION_PREFIX = "spans_p"
# What the spans trigger folds spans into (migration 0006), and the column each is dated by.
SUMMARIES_BY_START = {
    "trace_summaries": "start_time",
    "production_histograms": "hour",
    "span_rollups": "day",
    "span_dimensions": "day",
}
_PARTITION_NAME = re.compile(rf"^{PARTITION_PREFIX}(\d{{8}})$")


def partition_name(day: date) -> str:
    """Name of the partition holding spans that start on ``day`` (UTC)."""
    return f"{PARTITION_PREFIX}{day:%Y%m%d}"


def is_partition_name(name: str) -> bool:
    """Whether ``name`` is a daily spans partition (migrations ignore those)."""
    return _PARTITION_NAME.match(name) is not None


def create_span_partitions(connection: Connection, days: list[date]) -> list[str]:
    """Create the daily partitions for ``days`` that do not exist yet; return the names created."""
    existing = set(list_span_partitions(connection))
    created = []
    for day in sorted(set(days)):
        name = partition_name(day)
        if name in existing:
            continue
        upper = day + timedelta(days=1)
        connection.execute(
            text(
                f"CREATE TABLE IF NOT EXISTS {name} PARTITION OF spans "
                f"FOR VALUES FROM ('{day.isoformat()} 00:00:00+00') TO ('{upper.isoformat()} 00:00:00+00')"
            )
        )
        created.append(name)
    return created


def create_partitions_ahead(connection: Connection, days_ahead: int, today: date | None = None) -> list[str]:
    """Create partitions from yesterday through ``days_ahead`` days after today (UTC)."""
    today = today or datetime.now(UTC).date()
    return create_span_partitions(
        connection, [today + timedelta(days=offset) for offset in range(-1, days_ahead + 1)]
    )


def list_span_partitions(connection: Connection) -> list[str]:
    """Names of the existing daily partitions of spans, oldest first."""
    rows = connection.execute(
        text(
            "SELECT child.relname FROM pg_inherits "
            "JOIN pg_class parent ON parent.oid = pg_inherits.inhparent "
            "JOIN pg_class child ON child.oid = pg_inherits.inhrelid "
            "WHERE parent.relname = 'spans'"
        )
    ).scalars()
    return sorted(name for name in rows if is_partition_name(name))


def drop_span_partitions_before(connection: Connection, cutoff: date) -> list[str]:
    """Drop every daily partition whose day is entirely before ``cutoff``, and the summaries of what
    they held (traces that start, days before ``cutoff``); return the names dropped."""
    dropped = []
    for table, column in SUMMARIES_BY_START.items():
        connection.execute(text(f"DELETE FROM {table} WHERE {column} < :cutoff"), {"cutoff": cutoff})
    for name in list_span_partitions(connection):
        match = _PARTITION_NAME.match(name)
        assert match is not None
        day = datetime.strptime(match.group(1), "%Y%m%d").date()
        if day < cutoff:
            connection.execute(text(f"DROP TABLE {name}"))
            dropped.append(name)
    return dropped
