"""Whether a 'running' run still has a process: the process holds a PostgreSQL advisory lock on the run
for as long as it runs, and PostgreSQL drops it the moment that process's connection ends, however it
ended (SIGKILL, the OOM killer, a cancelled CI job, a lost machine). A 'running' run whose lock nobody
holds was abandoned, and is marked failed where runs are listed or resolved.

A session lock needs one server session per client connection: behind a pooler in transaction mode
(PgBouncer's default) the lock stays on a server connection the pooler shares out, and a live run can
look abandoned. Point evallens at PostgreSQL, or at a pooler in session mode.
"""

import contextlib
import uuid
from collections.abc import Collection, Iterator

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.errors import driver_error

# First key of the two-key advisory locks on run ids (a key space apart from other advisory locks).
RUN_LOCKS = 0x6572  # "er"
ABANDONED = "the process running it stopped without finishing (killed or lost)"
# A read replica or a read-only role can list runs but not mark them: the next reader that can, does.
_CANNOT_WRITE = ("25006", "42501")  # read_only_sql_transaction, insufficient_privilege

_TRY_LOCK = text("SELECT pg_try_advisory_lock(:space, hashtext(CAST(:run_id AS uuid)::text))")
# pg_locks shows a two-key advisory lock as classid, objid (as oid) and objsubid 2, whichever session
# holds it: no lock is taken here, so a pooled connection that holds a run's lock cannot mistake it for
# free. SKIP LOCKED: a run whose row another transaction holds (its own process finishing it) is left
# for the next look, never waited for.
_FAIL_ABANDONED = text(
    """
    UPDATE eval_runs SET status = 'failed', error = :reason, finished_at = now()
    WHERE status = 'running' AND id IN (
      SELECT r.id FROM eval_runs r
      WHERE r.project = :project AND r.status = 'running'
        AND (CAST(:run_ids AS uuid[]) IS NULL OR r.id = ANY(CAST(:run_ids AS uuid[])))
        AND NOT EXISTS (
          SELECT FROM pg_locks l
          WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND l.classid = CAST(:space AS oid) AND l.objid = hashtext(r.id::text)::oid)
      FOR UPDATE OF r SKIP LOCKED)
    RETURNING id
    """
)


@contextlib.contextmanager
def hold_run_lock(session_factory: sessionmaker[Session]) -> Iterator[uuid.UUID]:
    """A new run id whose lock this process holds for the block, on a connection of its own. Store the
    run as 'running' inside the block and its final status before the block ends: a run stored
    before its lock, or left 'running' after it, looks abandoned to every other process."""
    with session_factory() as session:
        engine = session.get_bind().engine
    connection = engine.connect()
    try:
        # a server that ends idle sessions would drop the lock of a live run that waits on its target
        connection.execute(text("SET idle_session_timeout = 0"))
        run_id = uuid.uuid4()
        # another run's lock on the same hash: take another id rather than wait for that run to end
        while not connection.execute(_TRY_LOCK, {"space": RUN_LOCKS, "run_id": run_id}).scalar_one():
            run_id = uuid.uuid4()
        connection.commit()  # the lock outlives the transaction; an idle connection holds it
        yield run_id
    finally:
        # closed, not pooled: ending the server session is what releases the lock, even when the
        # connection is already broken, and no later borrower of the connection inherits it
        connection.invalidate()
        connection.close()


def fail_abandoned_runs(
    engine: Engine, *, project: str, run_ids: Collection[uuid.UUID] | None = None
) -> list[uuid.UUID]:
    """Mark the 'running' runs of ``project`` (of ``run_ids`` only, if given) whose process is gone as
    failed, and return their ids. It commits, in one short transaction on a connection of its own, so
    that a dead run is marked once and for all whatever the caller's transaction does; it never waits
    for a row another transaction holds."""
    parameters = {
        "reason": ABANDONED,
        "project": project,
        "run_ids": None if run_ids is None else list(run_ids),
        "space": RUN_LOCKS,
    }
    try:
        with engine.begin() as connection:
            return list(connection.scalars(_FAIL_ABANDONED, parameters))
    except DBAPIError as error:
        if getattr(driver_error(error), "sqlstate", None) in _CANNOT_WRITE:
            return []
        raise


__all__ = ["ABANDONED", "RUN_LOCKS", "fail_abandoned_runs", "hold_run_lock"]
