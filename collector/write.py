"""Bulk writer: many requests' spans in one COPY, idempotent through the spans primary key.

The fast path COPYs straight into the partitioned ``spans`` table. A span sent twice (a client
retry, a spool replayed after a crash) makes that COPY fail on the primary key and roll back whole;
the batch is then COPYed into a temporary staging table and moved over with
``INSERT ... SELECT ... ON CONFLICT DO NOTHING``, which skips what is already stored. The staging
path costs PostgreSQL about twice the work, so it is only taken after a conflict (and for a while
after one, since retries come in bursts) and for spool replays.

Every failure is classified by SQLSTATE (``collector._sqlstate``): ``DatabaseDown`` when PostgreSQL
is unavailable, ``RowsRefused`` when it refused the rows themselves.

The daily partitions a batch needs are created first, at most ``max_new_days`` of them in one go:
each ``CREATE TABLE ... PARTITION OF`` locks the whole ``spans`` table until the transaction ends, and
one client sending spans spread over a year made one flush create some 366 of them while every other
client's spans waited. When a batch needs more, yesterday's, today's and tomorrow's come first, and the
rest are shared out among its projects, each in turn getting its nearest day to today, so one
project's spread of days never takes another's share. The cap holds for the whole flush (a
``PartitionBudget``): a refused batch bisected to find its bad rows places each half from what is left.

No partition is made for a day before the cutoff of the last ``evallens collector prune``
(``evallens.db.partitions.pruned_before``): a late span of a pruned day came back with its partition,
and a client sending old spans kept a year of partitions alive. Such spans are left out like those over
the new-day cap, and go to the quarantine with the reason.
"""

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import orjson
import psycopg
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from collector._sqlstate import describe, is_outage
from collector.copy_rows import CopyRows, decode_line, line_day
from collector.records import SPAN_COLUMNS, SpanRecord, record_to_dict
from evallens.db.engine import create_db_engine, libpq_url
from evallens.db.partitions import create_span_partitions, list_span_partitions, pruned_before

STAGING_TABLE = "spans_staging"
_COLUMN_LIST = ", ".join(SPAN_COLUMNS)
COPY_STAGING = f"COPY {STAGING_TABLE} ({_COLUMN_LIST}) FROM STDIN"
COPY_SPANS = f"COPY spans ({_COLUMN_LIST}) FROM STDIN"
INSERT_QUARANTINE = (
    "INSERT INTO collector_quarantine (project, trace_id, span_id, reason, span) VALUES (%s, %s, %s, %s, %s)"
)
SETTLE_QUARANTINE = "DELETE FROM collector_quarantine WHERE id = ANY(%s)"
FLUSHES_CAREFUL_AFTER_CONFLICT = 20
MOVE_STAGED = (
    f"INSERT INTO spans ({_COLUMN_LIST}) SELECT {_COLUMN_LIST} FROM {STAGING_TABLE} ON CONFLICT DO NOTHING"
)
ONE_DAY = timedelta(days=1)
# Columns of the quarantine row are for finding it again; the full values are in its ``span`` JSON.
QUARANTINE_KEY_CHARS = 200


class DatabaseDown(Exception):
    """PostgreSQL could not be reached, or the connection broke mid-write; nothing was committed."""


class RowsRefused(Exception):
    """PostgreSQL refused the rows themselves (a data error); nothing was committed.

    ``partition_gone``: a row's day had no partition though the writer had seen one (a prune dropped it
    since): the writer forgot the partitions it knew, and placing the rows again says why."""

    def __init__(self, message: str, partition_gone: bool = False) -> None:
        super().__init__(message)
        self.partition_gone = partition_gone


@dataclass
class PartitionBudget:
    """How many new daily partitions one flush may still create (``left`` None: any number)."""

    left: int | None

    def spend(self, num_created: int) -> None:
        """Count ``num_created`` partitions made."""
        if self.left is not None:
            self.left = max(self.left - num_created, 0)


@dataclass(frozen=True)
class Refusal:
    """One span PostgreSQL refused, its reason (SQLSTATE and message) and its row's place in the batch."""

    span: SpanRecord
    reason: str
    index: int = 0
    partition_missing: bool = False  # its day had no partition, and the flush made its share of them

    def quarantine_row(self) -> tuple[str, str, str, str, str]:
        """The ``collector_quarantine`` row of this refusal."""
        span = self.span
        keys = (span.project, span.trace_id, span.span_id)
        project, trace_id, span_id = (str(key)[:QUARANTINE_KEY_CHARS] for key in keys)
        return project, trace_id, span_id, self.reason, orjson.dumps(record_to_dict(span)).decode()


