"""The dashboard never shows a run whose process is gone as running: its run lists and the serving page's
run bands mark it failed first; a run whose process holds its lock stays running."""

import uuid
from datetime import timedelta

import pandas as pd
import psycopg
import streamlit as st

from dashboard import data
from evallens.runs import ABANDONED
from evallens.runs.liveness import RUN_LOCKS
from tests.dashboard.seed import Seeded


def _add_running_run(connection: psycopg.Connection[tuple[object, ...]], eval_set_id: int) -> str:
    run_id = str(uuid.uuid4())
    connection.execute(
        "INSERT INTO eval_runs (id, eval_set_id, endpoint, config, config_fingerprint, status)"
        " VALUES (%s, %s, 'http://127.0.0.1:8000', '{}', 'fp', 'running')",
        [run_id, eval_set_id],
    )
    return run_id


def test_the_run_lists_show_a_dead_run_failed_and_a_live_one_running(
    app_database: str, seeded: Seeded
) -> None:
    with (
        psycopg.connect(app_database, autocommit=True) as writer,
        psycopg.connect(app_database) as live_process,
    ):
        live = _add_running_run(writer, seeded.eval_set_id)
        dead = _add_running_run(writer, seeded.eval_set_id)
        live_process.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [RUN_LOCKS, live])
        live_process.commit()
        runs = data.runs.runs(app_database, "default").set_index("run_id")
        assert (runs.loc[live, "status"], runs.loc[dead, "status"]) == ("running", "failed")
        start, end = (pd.Timestamp(seeded.now + timedelta(hours=hours)) for hours in (-4, 1))
        bands = data.serving.run_windows(app_database, "default", start, end)
        assert sorted(bands["status"]) == sorted(["completed", "completed", "running", "failed"])
        error = writer.execute("SELECT error FROM eval_runs WHERE id = %s", [dead]).fetchone()
        assert error == (ABANDONED,)
        pid = live_process.info.backend_pid
    # closing returns before the backend has exited and let go of its locks: wait for it to be gone
    with psycopg.connect(app_database, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s, 10000)", [pid])
    st.cache_data.clear()
    runs = data.runs.runs(app_database, "default").set_index("run_id")
    assert runs.loc[live, "status"] == "failed"  # its process's connection ended: it is gone too
