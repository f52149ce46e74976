"""An ``eval run`` process killed outright (SIGKILL, the OOM killer, a cancelled CI job) runs no clean-up:
the next listing finds its run's lock free and stores the run as failed, while a run whose process is
alive stays running."""

import json
import subprocess
import time
import uuid

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import EvalResult, EvalRun
from evallens.runs import ABANDONED, fail_abandoned_runs
from evallens.runs.liveness import RUN_LOCKS
from evallens.telemetry.attributes import HEADER_EVAL_RUN_ID
from tests.evals.conftest import SETS, ScriptedTarget, run_cli, start_replay


def _start_run(database_url: str, target: ScriptedTarget) -> subprocess.Popen[str]:
    return start_replay(database_url, target.url, {"EVALLENS_EVAL_SPAN_WAIT_S": "0"})


def _replaying_runs(target: ScriptedTarget, processes: list[subprocess.Popen[str]]) -> list[str]:
    """The run ids of ``processes``, once each is stored and has asked the target a question."""
    deadline = time.monotonic() + 120
    while True:
        seen = {headers[HEADER_EVAL_RUN_ID] for headers in list(target.headers_seen)}
        if len(seen) == len(processes):
            return sorted(seen)
        for process in processes:
            assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the runs never reached the target"
        time.sleep(0.05)


def _listed(database_url: str) -> dict[str, dict[str, object]]:
    listed = run_cli("eval", "runs", "--format", "json", database_url=database_url)
    assert listed.returncode == 0, listed.stderr
    return {item["run_id"]: item for item in json.loads(listed.stdout)}


def test_a_killed_run_is_listed_as_failed_and_a_live_one_as_running(
    database_url: str, scripted_target: ScriptedTarget
) -> None:
    assert run_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url).returncode == 0
    scripted_target.holding = True  # both runs stay mid-replay until released
    killed = _start_run(database_url, scripted_target)
    live = None
    try:
        first = _replaying_runs(scripted_target, [killed])[0]
        live = _start_run(database_url, scripted_target)
        (second,) = set(_replaying_runs(scripted_target, [killed, live])) - {first}
        killed.kill()
        killed.communicate(timeout=60)
        listed = _listed(database_url)
        assert (listed[first]["status"], listed[first]["error"]) == ("failed", ABANDONED)
        assert listed[first]["finished_at"] is not None
        assert (listed[second]["status"], listed[second]["error"]) == ("running", None)
        table = run_cli("eval", "runs", database_url=database_url).stdout
        assert f"failed: {ABANDONED}" in table and "running" in table
        # resolved by compare (and the gate), it is refused as a failed run, never as one still running
        compared = run_cli("eval", "compare", first, second, database_url=database_url)
        assert compared.returncode == 2
        assert f"run {first} is failed: only completed runs can be compared" in compared.stderr
        scripted_target.holding = False
        _, stderr = live.communicate(timeout=300)
        assert live.returncode == 0, stderr
    finally:
        scripted_target.holding = False
        for process in (killed, live):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()
    listed = _listed(database_url)
    assert listed[second]["status"] == "completed"
    assert (listed[first]["status"], listed[first]["error"]) == ("failed", ABANDONED)


def test_a_run_marked_failed_while_it_ran_stays_failed_and_its_process_says_so(
    database_url: str, sessions: sessionmaker[Session], scripted_target: ScriptedTarget
) -> None:
    """The lock's server session ended under a live run (a pooler recycling it, an idle-session killer, a
    server restart), so the next reader stored the run as failed; the run then finished and stored
    'completed' over that, and reported success."""
    assert run_cli("eval", "sets", "sync", str(SETS / "good"), database_url=database_url).returncode == 0
    scripted_target.holding = True
    process = _start_run(database_url, scripted_target)
    try:
        (run_id,) = _replaying_runs(scripted_target, [process])
        with sessions.begin() as session:  # a second session: end the one that holds the run's lock
            holder = session.execute(
                text(
                    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted "
                    "AND classid = CAST(:space AS oid) AND objid = hashtext(:run_id)::oid"
                ),
                {"space": RUN_LOCKS, "run_id": run_id},
            ).scalar_one()
            session.execute(text("SELECT pg_terminate_backend(:pid, 10000)"), {"pid": holder})
        assert fail_abandoned_runs(sessions.kw["bind"], project="default") == [uuid.UUID(run_id)]
        scripted_target.holding = False
        _, stderr = process.communicate(timeout=300)
    finally:
        scripted_target.holding = False
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 2, stderr
    # a loaded machine may add progress heartbeats ("scoring 4 answers: 10 s elapsed"): only the error counts
    assert "Traceback" not in stderr
    assert [line for line in stderr.splitlines() if line.startswith("evallens: ")] == [
        f"evallens: error: run {run_id} failed: another process marked it failed while it ran "
        f"('{ABANDONED}'), so its answers were not stored; behind a pooler in transaction mode a live run "
        "looks abandoned (use session mode)"
    ]
    with sessions() as session:
        run = session.get_one(EvalRun, uuid.UUID(run_id))
        assert (run.status, run.error) == ("failed", ABANDONED)
        assert (
            session.scalar(select(func.count()).select_from(EvalResult).where(EvalResult.run_id == run.id))
            == 0
        )
