"""Finding 3 of issue 14: every shared query of spans, questions, runs, sets and metric samples reads
only the viewer's project. Project "beta" holds the data; each test looks for it as project "alpha"."""

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from evallens import cases
from evallens.cases.mining import Readers, known_cases, mine_cases
from evallens.cases.mining._query import flagged_traces
from evallens.db.models import EvalRun, EvalSet, MetricSample, Span
from evallens.db.partitions import create_span_partitions
from evallens.runs import RunNotFound, resolve_run
from evallens.settings import CasesSettings
from evallens.telemetry import attributes as attr
from evallens.telemetry import metrics as prom
from evals.infra import compute_infra
from evals.readers import refuses_or_declines

ALPHA, BETA = "alpha", "beta"
NOW = datetime.now(UTC)
SHARED_TRACE = "ab" * 16  # alpha sent a span under beta's trace id, on purpose or by accident
BETA_QUESTION = "My card number is 4111 1111 1111 1111, why was I charged twice?"


def span(project: str, trace_id: str, span_id: str, **columns: Any) -> Span:
    start = columns.pop("start_time", NOW - timedelta(minutes=5))
    duration_ms = columns.pop("duration_ms", 400.0)
    values: dict[str, Any] = {
        "parent_span_id": None,
        "name": "POST /v1/chat/completions",
        "kind": 2,
        "status_code": 1,
        "attributes": {},
        "resource": {},
        "events": [],
    }
    values.update(columns)
    return Span(
        project=project,
        trace_id=trace_id,
        span_id=span_id,
        start_time=start,
        end_time=start + timedelta(milliseconds=duration_ms),
        duration_ms=duration_ms,
        **values,
    )


def question(text: str) -> dict[str, str]:
    return {attr.GEN_AI_INPUT_MESSAGES: json.dumps([{"role": "user", "content": text}])}


@pytest.fixture
def two_projects(sessions: sessionmaker[Session]) -> dict[str, Any]:
    """Beta: a failed request with a question, an eval run with spans and samples, a set. Alpha: one
    span (no question) under beta's trace id, a set of its own, nothing else."""
    with sessions.begin() as session:
        create_span_partitions(session.connection(), [NOW.date(), (NOW - timedelta(days=1)).date()])
        beta_set = EvalSet(project=BETA, name="support", version=1, content_hash="b1")
        alpha_set = EvalSet(project=ALPHA, name="support", version=1, content_hash="a1")
        session.add_all([beta_set, alpha_set])
        session.flush()
        beta_run = EvalRun(
            project=BETA,
            eval_set_id=beta_set.id,
            endpoint="http://beta",
            config={},
            config_fingerprint="fp",
            status="completed",
            started_at=NOW - timedelta(minutes=30),
            finished_at=NOW,
        )
        alpha_run = EvalRun(
            project=ALPHA,
            eval_set_id=alpha_set.id,
            endpoint="http://alpha",
            config={},
            config_fingerprint="fp",
            status="completed",
            started_at=NOW - timedelta(minutes=30),
            finished_at=NOW,
        )
        session.add_all([beta_run, alpha_run])
        session.flush()
        session.add_all(
            [
                span(BETA, SHARED_TRACE, "0" * 15 + "1", status_code=2, attributes=question(BETA_QUESTION)),
                span(ALPHA, SHARED_TRACE, "0" * 15 + "2", name="alpha child", parent_span_id="0" * 15 + "1"),
                # beta's eval traffic, also claiming alpha's run id: neither counts for alpha's run
                span(BETA, "cd" * 16, "0" * 15 + "3", eval_run_id=str(beta_run.id), duration_ms=999.0),
                span(BETA, "ef" * 16, "0" * 15 + "4", eval_run_id=str(alpha_run.id), duration_ms=777.0),
            ]
        )
        for minute in range(3):
            session.add(
                MetricSample(
                    project=BETA,
                    time=NOW - timedelta(minutes=20 - minute),
                    name=prom.VLLM_KV_CACHE_USAGE,
                    labels={},
                    value=0.9,
                    target="http://beta/metrics",
                )
            )
        return {"beta_run": str(beta_run.id), "alpha_run": str(alpha_run.id)}


def test_trace_questions_never_read_another_projects_spans(
    sessions: sessionmaker[Session], two_projects: dict[str, Any]
) -> None:
    with sessions() as session:
        assert cases.trace_questions(session, [SHARED_TRACE], ALPHA) == {SHARED_TRACE: None}
        assert cases.trace_questions(session, [SHARED_TRACE], BETA) == {SHARED_TRACE: BETA_QUESTION}


def test_promote_cannot_copy_another_projects_question(
    sessions: sessionmaker[Session], two_projects: dict[str, Any]
) -> None:
    with sessions() as session, pytest.raises(cases.TraceWithoutQuestion):
        cases.promote_traces(session, [SHARED_TRACE], eval_set_name="support", scenario="s", project=ALPHA)


def no_embedding(texts: list[str]) -> Any:
    pytest.fail(f"alpha has no question to embed, got {texts}")


def test_mining_reads_only_the_projects_traffic(
    sessions: sessionmaker[Session], two_projects: dict[str, Any]
) -> None:
    since = NOW - timedelta(hours=1)
    with sessions() as session:
        facts, num_traces = flagged_traces(session, ALPHA, since, min_traces=20, max_traces=100)
        assert all(BETA_QUESTION not in json.dumps(fact.question_values) for fact in facts)
        beta_facts, _ = flagged_traces(session, BETA, since, min_traces=20, max_traces=100)
        assert [fact.trace_id for fact in beta_facts] == [SHARED_TRACE]
        readers = Readers(refuses_or_declines=refuses_or_declines, embed=no_embedding)
        report = mine_cases(
            session, CasesSettings(), readers, project=ALPHA, since=timedelta(hours=1), limit=10
        )
        assert all(candidate.question is None for candidate in report.candidates)
        assert known_cases(session, ALPHA) == (set(), [])


def test_runs_of_another_project_are_not_found_even_by_full_id(
    sessions: sessionmaker[Session], two_projects: dict[str, Any]
) -> None:
    with sessions() as session:
        with pytest.raises(RunNotFound):
            resolve_run(session, two_projects["beta_run"], project=ALPHA)
        with pytest.raises(RunNotFound):
            resolve_run(session, two_projects["beta_run"][:8], project=ALPHA)
        assert (
            str(resolve_run(session, two_projects["beta_run"], project=BETA).run.id)
            == two_projects["beta_run"]
        )


def test_serving_figures_of_a_run_use_only_its_projects_spans_and_samples(
    sessions: sessionmaker[Session], two_projects: dict[str, Any]
) -> None:
    with sessions() as session:
        alpha_run = session.get_one(EvalRun, two_projects["alpha_run"])
        infra = compute_infra(session, alpha_run)
        assert infra.num_requests == 0 and infra.latency_ms_p50 is None  # beta's span claiming the id
        assert infra.kv_cache_usage_mean is None  # beta's scrapes
        beta_run = session.get_one(EvalRun, two_projects["beta_run"])
        beta_infra = compute_infra(session, beta_run)
        assert beta_infra.latency_ms_p50 == 999.0 and beta_infra.kv_cache_usage_mean == pytest.approx(0.9)
