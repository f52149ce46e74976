"""Retention: drop whole daily partitions of spans, and delete the scraped metric samples, their
rollups and the stored GenAI content older than a cutoff."""

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import Connection, Engine, delete, text

from evallens.db.models import MetricRollup, MetricSample
from evallens.db.partitions import drop_span_partitions_before
from evallens.durations import parse_duration
from evallens.errors import EvallensError

# pg_advisory_lock key: one prune of a database at a time (a second one's DROP of a partition the
# first dropped meanwhile failed on "does not exist")
PRUNE_LOCK = 0x65767072

CONTENT_BATCH_ROWS = 1000
# The oldest rows of one project, by ix_genai_content_project_time, from where the last batch ended
# (rows of the same time it left are still there, hence ">="): no batch walks the index entries of
# the rows batches before it deleted.
DELETE_CONTENT_BATCH = text(
    "WITH doomed AS (SELECT id FROM genai_content WHERE project = :project AND time >= :start"
    " AND time < :cutoff ORDER BY time LIMIT :num_rows),"
    " gone AS (DELETE FROM genai_content g USING doomed WHERE g.id = doomed.id RETURNING g.time)"
    " SELECT count(*), max(time) FROM gone"
)
# Each one descent of an index that leads with the project, whatever the table's size.
FIRST_CONTENT_PROJECT = text("SELECT project FROM genai_content ORDER BY project LIMIT 1")
NEXT_CONTENT_PROJECT = text(
    "SELECT project FROM genai_content WHERE project > :after ORDER BY project LIMIT 1"
)


class PruneRunning(EvallensError):
    """Another prune of the same database is running."""


@dataclass(frozen=True)
class PruneReport:
    """What ``evallens collector prune`` did."""

    cutoff: date
    dropped: list[str]
    num_samples_deleted: int = 0
    num_content_deleted: int = 0


def parse_age(text: str) -> timedelta:
    """``30d`` or ``4w`` as a timedelta (partitions are daily, so nothing finer; ``0d``: before today)."""
    return parse_duration(text, option="--older-than", units="dw", allow_zero=True)


def prune_spans(engine: Engine, older_than: timedelta, today: date | None = None) -> PruneReport:
    """Drop every span partition whose whole day is older than ``older_than`` before today (UTC), and
    the metric samples, rollups and GenAI content of those days; ``PruneRunning``, before any change,
    while another prune of the database runs."""
    cutoff = (today or datetime.now(UTC).date()) - older_than
    start_of_cutoff = datetime.combine(cutoff, time(), UTC)
    with one_prune(engine):
        # a transaction for each partition (each DROP locks spans whole), then one for the samples
        dropped = drop_span_partitions_before(engine, cutoff)
        with engine.begin() as connection:
            num_samples = delete_samples_before(connection, start_of_cutoff)
        num_content = delete_content_before(engine, start_of_cutoff)
    return PruneReport(
        cutoff=cutoff, dropped=dropped, num_samples_deleted=num_samples, num_content_deleted=num_content
    )


@contextlib.contextmanager
def one_prune(engine: Engine) -> Iterator[None]:
    """Hold the prune lock (a session advisory lock, on a connection of its own) for the block, or raise
    ``PruneRunning`` at once when another prune holds it. PostgreSQL drops the lock when its holder's
    connection ends, however it ends, so a lock is never stale."""
    with engine.connect() as connection:
        locked = connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": PRUNE_LOCK}).scalar()
        connection.commit()
        if not locked:
            raise PruneRunning(
                "another `evallens collector prune` of this database is running; nothing was changed, "
                "run it again once it is done"
            )
        try:
            yield
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": PRUNE_LOCK})
            connection.commit()


def delete_samples_before(connection: Connection, cutoff: datetime) -> int:
    """Delete the metric samples taken before ``cutoff`` and the rollup buckets that start before it
    (``cutoff`` at a whole hour: exactly the buckets of those samples); return how many samples."""
    connection.execute(delete(MetricRollup).where(MetricRollup.bucket_start < cutoff))
    return connection.execute(delete(MetricSample).where(MetricSample.time < cutoff)).rowcount


def delete_content_before(engine: Engine, cutoff: datetime, batch_rows: int = CONTENT_BATCH_ROWS) -> int:
    """Delete the GenAI content events (prompts and answers) whose time is before ``cutoff``; return
    how many.

    Project by project, ``batch_rows`` rows a transaction: a backlog of millions holds its row locks
    a batch at a time, never the table (the log receiver keeps inserting, and the span summary
    triggers keep reading it, meanwhile).
    """
    num_deleted = 0
    project: str | None = None
    while (project := _next_project(engine, project)) is not None:
        start = datetime.min.replace(tzinfo=UTC)
        while True:
            with engine.begin() as connection:
                row = connection.execute(
                    DELETE_CONTENT_BATCH,
                    {"project": project, "start": start, "cutoff": cutoff, "num_rows": batch_rows},
                ).one()
            num_deleted += row[0]
            if row[0] < batch_rows:
                break
            start = row[1]
    return num_deleted


def _next_project(engine: Engine, after: str | None) -> str | None:
    """The first project with GenAI content after ``after`` (the first of all for None), if any."""
    with engine.connect() as connection:
        if after is None:
            found: str | None = connection.execute(FIRST_CONTENT_PROJECT).scalar()
        else:
            found = connection.execute(NEXT_CONTENT_PROJECT, {"after": after}).scalar()
    return found
