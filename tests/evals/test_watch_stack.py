"""``evallens eval watch`` left running against the real stack while the service restarts, changes and dies.

PostgreSQL, the collector and the reference service (vLLM with the tiny test model) run as real
processes; the watcher is the real command in a subprocess, read line by line.
"""

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from evallens.app.demo import evaluation
from evallens.app.demo.flow import SMOKE_MAX_MODEL_LEN
from evallens.app.demo.stack import Stack
from evallens.db import create_db_engine, create_session_factory
from evallens.db.migrate import upgrade
from evallens.ports import free_port
from evallens.service.documents.loader import load_corpus
from evallens.service.weights.tiny import build_tiny_llama
from evallens.settings import DemoSettings, EvalSettings, child_environment

pytestmark = pytest.mark.slow
CASES_PER_SCENARIO = 6


class Watcher:
    """``evallens eval watch`` in a subprocess, its output lines gathered as they come."""

    def __init__(self, stack: Stack, set_name: str, report_dir: Path) -> None:
        environment = {
            "EVALLENS_DATABASE_URL": stack.database_url,
            "EVALLENS_EVAL_MAX_TOKENS": "16",
            "EVALLENS_EVAL_CONCURRENCY": "1",  # slow enough to stop the target in the middle of a run
            "COLUMNS": "300",
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "evallens", "eval", "watch", "--set", set_name, "--endpoint",
             stack.service_url, "--interval", "1", "--settle", "2", "--report-dir", str(report_dir)],
            env=child_environment(environment), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self._incoming: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._incoming.put(line.rstrip("\n"))

    def wait_for(self, fragment: str, timeout_s: float = 300.0) -> str:
        """The next line containing ``fragment`` (earlier lines are kept in ``lines``)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self._incoming.get(timeout=1.0)
            except queue.Empty:
                assert self.process.poll() is None, "watch exited:\n" + "\n".join(self.lines)
                continue
            self.lines.append(line)
            if fragment in line:
                return line
        raise AssertionError(f"no line with {fragment!r} in {timeout_s} s:\n" + "\n".join(self.lines))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._reader.join(timeout=10)  # the pipe ends with the process
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Stack, Engine, str]]:
    data_dir = tmp_path_factory.mktemp("watch-stack")
    patch = pytest.MonkeyPatch()
    for name, value in {
        "EVALLENS_DATA_DIR": str(data_dir),
        "EVALLENS_DATABASE_URL": "",
        "EVALLENS_COLLECTOR_HTTP_PORT": str(free_port()),
        "EVALLENS_COLLECTOR_GRPC_PORT": str(free_port()),
        "EVALLENS_SERVICE_PORT": str(free_port()),
        "EVALLENS_DEMO_RETRIEVAL_BUDGET_MS": "30000",
    }.items():
        patch.setenv(name, value)
    model = build_tiny_llama(data_dir / "models" / "tiny", max_position_embeddings=SMOKE_MAX_MODEL_LEN)
    running = Stack(DemoSettings(), model, SMOKE_MAX_MODEL_LEN)
    try:
        upgrade(running.open_database())
        engine = create_db_engine(running.database_url)
        sessions = create_session_factory(engine)
        running.start_collector()
        running.start_service()
        load_corpus(evaluation.corpus_dir(), running.service_url)
        sets = evaluation.write_smoke_sets(data_dir / "sets", cases_per_scenario=CASES_PER_SCENARIO)
        eval_set_id, set_name, _ = evaluation.sync_sets(sessions, sets)
        settings = EvalSettings(eval_endpoint=running.service_url, eval_max_tokens=16, eval_concurrency=4)
        baseline = evaluation.replay(sessions, eval_set_id, running.service_url, "baseline", settings)
        evaluation.tag_baseline(sessions, baseline.run_id)
        yield running, engine, set_name
        engine.dispose()
    finally:
        running.stop()
        patch.undo()


def runs(engine: Engine) -> list[tuple[str, str, str | None]]:
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT config_fingerprint, status, error FROM eval_runs ORDER BY started_at")
        ).all()
    return [(row[0], row[1], row[2]) for row in rows]


def test_watch_on_the_real_stack(stack: tuple[Stack, Engine, str], tmp_path: Path) -> None:
    running, engine, set_name = stack
    ((baseline_fingerprint, _, _),) = runs(engine)
    watcher = Watcher(running, set_name, tmp_path / "reports")
    try:
        watcher.wait_for(f"fingerprint {baseline_fingerprint} already evaluated")

        # a restart with no change: the watcher waits it out and replays nothing
        running.restart_service({})
        watcher.wait_for("waiting: target not ready")
        watcher.wait_for(f"target ready again; config fingerprint {baseline_fingerprint} unchanged")
        assert len(runs(engine)) == 1

        # a changed parameter: exactly one run and one verdict
        running.restart_service({"EVALLENS_TOP_K": "1"})
        watcher.wait_for("replaying against")
        watcher.wait_for("gate vs main")
        completed = [r for r in runs(engine) if r[1] == "completed"]
        assert len(completed) == 2 and completed[1][0] != baseline_fingerprint
        with engine.connect() as connection:
            num_gates = connection.execute(text("SELECT count(*) FROM gate_reports")).scalar_one()
        assert num_gates == 1
        assert len(list((tmp_path / "reports").iterdir())) == 1

        # the target goes down in the middle of a run: a failed run, never counted as an evaluation
        running.restart_service({"EVALLENS_TOP_K": "2"})
        watcher.wait_for("replaying against")
        _wait_for_running_run(engine)
        time.sleep(2)
        running.processes.stop("service")
        watcher.wait_for("not counted as an evaluation")
        last_fingerprint, status, error = runs(engine)[-1]
        assert status == "failed" and error is not None
        assert "requests failed" in error or "stopped answering" in error
        assert last_fingerprint not in {r[0] for r in runs(engine) if r[1] == "completed"}
        watcher.wait_for("waiting: target not ready")
        assert os.path.exists(tmp_path / "reports")
    finally:
        watcher.stop()


def _wait_for_running_run(engine: Engine, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(status == "running" for _, status, _ in runs(engine)):
            return
        time.sleep(0.2)
    raise AssertionError("the watcher's run never started")
