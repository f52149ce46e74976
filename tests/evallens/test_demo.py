"""``evallens demo --smoke --exit`` end to end, then the database it leaves behind."""

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest

from evallens.db.server import embedded_url, start_embedded
from evallens.ports import free_port
from evallens.settings import child_environment
from evals.render.terminal import COLUMNS

pytestmark = pytest.mark.slow


def processes_using(data_dir: Path) -> list[str]:
    """Processes (other than this one) started for ``data_dir``: by command line or environment."""
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        if process.pid == psutil.Process().pid:
            continue
        try:
            in_cmdline = any(str(data_dir) in part for part in process.info["cmdline"] or [])
            in_environment = process.environ().get("EVALLENS_DATA_DIR") == str(data_dir)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if in_cmdline or in_environment:
            found.append(" ".join(process.info["cmdline"] or []))
    return found


def demo_environment(data_dir: Path) -> dict[str, str]:
    """The demo on its own data dir and free ports."""
    return {
        "EVALLENS_DATA_DIR": str(data_dir),
        "EVALLENS_DATABASE_URL": "",
        "EVALLENS_COLLECTOR_HTTP_PORT": str(free_port()),
        "EVALLENS_COLLECTOR_GRPC_PORT": str(free_port()),
        "EVALLENS_SERVICE_PORT": str(free_port()),
        "EVALLENS_DASHBOARD_PORT": str(free_port()),
        # budgets are not under test here: on a loaded CI machine retrieval must not degrade
        "EVALLENS_DEMO_RETRIEVAL_BUDGET_MS": "30000",
        # the tiny model's answers are noise and no assertion reads their words (the gate's regression
        # is in recall, from the retrieved documents): a third of the demo's default tokens to decode
        "EVALLENS_DEMO_EVAL_MAX_TOKENS": "32",
        # the user's own project for their cases and dashboard: the demo keeps to its own (default) one
        "EVALLENS_CASES_PROJECT": "someone-elses",
        "EVALLENS_DASHBOARD_PROJECT": "someone-elses",
    }


@pytest.fixture(scope="module")
def demo_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[subprocess.CompletedProcess[str], Path]]:
    # vLLM's socket paths must stay short: keep the data dir near the root
    data_dir = Path(tmp_path_factory.mktemp("d", numbered=True))
    result = subprocess.run(
        [sys.executable, "-m", "evallens", "demo", "--smoke", "--exit"],
        env=child_environment(demo_environment(data_dir)),
        capture_output=True,
        text=True,
        timeout=1500,
    )
    yield result, data_dir