class SpanWriter:
    """One PostgreSQL connection that writes span batches; reconnects after a failure."""

    def __init__(
        self, database_url: str, connect_timeout_s: int = 5, max_new_days: int | None = None
    ) -> None:
        self._url = libpq_url(database_url)
        self._connect_timeout_s = connect_timeout_s
        self.max_new_days = max_new_days  # None: every partition a batch needs (the quarantine retry)
        self._connection: psycopg.Connection[Any] | None = None
        self._engine: Engine | None = None
        self._partition_days: set[str] = set()
        self._pruned_before: date | None = None  # as read with ``_partition_days``
        self._careful_flushes = 0

    def flush_budget(self) -> PartitionBudget:
        """The new partitions one flush may create: ``max_new_days``."""
        return PartitionBudget(self.max_new_days)

    def write(
        self,
        rows: CopyRows,
        expect_duplicates: bool = False,
        budget: PartitionBudget | None = None,
        quarantine_ids: Mapping[bytes, Sequence[int]] | None = None,
    ) -> int:
        """Store the spans of ``rows`` in one transaction (committed in ``_copy``); return how many were new.
        Partitions their days lack are made from ``budget`` (a flush's own when None). ``quarantine_ids``:
        the quarantine entries each row's line was retried from, deleted in that same transaction.

        Raises ``DatabaseDown`` or ``RowsRefused``; either way nothing was committed.
        """
        settled: list[int] = []
        if quarantine_ids:
            settled = sorted({entry for line in rows.lines() for entry in quarantine_ids.get(line, ())})
        try:
            self._ensure_partitions(rows, self.flush_budget() if budget is None else budget)
            connection = self._connect()
            if not expect_duplicates and self._careful_flushes == 0:
                try:
                    return self._copy(connection, COPY_SPANS, rows, settled=settled)
                except psycopg.errors.UniqueViolation:
                    self._careful_flushes = FLUSHES_CAREFUL_AFTER_CONFLICT
            self._careful_flushes = max(self._careful_flushes - 1, 0)
            return self._copy(connection, COPY_STAGING, rows, then=MOVE_STAGED, settled=settled)
        except Exception as error:
            raise self._classified(error) from error

    def place(self, rows: CopyRows, budget: PartitionBudget | None = None) -> set[date]:
        """Create the daily partitions ``rows`` need, as many as ``budget`` has left (a flush's own when
        None: ``max_new_days``; the days nearest today first) and none before the prune cutoff; return the
        days whose spans cannot be written now (``left_out`` says why for each span).

        Raises ``DatabaseDown`` or ``RowsRefused`` like ``write``.
        """
        try:
            return self._ensure_partitions(rows, self.flush_budget() if budget is None else budget)
        except Exception as error:
            raise self._classified(error) from error

    def left_out(self, line: bytes, index: int) -> Refusal:
        """The refusal of a span (its row ``line``, at ``index`` in the batch) of a day ``place`` returned:
        its day was pruned, or it waits for a partition (``partition_missing``)."""
        day = line_day(line)
        if self._pruned_before is not None and day < self._pruned_before:
            return Refusal(decode_line(line), self.pruned_reason(day, self._pruned_before), index)
        return Refusal(decode_line(line), self.unplaced_reason(day), index, partition_missing=True)

    @staticmethod
    def pruned_reason(day: date, cutoff: date) -> str:
        """Why a span of ``day``, before the prune cutoff ``cutoff``, was not written."""
        return (
            f"its day {day} was pruned: `evallens collector prune` dropped the spans before {cutoff} and "
            "their partitions are not made again; `evallens collector quarantine drop` deletes it"
        )

    def unplaced_reason(self, day: date) -> str:
        """Why a span of ``day``, left without a partition by ``place``, was not written."""
        return (
            f"no span partition for {day} yet: one flush creates at most {self.max_new_days} new daily "
            "partitions (EVALLENS_COLLECTOR_MAX_NEW_DAYS_PER_FLUSH); "
            "`evallens collector quarantine retry` stores it"
        )

    def quarantine(self, refusals: Sequence[Refusal]) -> None:
        """Store refused spans in ``collector_quarantine`` in one transaction.

        Raises ``DatabaseDown`` or ``RowsRefused`` like ``write``.
        """
        try:
            connection = self._connect()
            rows = [refusal.quarantine_row() for refusal in refusals]
            with connection.transaction(), connection.cursor() as cursor:
                cursor.executemany(INSERT_QUARANTINE, rows)
        except Exception as error:
            raise self._classified(error) from error

    def _classified(self, error: Exception) -> Exception:
        """``DatabaseDown`` for an outage (dropping the connection), else ``RowsRefused``."""
        broken = self._connection is not None and self._connection.closed
        if is_outage(error) or broken or isinstance(error, SQLAlchemyError | OSError):
            self.close()
            return DatabaseDown(describe(error))
        # spans has no CHECK constraint: 23514 is "no partition of relation spans found for row"
        if isinstance(error, psycopg.errors.CheckViolation):
            self._partition_days = set()
            return RowsRefused(describe(error), partition_gone=True)
        return RowsRefused(describe(error))

    @staticmethod
    def _copy(
        connection: psycopg.Connection[Any],
        statement: str,
        rows: CopyRows,
        then: str = "",
        settled: Sequence[int] = (),
    ) -> int:
        """One batch in one transaction: the rows' bytes as the workers encoded them, committed on exit
        with the quarantine entries ``settled`` deleted."""
        with connection.transaction(), connection.cursor() as cursor:
            with cursor.copy(statement) as copy:
                copy.write(rows.data)
            num_new = rows.num_rows
            if then:
                cursor.execute(then)
                num_new = max(cursor.rowcount, 0)
            if settled:
                cursor.execute(SETTLE_QUARANTINE, (list(settled),))
            return num_new

    def _connect(self) -> psycopg.Connection[Any]:
        if self._connection is None or self._connection.closed:
            connection = psycopg.connect(self._url, autocommit=True, connect_timeout=self._connect_timeout_s)
            connection.execute("SET client_encoding TO 'UTF8'")  # the rows' bytes are UTF-8
            connection.execute(
                f"CREATE TEMP TABLE IF NOT EXISTS {STAGING_TABLE} "
                "(LIKE spans INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
            )
            self._connection = connection
        return self._connection

    def _ensure_partitions(self, rows: CopyRows, budget: PartitionBudget) -> set[date]:
        days = rows.partition_days()
        cutoff = self._pruned_before
        fresh = cutoff is None or all(day >= cutoff for day in days)
        if fresh and {f"{day:%Y%m%d}" for day in days} <= self._partition_days:
            return set()
        if self._engine is None:
            self._engine = create_db_engine(self._url, connect_timeout_s=self._connect_timeout_s, pool_size=1)
        today = datetime.now(UTC).date()
        try:
            with self._engine.begin() as connection:
                # read under the cutoff's shared lock, held until the partitions below are committed:
                # a prune raising the cutoff meanwhile waits, and drops what this makes
                cutoff = pruned_before(connection)
                pruned = {day for day in days if cutoff is not None and day < cutoff}
                existing = {name[-8:] for name in list_span_partitions(connection)}
                missing = {day for day in days if day not in pruned and f"{day:%Y%m%d}" not in existing}
                made = missing
                if budget.left is not None and len(missing) > budget.left:
                    by_project = {
                        project: project_days & missing
                        for project, project_days in rows.days_by_project().items()
                    }
                    made = set(share_out(by_project, budget.left, today))
                created = create_span_partitions(
                    connection, sorted(made, key=lambda day: (abs(day - today), day))
                )
                self._partition_days = {name[-8:] for name in list_span_partitions(connection)}
                self._pruned_before = cutoff
        except Exception as error:  # SQLAlchemy wraps psycopg's errors; unwrap to classify them
            original = getattr(error, "orig", None)
            if isinstance(original, psycopg.Error):
                raise original from error
            raise
        budget.spend(len(created))
        return (missing - made) | pruned

    def close(self) -> None:
        """Drop the connection (the next write reconnects)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
        self._partition_days = set()
        self._pruned_before = None


def share_out(days_of: Mapping[bytes, set[date]], limit: int, today: date) -> list[date]:
    """At most ``limit`` of the days of ``days_of`` (per project): yesterday, today and tomorrow first,
    whoever's they are (live spans need them); then each project in turn gets its nearest day to today
    not yet taken (the project with the nearest day first). A day two projects share counts once."""

    def nearness(day: date) -> tuple[timedelta, date]:
        return abs(day - today), day

    live = sorted(
        {day for days in days_of.values() for day in days if abs(day - today) <= ONE_DAY}, key=nearness
    )
    taken = dict.fromkeys(live[:limit])  # a dict keeps the order taken
    queues = sorted(
        (deque(sorted(days, key=nearness)) for days in days_of.values() if days),
        key=lambda queue: nearness(queue[0]),
    )
    while queues and len(taken) < limit:
        for queue in queues:
            while queue and queue[0] in taken:
                queue.popleft()
            if queue and len(taken) < limit:
                taken[queue.popleft()] = None
        queues = [queue for queue in queues if queue]
    return list(taken)
