"""Daily partitions of the spans table: created ahead by the app, dropped whole for retention."""

import functools
import re
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import OperationalError

from evallens.db.errors import driver_error
from evallens.errors import EvallensError

PARTITION_PREFIX = "spans_p"
# What the spans trigger folds spans into (migration 0006), and the column each is dated by.
SUMMARIES_BY_START = {
    "trace_summaries": "start_time",
    "production_histograms": "hour",
    "span_rollups": "day",
    "span_dimensions": "day",
}
_PARTITION_NAME = re.compile(rf"^{PARTITION_PREFIX}(\d{{8}})$")
# Retention waits this long for a partition's locks before it gives up and lets the writers queued
# behind it through (a waiting ACCESS EXCLUSIVE request blocks every later request on spans), then
# tries again after a pause, this many times in all.
LOCK_TIMEOUT_MS = 2000
LOCK_ATTEMPTS = 5
LOCK_RETRY_PAUSE_S = 1.0
# lock_not_available (the lock timeout); deadlock_detected (a late span of the day being dropped, its
# insert holding spans and waiting for the partition this holds)
RETRIED_SQLSTATES = ("55P03", "40P01")
# pg_advisory_xact_lock key: partitions are made holding it shared, a prune's cutoff is raised holding it
# exclusive, so no partition of a day before the cutoff is made once the cutoff is committed
PRUNE_CUTOFF_LOCK = 0x65767063
_LOCK_CUTOFF_SHARED = text(f"SELECT pg_advisory_xact_lock_shared({PRUNE_CUTOFF_LOCK})")
_LOCK_CUTOFF = text(f"SELECT pg_advisory_xact_lock({PRUNE_CUTOFF_LOCK})")
_PRUNED_BEFORE = text("SELECT pruned_before FROM span_retention")
# a cutoff never moves back: the days between an earlier and a later cutoff are gone already
_RAISE_CUTOFF = text(
    "INSERT INTO span_retention (id, pruned_before) VALUES (1, :cutoff) ON CONFLICT (id) DO UPDATE"
    " SET pruned_before = GREATEST(span_retention.pruned_before, EXCLUDED.pruned_before), pruned_at = now()"
)


class PartitionLocked(EvallensError):
    """Retention gave up waiting for the lock on spans; what it dropped before stays dropped."""


def partition_name(day: date) -> str:
    """Name of the partition holding spans that start on ``day`` (UTC)."""
    return f"{PARTITION_PREFIX}{day:%Y%m%d}"


def is_partition_name(name: str) -> bool:
    """Whether ``name`` is a daily spans partition (migrations ignore those)."""
    return _PARTITION_NAME.match(name) is not None


def pruned_before(connection: Connection) -> date | None:
    """The cutoff of the prunes so far (None before the first): spans of earlier days were dropped, and
    their partitions are not made again. Holds the cutoff for the caller's transaction (a prune raising
    it waits for the transaction's end)."""
    connection.execute(_LOCK_CUTOFF_SHARED)
    cutoff: date | None = connection.execute(_PRUNED_BEFORE).scalar()
    return cutoff


def create_span_partitions(connection: Connection, days: list[date]) -> list[str]:
    """Create the daily partitions for ``days`` that do not exist yet, except those of days before the
    prune cutoff (``pruned_before``); return the names created."""
    cutoff = pruned_before(connection)
    existing = set(list_span_partitions(connection))
    created = []
    for day in sorted({day for day in days if cutoff is None or day >= cutoff}):
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


def drop_span_partitions_before(engine: Engine, cutoff: date) -> list[str]:
    """Drop every daily partition whose day is entirely before ``cutoff``, and the summaries of what
    they held (traces that start, days before ``cutoff``); return the names dropped.

    One transaction a partition, oldest first: each DROP locks the whole ``spans`` table, so writers
    wait for one partition's drop at most, and a partition goes together with its summaries or not at
    all. A lock not granted within ``LOCK_TIMEOUT_MS`` is given up (a waiting DROP would queue every
    writer behind it) and tried again, ``LOCK_ATTEMPTS`` times in all, then ``PartitionLocked``.

    ``cutoff`` is recorded first (``pruned_before``), so that no partition of a day before it is made
    again, by a late span or one spooled meanwhile, once this has dropped it.
    """
    _with_lock_timeout(engine, functools.partial(_raise_cutoff, cutoff=cutoff), f"record the cutoff {cutoff}")
    with engine.connect() as connection:
        names = list_span_partitions(connection)
    dropped: list[str] = []
    for name in names:
        day = partition_day(name)
        if day >= cutoff:
            break
        step = functools.partial(drop_span_partition, name=name, day=day)
        _with_lock_timeout(engine, step, f"drop {name} ({len(dropped)} partitions dropped before it)")
        dropped.append(name)
    # summaries of days without a partition (a gap, or before the oldest): no spans to keep them company
    with engine.begin() as connection:
        _delete_summaries(connection, None, cutoff)
    return dropped


def drop_span_partition(connection: Connection, name: str, day: date) -> None:
    """Drop the partition ``name`` of ``day`` and the summaries of the traces that start that day, in the
    caller's transaction, holding the lock on the whole ``spans`` table only for the DROP itself."""
    # no late span of that day can add a summary now, and writes of other days and reads go on
    connection.execute(text(f"LOCK TABLE {name} IN SHARE MODE"))
    _delete_summaries(connection, day, day + timedelta(days=1))
    # wait for the partition's readers before the DROP locks spans: the DROP then waits only for those
    # holding spans itself (under the lock timeout too)
    connection.execute(text(f"LOCK TABLE {name} IN ACCESS EXCLUSIVE MODE"))
    connection.execute(text(f"DROP TABLE {name}"))


def _raise_cutoff(connection: Connection, cutoff: date) -> None:
    # waits for the transactions making partitions under the cutoff read before
    connection.execute(_LOCK_CUTOFF)
    connection.execute(_RAISE_CUTOFF, {"cutoff": cutoff})


def partition_day(name: str) -> date:
    """The day of the daily partition ``name``."""
    match = _PARTITION_NAME.match(name)
    if match is None:
        raise ValueError(f"not a span partition: {name}")
    return datetime.strptime(match.group(1), "%Y%m%d").date()


def _delete_summaries(connection: Connection, start: date | None, end: date) -> None:
    for table, column in SUMMARIES_BY_START.items():
        since = "" if start is None else f" AND {column} >= :start"
        connection.execute(
            text(f"DELETE FROM {table} WHERE {column} < :end{since}"), {"start": start, "end": end}
        )


def _with_lock_timeout(engine: Engine, step: Callable[[Connection], None], what: str) -> None:
    """Run ``step`` in a transaction of its own whose lock waits give up after ``LOCK_TIMEOUT_MS``
    (the transaction rolled back whole, as on a deadlock), ``LOCK_ATTEMPTS`` tries in all."""
    for attempt in range(1, LOCK_ATTEMPTS + 1):
        try:
            with engine.begin() as connection:
                connection.execute(text(f"SET LOCAL lock_timeout = {LOCK_TIMEOUT_MS}"))
                step(connection)
            return
        except OperationalError as error:
            if getattr(driver_error(error), "sqlstate", None) not in RETRIED_SQLSTATES:
                raise
            if attempt < LOCK_ATTEMPTS:
                time.sleep(LOCK_RETRY_PAUSE_S)
    raise PartitionLocked(
        f"could not {what}: other transactions kept the spans table locked ({LOCK_ATTEMPTS} tries of "
        f"{LOCK_TIMEOUT_MS} ms); nothing of it changed, run the prune again once they are done"
    )