def test_demo_exits_cleanly_and_leaves_nothing_running(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, data_dir = demo_run
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for step in [
        "1. Prepare",
        "2. Start the collector",
        "4. Replay",
        "5. Change",
        "6. Send",
        "7. Start the dashboard",
    ]:
        assert step in result.stdout
    assert "gate verdict: regression" in result.stdout
    # piped, the gate's table is as wide as its text: every column heading and the regressed recall cell
    # on one line each, where a console of 80 columns would cut them to "sce…", "rec…", "RE…"
    lines = result.stdout.splitlines()
    assert any(all(column in line for column in COLUMNS) for line in lines), result.stdout[-6000:]
    assert any("REGRESSION" in line and "recall" in line for line in lines), result.stdout[-6000:]
    # piped, the long replays report progress in plain lines (counts, failures, rate) inside their step
    replay_lines = [line for line in result.stdout.splitlines() if line.startswith("replaying ")]
    assert replay_lines and all(" done, " in line and " failed, " in line for line in replay_lines)
    # mining reads the project the demo's traffic went to, not the user's EVALLENS_CASES_PROJECT
    mined = re.search(r"(\d+) production traces since .*, (\d+) candidates", result.stdout)
    assert mined is not None and int(mined[1]) > 0 and int(mined[2]) > 0, result.stdout[-6000:]
    assert processes_using(data_dir) == []


def test_demo_leaves_traces_metrics_runs_and_a_gate_verdict(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, data_dir = demo_run
    assert result.returncode == 0
    server = start_embedded(data_dir / "postgres")
    try:
        with psycopg.connect(embedded_url(server, "evallens")) as connection:
            priced = connection.execute(
                "SELECT count(*) FROM spans WHERE input_tokens > 0 AND output_tokens > 0 AND cost_usd > 0"
                " AND model IS NOT NULL"
            ).fetchone()
            vllm_samples = connection.execute(
                "SELECT count(DISTINCT name) FROM metric_samples WHERE name LIKE 'vllm:%'"
            ).fetchone()
            runs = connection.execute("SELECT label, status FROM eval_runs ORDER BY started_at").fetchall()
            gate = connection.execute(
                "SELECT verdict, jsonb_array_length(report->'hints') FROM gate_reports"
            ).fetchall()
            tagged = connection.execute("SELECT tag FROM eval_tags").fetchall()
    finally:
        server.cleanup()
    assert priced is not None and priced[0] > 0
    assert vllm_samples is not None and vllm_samples[0] >= 3
    assert runs == [("baseline", "completed"), ("candidate", "completed")]
    assert len(gate) == 1 and gate[0][0] == "regression" and gate[0][1] >= 1
    assert tagged == [("main",)]


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie has exited; only its parent has not reaped it yet)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def wait_for_text(path: Path, text: str, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in path.read_text(errors="replace"):
        assert process.poll() is None, f"the demo exited with {process.returncode}:\n{path.read_text()}"
        assert time.monotonic() < deadline, f"no {text!r} after {timeout_s} s:\n{path.read_text()}"
        time.sleep(1)


def as_a_background_job() -> None:
    """What a non-interactive shell does to ``command &`` (CI scripts): SIGINT starts out ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.timeout(2400)
def test_a_warm_second_run_reuses_its_runs_and_ctrl_c_stops_every_process(
    demo_run: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    first, data_dir = demo_run
    assert first.returncode == 0
    output = tmp_path / "demo.out"
    with output.open("wb") as out:
        demo = subprocess.Popen(
            [sys.executable, "-m", "evallens", "demo", "--smoke"],  # keeps running until Ctrl-C
            env=child_environment(demo_environment(data_dir)), stdout=out, stderr=subprocess.STDOUT,
            preexec_fn=as_a_background_job,
        )  # fmt: skip
    children: list[int] = []
    postmaster = 0
    try:
        wait_for_text(output, "press Ctrl-C to stop it all", demo, timeout_s=1200)
        children = [child.pid for child in psutil.Process(demo.pid).children(recursive=True)]
        postmaster = int((data_dir / "postgres" / "postmaster.pid").read_text().split()[0])
        assert len(children) >= 3 and alive(postmaster)  # collector, service, dashboard; PostgreSQL
        demo.send_signal(signal.SIGINT)
        assert demo.wait(timeout=180) == 130
    finally:
        if demo.poll() is None:  # it did not stop: leave nothing running for the tests after this one
            demo.kill()
            demo.wait()
            for pid, how in [*((child, signal.SIGKILL) for child in children), (postmaster, signal.SIGINT)]:
                if pid and alive(pid):
                    os.kill(pid, how)
    text = output.read_text()
    assert text.count("(reused)") == 2  # the baseline and the candidate run
    # the baseline's run was found before any model loaded: this run started the service once, with the
    # change, where the first run started it twice (baseline, then the change)
    assert "reused: the service starts with the change at once" in text
    service_log = (data_dir / "demo" / "logs" / "service.log").read_text(errors="replace")
    assert service_log.count("Started server process") == 3
    assert [pid for pid in [*children, postmaster] if alive(pid)] == []
    assert processes_using(data_dir) == []
    server = start_embedded(data_dir / "postgres")
    try:
        with psycopg.connect(embedded_url(server, "evallens")) as connection:
            runs = connection.execute("SELECT label FROM eval_runs ORDER BY started_at").fetchall()
    finally:
        server.cleanup()
    assert runs == [("baseline",), ("candidate",)]  # the second run replayed nothing
