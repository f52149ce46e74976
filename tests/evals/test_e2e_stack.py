"""The eval engine end to end on the real stack: PostgreSQL, collector, reference service (vLLM).

The tiny test model answers nonsense, so answer accuracy cannot move here; what the stack does to
retrieval and caching is real, and that is what these runs regress.
"""

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
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

pytestmark = pytest.mark.slow
ANSWER_SCENARIOS = {"returns_refunds", "shipping_logistics", "products", "complaints_escalation"}


class StackUnderTest:
    """A running stack with the smoke eval set synced, and helpers to replay and gate."""

    def __init__(self, stack: Stack, engine: Engine, eval_set_id: int) -> None:
        self.stack = stack
        self.engine = engine
        self.sessions: sessionmaker[Session] = create_session_factory(engine)
        self.eval_set_id = eval_set_id
        self.runs: dict[str, uuid.UUID] = {}

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
    live.stack.restart_service({"EVALLENS_RETRIEVAL_ENABLED": "false"})
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
    live.stack.restart_service({"EVALLENS_CACHE_SEMANTIC_THRESHOLD": "0.35"})
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
    wait_for_rows(live.engine, "SELECT count(*) FROM spans WHERE attributes ? :v", attr.FEEDBACK_SCORE, 9)
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
