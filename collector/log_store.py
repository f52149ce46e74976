"""GenAI content rows (decoded by ``collector.logs`` in a decode worker) committed before the answer.

Durability is simpler than for spans and still holds: the answer comes after the rows are committed;
while PostgreSQL is away the request is refused as retryable (503 / UNAVAILABLE with a delay), and
OTLP exporters send it again. A retry stores nothing twice (``uq_genai_content_event``): the rows are
COPYed, as the workers encoded them, into a temporary table and moved over with
``INSERT ... ON CONFLICT DO NOTHING``.

Stores run a few at a time in threads of their own (``max_stores_at_once``), the rest waiting for
one: in the default executor, with as many connections as they liked, logs waiting on a slow or locked
PostgreSQL took every thread and connection that API keys are looked up with, and another project's
export, its key not yet checked, waited behind them.
"""

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import psycopg
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from collector._sqlstate import describe, is_outage
from collector.logs import CONTENT_COLUMNS, LogBatch, LogsJob, logs_response, shown_name
from collector.validate import SpanLimits

__all__ = ["DatabaseUnavailable", "LogReceiver"]

STAGING_TABLE = "genai_content_staging"
_COLUMN_LIST = ", ".join(CONTENT_COLUMNS)
CREATE_STAGING = (
    f"CREATE TEMP TABLE IF NOT EXISTS {STAGING_TABLE} ON COMMIT DELETE ROWS AS "
    f"SELECT {_COLUMN_LIST} FROM genai_content WITH NO DATA"
)
COPY_STAGING = f"COPY {STAGING_TABLE} ({_COLUMN_LIST}) FROM STDIN"
MOVE_STAGED = (
    f"WITH staged AS (DELETE FROM {STAGING_TABLE} RETURNING {_COLUMN_LIST}) "
    f"INSERT INTO genai_content ({_COLUMN_LIST}) SELECT {_COLUMN_LIST} FROM staged ON CONFLICT DO NOTHING"
)
EVENT_NAME_FIELD = CONTENT_COLUMNS.index("event_name")


class DatabaseUnavailable(Exception):
    """PostgreSQL cannot take the rows now; the client should send them again after ``retry_after_s``."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class LogReceiver:
    """Stores the GenAI content of a decoded logs request before answering."""

    def __init__(
        self,
        engine: Engine,
        limits: SpanLimits,
        max_body_bytes: int,
        retry_after_s: int,
        max_stores_at_once: int = 2,
    ) -> None:
        self.engine, self.limits = engine, limits
        self.max_body_bytes, self.retry_after_s = max_body_bytes, retry_after_s
        self._stores = ThreadPoolExecutor(max_stores_at_once, thread_name_prefix="collector-logs")

    def job(self, body: bytes, body_format: str, gzip: bool, project: str | None) -> LogsJob:
        """The decode job of one logs request (``project`` from its API key overrides what records claim)."""
        return LogsJob(body, body_format, gzip, self.max_body_bytes, self.limits, project)

    def submit(self, batch: LogBatch) -> "Future[ExportLogsServiceResponse]":
        """``store`` the batch in one of the receiver's threads, once one is free."""
        return self._stores.submit(self.store, batch)

    def store(self, batch: LogBatch) -> ExportLogsServiceResponse:
        """Commit the rows of one decoded request and answer; raises ``DatabaseUnavailable``.
        Blocks on PostgreSQL: servers call ``submit`` instead."""
        if batch.lines:
            self._store(batch)
        return logs_response(batch)

    def close(self) -> None:
        """Finish the stores submitted; take no more."""
        self._stores.shutdown()

    def _store(self, batch: LogBatch) -> None:
        try:
            with self.engine.begin() as connection:
                connection.exec_driver_sql(CREATE_STAGING)
                copy_rows(connection, "".join(batch.lines))
        except (DBAPIError, psycopg.Error) as error:
            self._raise_if_outage(error)
            self._store_refused_batch(batch)

    def _store_refused_batch(self, batch: LogBatch) -> None:
        """Store what PostgreSQL takes of a batch it refused as a whole, in one transaction; count the
        rest as rejected. Bisected, as a refused span batch is: row by row, one refused row among
        50,000 held this thread and the transaction for 546 s."""
        with self.engine.begin() as connection:
            connection.exec_driver_sql(CREATE_STAGING)
            lines = batch.lines
            middle = len(lines) // 2
            for half in (lines[:middle], lines[middle:]) if middle else (lines,):
                self._store_bisected(connection, batch, half)

    def _store_bisected(self, connection: Connection, batch: LogBatch, lines: list[str]) -> None:
        try:
            with connection.begin_nested():
                copy_rows(connection, "".join(lines))
            return
        except (DBAPIError, psycopg.Error) as error:
            self._raise_if_outage(error)
            if len(lines) == 1:
                name = shown_name(lines[0].split("\t")[EVENT_NAME_FIELD])
                batch.reject(f"{name} refused by PostgreSQL: {describe(cause(error))}")
                return
        middle = len(lines) // 2
        self._store_bisected(connection, batch, lines[:middle])
        self._store_bisected(connection, batch, lines[middle:])

    def _raise_if_outage(self, error: Exception) -> None:
        """``DatabaseUnavailable`` when PostgreSQL is away; nothing for rows it refused (a data error).

        By SQLSTATE, as the span writer decides: ``54000`` (an index row too large) comes as the same
        OperationalError class as a lost connection, yet resending it can never succeed.
        """
        invalidated = isinstance(error, DBAPIError) and error.connection_invalidated
        if invalidated or is_outage(cause(error)):
            raise DatabaseUnavailable(
                f"cannot store GenAI content now: {cause(error)}", self.retry_after_s
            ) from None


def copy_rows(connection: Connection, lines: str) -> None:
    """COPY ``lines`` into the staging table and move them into ``genai_content`` (new rows only)."""
    driver: Any = connection.connection.driver_connection
    with driver.cursor() as cursor:
        with cursor.copy(COPY_STAGING) as copy:
            copy.write(lines)
        cursor.execute(MOVE_STAGED)


def cause(error: Exception) -> BaseException:
    """The driver's error behind SQLAlchemy's wrapper (its SQLSTATE decides), or ``error`` itself."""
    return error.orig or error if isinstance(error, DBAPIError) else error
