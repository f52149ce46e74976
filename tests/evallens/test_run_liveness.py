"""A 'running' run whose process is gone (its advisory lock free) is marked failed where runs are listed
or resolved; one whose process holds its lock never is. The CLI against a killed ``eval run`` process:
``tests/evals/test_abandoned_runs.py``."""

import uuid

import psycopg
import pytest
from sqlalchemy import make_url
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import EvalRun, EvalSet
from evallens.runs import ABANDONED, fail_abandoned_runs, hold_run_lock, list_runs, resolve_run
from evallens.runs.liveness import RUN_LOCKS


def _add_run(
    sessions: sessionmaker[Session], run_id: uuid.UUID, status: str, project: str = "default"
) -> None:
    with sessions.begin() as session:
        eval_set = EvalSet(project=project, name=f"support-{run_id}", version=1, content_hash=str(run_id))
        session.add(eval_set)
        session.flush()
        session.add(
            EvalRun(id=run_id, project=project, eval_set_id=eval_set.id, endpoint="http://target", config={},
                    config_fingerprint="fp", status=status)
        )  # fmt: skip


def _scalar(connection: psycopg.Connection[tuple[object, ...]], query: str, value: str) -> object:
    row = connection.execute(query, [value]).fetchone()
    return None if row is None else row[0]


def _statuses(sessions: sessionmaker[Session]) -> dict[uuid.UUID, tuple[str, str | None]]:
    with sessions() as session:
        return {run.id: (run.status, run.error) for run in session.query(EvalRun)}


def test_a_running_run_without_its_lock_is_listed_failed_and_one_holding_it_running(
    sessions: sessionmaker[Session],
) -> None:
    dead, done, elsewhere = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with hold_run_lock(sessions) as live:
        for run_id, status in ((live, "running"), (dead, "running"), (done, "completed")):
            _add_run(sessions, run_id, status)
        _add_run(sessions, elsewhere, "running", project="other")
        with sessions() as session:
            listed = {item.run_id: (item.status, item.error) for item in list_runs(session)}
        assert listed == {live: ("running", None), dead: ("failed", ABANDONED), done: ("completed", None)}
        stored = _statuses(sessions)
        assert stored[dead] == ("failed", ABANDONED)  # stored, not only shown: the listing never commits
        assert stored[elsewhere] == ("running", None)  # another project's runs are its own readers' to mark
    with sessions() as session:  # the process ended without storing an end: the lock went with it
        ref = resolve_run(session, str(live))
        assert (ref.run.status, ref.run.error) == ("failed", ABANDONED)


@pytest.mark.parametrize("negative_hash", [True, False])
def test_a_lock_held_by_another_server_session_keeps_the_run_running(
    database_url: str, sessions: sessionmaker[Session], negative_hash: bool
) -> None:
    """The lock of a run in another process, as PostgreSQL sees it (pg_locks shows the hash as an oid:
    a negative one too); released when that session ends."""
    url = make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
    engine = sessions.kw["bind"]
    with psycopg.connect(url, autocommit=True) as other:
        run_id = uuid.uuid4()
        while _scalar(other, "SELECT hashtext(%s) < 0", str(run_id)) != negative_hash:
            run_id = uuid.uuid4()
        _add_run(sessions, run_id, "running")
        other.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [RUN_LOCKS, str(run_id)])
        assert fail_abandoned_runs(engine, project="default") == []
        with sessions() as session:
            assert resolve_run(session, str(run_id)).run.status == "running"
        pid = other.info.backend_pid
    # closing returns before the backend has exited and let go of its locks: wait for it to be gone
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s, 10000)", [pid])
    assert fail_abandoned_runs(engine, project="default") == [run_id]
    assert fail_abandoned_runs(engine, project="default") == []  # marked once
