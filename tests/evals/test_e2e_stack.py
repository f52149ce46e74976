"""The eval engine end to end on the real stack: PostgreSQL, collector, reference service (vLLM).

The tiny test model answers nonsense, so answer accuracy cannot move here; what the stack does to
retrieval and caching is real, and that is what these runs regress. The module's tests share one
stack (each start of the service is a vLLM engine start) and run in file order: each gate compares
with the first test's baseline, and ``evallens eval watch`` runs last, because it restarts the service
and stops it for good.
"""

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from evallens.app.demo import evaluation
from evallens.app.demo.flow import (
    SMOKE_MAX_MODEL_LEN,
    wait_for_questions,
    wait_for_rows,
)
from evallens.app.demo.stack import Stack
from evallens.app.demo.traffic import QUESTIONS, send_traffic
from evallens.db import create_db_engine, create_session_factory
from evallens.db.migrate import upgrade
from evallens.ports import free_port
from evallens.service.documents.loader import load_corpus
from evallens.service.weights.tiny import build_tiny_llama
from evallens.settings import DemoSettings, EvalSettings, child_environment
from evallens.telemetry import attributes as attr
from evals.sets.store import find_set_version
from tests.evals.watch_process import Watcher

pytestmark = pytest.mark.slow
ANSWER_SCENARIOS = {"returns_refunds", "shipping_logistics", "products", "complaints_escalation"}
WATCH_SET_NAME = "acme-support-watch"
WATCH_CASES_PER_SCENARIO = 6


class StackUnderTest:
    """A running stack with the smoke eval set synced, and helpers to replay and gate."""

    def __init__(self, stack: Stack, engine: Engine, eval_set_id: int) -> None:
        self.stack = stack
        self.engine = engine
        self.sessions: sessionmaker[Session] = create_session_factory(engine)
        self.eval_set_id = eval_set_id
        self.runs: dict[str, uuid.UUID] = {}
        self.change: dict[str, str] = {}  # the settings the running service was started with

    def restart(self, change: dict[str, str]) -> None:
        """Restart the service with ``change`` (and nothing else) over its defaults."""
        self.stack.restart_service(change)
        self.change = change

    def replay(self, label: str) -> uuid.UUID:
        settings = EvalSettings(eval_endpoint=self.stack.service_url, eval_max_tokens=16, eval_concurrency=8)
        run = evaluation.replay(self.sessions, self.eval_set_id, self.stack.service_url, label, settings)
        assert not run.reused
        # the runner waited for the service's spans before it computed the run's serving figures
        with self.engine.connect() as connection:
            traces, results = connection.execute(
                text(
                    "SELECT (SELECT count(DISTINCT trace_id) FROM spans WHERE eval_run_id = :v),"
                    " (SELECT count(*) FROM eval_results WHERE run_id = CAST(:v AS uuid))"
                ),
                {"v": str(run.run_id)},
            ).one()
        assert traces == results > 0
        self.runs[label] = run.run_id
        return run.run_id

    def gate(self, candidate: str, report_dir: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "evallens", "gate", "--baseline", str(self.runs["baseline"]),
             "--candidate", str(self.runs[candidate]), "--report-dir", str(report_dir)],
            env=child_environment({"EVALLENS_DATABASE_URL": self.stack.database_url, "COLUMNS": "200"}),
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackUnderTest]:
    data_dir = tmp_path_factory.mktemp("e2e")
    patch = pytest.MonkeyPatch()
    for name, value in {
        "EVALLENS_DATA_DIR": str(data_dir),
        "EVALLENS_DATABASE_URL": "",
        "EVALLENS_COLLECTOR_HTTP_PORT": str(free_port()),
        "EVALLENS_COLLECTOR_GRPC_PORT": str(free_port()),
        "EVALLENS_SERVICE_PORT": str(free_port()),
        # budgets are not under test here: on a loaded CI machine retrieval must not degrade
        "EVALLENS_DEMO_RETRIEVAL_BUDGET_MS": "30000",
    }.items():
        patch.setenv(name, value)
    settings = DemoSettings()
    model = build_tiny_llama(data_dir / "models" / "tiny", max_position_embeddings=SMOKE_MAX_MODEL_LEN)
    stack = Stack(settings, model, SMOKE_MAX_MODEL_LEN)
    try:
        upgrade(stack.open_database())
        engine = create_db_engine(stack.database_url)
        sessions = create_session_factory(engine)
        stack.start_collector()
        stack.start_service()
        load_corpus(evaluation.corpus_dir(), stack.service_url)
        sets = evaluation.write_smoke_sets(data_dir / "sets", cases_per_scenario=15)
        eval_set_id, _, _ = evaluation.sync_sets(sessions, sets)
        yield StackUnderTest(stack, engine, eval_set_id)
        engine.dispose()
    finally:
        stack.stop()
        patch.undo()


