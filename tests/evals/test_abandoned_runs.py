"""An ``eval run`` process killed outright (SIGKILL, the OOM killer, a cancelled CI job) runs no clean-up:
the next listing finds its run's lock free and stores the run as failed, while a run whose process is
alive stays running."""

import json
import subprocess
import time

from evallens.runs import ABANDONED
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