def regressions(report_dir: Path) -> set[tuple[str, str]]:
    body = json.loads((report_dir / "gate.json").read_text())
    return {(c["scenario"], c["metric"]) for c in body["comparisons"] if c["regression"]}


def test_unchanged_config_at_temperature_0_passes(live: StackUnderTest, tmp_path: Path) -> None:
    live.replay("baseline")
    live.replay("same")
    result = live.gate("same", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verdict: pass" in result.stdout
    assert regressions(tmp_path) == set()
    assert {p.name for p in tmp_path.iterdir()} == {"gate.md", "gate.xml", "gate.json"}
    assert 'failures="0"' in (tmp_path / "gate.xml").read_text()
    assert "pass" in (tmp_path / "gate.md").read_text().lower()


def test_retrieval_off_fails_with_recall_regressions_in_answer_scenarios(
    live: StackUnderTest, tmp_path: Path
) -> None:
    live.restart({"EVALLENS_RETRIEVAL_ENABLED": "false"})
    live.replay("retrieval_off")
    result = live.gate("retrieval_off", tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    found = regressions(tmp_path)
    assert ("overall", "recall") in found
    recall_scenarios = {scenario for scenario, metric in found if metric == "recall"} - {"overall"}
    assert recall_scenarios and recall_scenarios <= ANSWER_SCENARIOS
    assert not any(scenario in {"harmful", "out_of_scope"} and m == "recall" for scenario, m in found)
    assert "retrieval recall fell" in result.stdout
    assert "<failure" in (tmp_path / "gate.xml").read_text()


def test_loose_semantic_cache_fails_and_the_cache_is_named(live: StackUnderTest, tmp_path: Path) -> None:
    live.restart({"EVALLENS_CACHE_SEMANTIC_THRESHOLD": "0.35"})
    live.replay("loose_cache")
    result = live.gate("loose_cache", tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    body = json.loads((tmp_path / "gate.json").read_text())
    assert (
        body["infra_candidate"]["semantic_cache_hit_rate"] > body["infra_baseline"]["semantic_cache_hit_rate"]
    )
    cache_hints = [h for h in body["hints"] if "semantic-cache hits rose" in h["message"]]
    assert cache_hints and "too loose" in cache_hints[0]["message"]
    assert "semantic-cache hits rose" in result.stdout


def run_cli(live: StackUnderTest, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evallens", *args],
        env=child_environment({"EVALLENS_DATABASE_URL": live.stack.database_url, "COLUMNS": "200"}),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_bad_production_cases_are_mined_promoted_reviewed_and_replayed(live: StackUnderTest) -> None:
    sent = send_traffic(live.stack.service_url, len(QUESTIONS), max_tokens=16)
    assert sent.num_errors == 0 and sent.num_negative == 5
    feedback = "SELECT count(*) FROM spans WHERE attributes ? :v"
    wait_for_rows(live.engine, feedback, {"v": attr.FEEDBACK_SCORE}, 9)
    wait_for_questions(live.engine, sent.trace_ids)  # mining reads the request spans too

    mined = run_cli(live, "cases", "mine", "--since", "1h", "--json")
    assert mined.returncode == 0, mined.stderr
    candidates = json.loads(mined.stdout)["candidates"]
    disliked = {question for question, _, _, score in QUESTIONS if score is not None and score < 0}
    flagged = {c["question"] for c in candidates if "negative_feedback" in c["reasons"]}
    assert len(flagged) == len(disliked)
    assert "I was charged twice, my email is [EMAIL], fix it" in flagged
    # near-duplicates collapsed (knowledge-base uploads, which ask nothing, are not production traffic)
    asked = [c["question"] for c in candidates if c["question"] is not None]
    assert asked and len(set(asked)) == len(asked)
    with live.engine.connect() as connection:
        eval_traffic = connection.execute(
            text("SELECT count(*) FROM spans WHERE trace_id = ANY(:ids) AND eval_run_id IS NOT NULL"),
            {"ids": [t for c in candidates for t in c["trace_ids"]]},
        ).scalar_one()
    assert eval_traffic == 0

    charged = next(c for c in candidates if (c["question"] or "").startswith("I was charged twice"))
    promoted = run_cli(live, "cases", "promote", charged["trace_id"], "--set", evaluation.SMOKE_SET_NAME,
                       "--scenario", "complaints_escalation")  # fmt: skip
    assert promoted.returncode == 0, promoted.stderr
    assert "needs_review" in promoted.stdout and "[EMAIL]" in promoted.stdout
    again = run_cli(live, "cases", "promote", charged["trace_id"], "--set", evaluation.SMOKE_SET_NAME,
                    "--scenario", "complaints_escalation")  # fmt: skip
    assert again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1

    listed = json.loads(run_cli(live, "cases", "list", "--set", evaluation.SMOKE_SET_NAME, "--json").stdout)
    (case,) = [row for row in listed if row["source_trace_id"] == charged["trace_id"]]
    assert case["status"] == "needs_review" and "jane.doe" not in case["question"]
    reviewed = run_cli(live, "cases", "review", case["case_key"], "--set", evaluation.SMOKE_SET_NAME,
                       "--expected", "answer", "--reference", "Duplicate charges are refunded.")  # fmt: skip
    assert reviewed.returncode == 0, reviewed.stderr

    with live.sessions() as session:
        latest = find_set_version(session, evaluation.SMOKE_SET_NAME)
        latest_id, latest_version = latest.id, latest.version
    assert latest_version >= 3  # synced, promoted (needs review), reviewed
    run_id = evaluation.replay(
        live.sessions, latest_id, live.stack.service_url, "after review",
        EvalSettings(eval_endpoint=live.stack.service_url, eval_max_tokens=16, eval_concurrency=8),
    ).run_id  # fmt: skip
    with live.engine.connect() as connection:
        replayed = connection.execute(
            text(
                "SELECT count(*) FROM eval_results r JOIN eval_cases c ON c.id = r.case_id"
                " WHERE r.run_id = :run AND c.case_key = :key"
            ),
            {"run": run_id, "key": case["case_key"]},
        ).scalar_one()
    assert replayed == 1


def write_watch_sets(target: Path) -> Path:
    """A set of its own for the watcher: the first cases of each curated scenario."""
    evaluation.write_smoke_sets(target, cases_per_scenario=WATCH_CASES_PER_SCENARIO)
    for path in target.glob("*.yaml"):
        content = yaml.safe_load(path.read_text())
        content["set"] = WATCH_SET_NAME
        path.write_text(yaml.safe_dump(content, sort_keys=False, allow_unicode=True))
    return target


def watch_runs(engine: Engine) -> list[tuple[str, str, str | None]]:
    """(fingerprint, status, error) of the watch set's runs, oldest first (the other tests' are not)."""
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT r.config_fingerprint, r.status, r.error FROM eval_runs r"
                " JOIN eval_sets s ON s.id = r.eval_set_id WHERE s.name = :name ORDER BY r.started_at"
            ),
            {"name": WATCH_SET_NAME},
        ).all()
    return [(row[0], row[1], row[2]) for row in rows]


def test_watch_on_the_real_stack(live: StackUnderTest, tmp_path: Path) -> None:
    """``evallens eval watch`` left running while the service restarts, changes and dies (runs last:
    the service stays stopped)."""
    eval_set_id, set_name, _ = evaluation.sync_sets(live.sessions, write_watch_sets(tmp_path / "sets"))
    settings = EvalSettings(eval_endpoint=live.stack.service_url, eval_max_tokens=16, eval_concurrency=4)
    baseline = evaluation.replay(live.sessions, eval_set_id, live.stack.service_url, "baseline", settings)
    evaluation.tag_baseline(live.sessions, baseline.run_id)
    ((baseline_fingerprint, _, _),) = watch_runs(live.engine)
    watcher = Watcher(live.stack.database_url, live.stack.service_url, set_name, tmp_path / "reports")
    try:
        watcher.wait_for(f"fingerprint {baseline_fingerprint} already evaluated")

        # a restart with no change: the watcher waits it out and replays nothing
        live.restart(live.change)
        watcher.wait_for("waiting: target not ready")
        watcher.wait_for(f"target ready again; config fingerprint {baseline_fingerprint} unchanged")
        assert len(watch_runs(live.engine)) == 1

        # a changed parameter: exactly one run and one verdict
        live.restart({"EVALLENS_TOP_K": "1"})
        watcher.wait_for("replaying against")
        watcher.wait_for("gate vs main")
        completed = [r for r in watch_runs(live.engine) if r[1] == "completed"]
        assert len(completed) == 2 and completed[1][0] != baseline_fingerprint
        with live.engine.connect() as connection:
            num_gates = connection.execute(
                text("SELECT count(*) FROM gate_reports WHERE eval_set_name = :name"), {"name": set_name}
            ).scalar_one()
        assert num_gates == 1
        assert len(list((tmp_path / "reports").iterdir())) == 1

        # the target goes down in the middle of a run: a failed run, never counted as an evaluation
        live.restart({"EVALLENS_TOP_K": "2"})
        watcher.wait_for("replaying against")
        _wait_for_running_run(live.engine)
        time.sleep(2)
        live.stack.processes.stop("service")
        watcher.wait_for("not counted as an evaluation")
        last_fingerprint, status, error = watch_runs(live.engine)[-1]
        assert status == "failed" and error is not None
        assert "requests failed" in error or "stopped answering" in error
        assert last_fingerprint not in {r[0] for r in watch_runs(live.engine) if r[1] == "completed"}
        watcher.wait_for("waiting: target not ready")
        assert (tmp_path / "reports").exists()
    finally:
        watcher.stop()


def _wait_for_running_run(engine: Engine, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(status == "running" for _, status, _ in watch_runs(engine)):
            return
        time.sleep(0.2)
    raise AssertionError("the watcher's run never started")
