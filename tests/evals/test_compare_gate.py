"""Compare and gate on runs, results, spans and metric samples written into the real test database."""

import io
import json
import random
import string
import uuid
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from rich.console import Console
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from evallens.db.models import EvalResult, EvalRun, GateReport, MetricSample, Span
from evallens.db.partitions import create_span_partitions
from evallens.reports import GateReportBody
from evallens.runs import tag_run
from evallens.telemetry import attributes as attr
from evallens.telemetry import metrics as prom
from evals.compare import ComparisonOptions, compare_runs
from evals.errors import NothingCompared, ScoredDifferently
from evals.render.junit import render_junit
from evals.render.markdown import render_markdown
from evals.render.terminal import print_report
from evals.sets.format import CaseSpec, EvalSetSpec
from evals.sets.store import load_cases, sync_set
from tests.evals.conftest import run_cli

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
NUM_CASES = 30


def _make_set(session: Session, *, edited: int = 0, added: int = 0) -> int:
    """The set's version; with ``edited``, the version whose first ``edited`` returns_refunds cases
    have another reference answer (the policy they ask about changed); with ``added``, that many more
    cases in each scenario."""
    cases = [
        CaseSpec(
            id=f"{scenario[:2]}-{i:03d}",
            scenario=scenario,
            question=f"question {scenario} {i}?",
            reference_answer=f"answer {i}"
            + (" (revised)" if scenario == "returns_refunds" and i < edited else ""),
            reference_context_ids=[f"doc-{i}"],
        )
        for scenario in ("returns_refunds", "shipping_logistics")
        for i in range(NUM_CASES + added)
    ]
    spec = EvalSetSpec(name="synthetic", source_path="memory", cases=cases)
    return sync_set(session, spec).eval_set_id


def _add_run(
    session: Session,
    eval_set_id: int,
    start: datetime,
    *,
    wrong: int = 0,
    semantic_hits: int = 0,
    recall_misses: int = 0,
    unscored: int = 0,
    config: dict[str, object] | None = None,
    scoring: dict[str, object] | None = None,
) -> uuid.UUID:
    """A completed run; in returns_refunds the first ``wrong`` answers are inaccurate and the first
    ``semantic_hits`` requests were served from the semantic cache (one span per request); in
    shipping_logistics the judge left the first ``unscored`` answers without an accuracy verdict."""
    run = EvalRun(
        id=uuid.uuid4(),
        eval_set_id=eval_set_id,
        endpoint="http://target",
        config=config or {"top_k": 5},
        config_fingerprint=json.dumps(config or {}),
        scoring=scoring,
        status="completed",
        started_at=start,
        finished_at=start + timedelta(minutes=5),
    )
    session.add(run)
    session.flush()
    for n, case in enumerate(load_cases(session, eval_set_id)):
        index = int(case.case_key.split("-")[1])
        in_returns = case.scenario == "returns_refunds"
        accurate = not (in_returns and index < wrong)
        retrieved = not (case.scenario == "shipping_logistics" and index < recall_misses)
        no_verdict = case.scenario == "shipping_logistics" and index < unscored
        scores = {"irrelevance": 0.0, "harmfulness": 0.0, "recall": float(retrieved)}
        if not no_verdict:
            scores["accuracy"] = float(accurate)
        session.add(
            EvalResult(
                run_id=run.id,
                eval_set_id=run.eval_set_id,
                case_id=case.id,
                response=f"reply {case.case_key}",
                scores=scores,
                unscored={"accuracy": "judge reply was not JSON"} if no_verdict else {},
                passed={"accuracy": accurate},
                latency_ms=400.0,
                trace_id=f"{run.id.hex[:16]}{n:016x}",
            )
        )
        hit = in_returns and index < semantic_hits
        session.add(
            Span(
                trace_id=f"{run.id.hex[:16]}{n:016x}",
                span_id=f"{n:016x}",
                start_time=start + timedelta(seconds=n),
                end_time=start + timedelta(seconds=n, milliseconds=300),
                duration_ms=300.0 + n,
                name="chat",
                kind=2,
                status_code=1,
                attributes={attr.CACHE_SEMANTIC_HIT: hit, attr.TIME_TO_FIRST_TOKEN_S: 0.05},
                resource={},
                events=[],
                eval_run_id=str(run.id),
                eval_case_id=case.case_key,
                output_tokens=20,
            )
        )
    return run.id


def _add_samples(session: Session, start: datetime, *, kv: float, prefix_hits: float) -> None:
    for minute, (queries, hits) in enumerate([(0, 0), (50, 25), (100, 100 * prefix_hits)]):
        time = start + timedelta(minutes=2 * minute)
        session.add_all(
            [
                MetricSample(
                    time=time,
                    name=prom.VLLM_KV_CACHE_USAGE,
                    labels={},
                    value=kv * (minute + 1) / 3,
                    target="t",
                ),
                MetricSample(
                    time=time,
                    name=prom.VLLM_PREFIX_CACHE_QUERIES,
                    labels={},
                    value=1000 + queries,
                    target="t",
                ),
                MetricSample(
                    time=time, name=prom.VLLM_PREFIX_CACHE_HITS, labels={}, value=500 + hits, target="t"
                ),
            ]
        )


@pytest.fixture
def runs(sessions: sessionmaker[Session]) -> dict[str, uuid.UUID]:
    with sessions.begin() as session:
        create_span_partitions(session.connection(), [T0.date()])
        eval_set_id = _make_set(session)
        baseline = _add_run(session, eval_set_id, T0)
        _add_samples(session, T0, kv=0.3, prefix_hits=0.5)
        same = _add_run(session, eval_set_id, T0 + timedelta(hours=1))
        cached = _add_run(
            session,
            eval_set_id,
            T0 + timedelta(hours=2),
            wrong=14,
            semantic_hits=20,
            config={"top_k": 5, "semantic_cache": {"threshold": 0.2}},
        )
        retrieval_off = _add_run(
            session, eval_set_id, T0 + timedelta(hours=3), recall_misses=25, config={"top_k": 0}
        )
        cached_citations = _add_run(
            session,
            eval_set_id,
            T0 + timedelta(hours=4),
            recall_misses=25,
            semantic_hits=20,
            config={"top_k": 5, "semantic_cache": {"threshold": 0.2}},
        )
        judge_gaps = _add_run(session, eval_set_id, T0 + timedelta(hours=5), unscored=4)
        tag_run(session, str(baseline), "main")
    return {
        "judge_gaps": judge_gaps,
        "baseline": baseline,
        "same": same,
        "cached": cached,
        "retrieval_off": retrieval_off,
        "cached_citations": cached_citations,
    }


def test_infra_summary_from_spans_and_samples(
    sessions: sessionmaker[Session], runs: dict[str, uuid.UUID]
) -> None:
    with sessions.begin() as session:
        body = compare_runs(session, "main", str(runs["cached"]), ComparisonOptions())
    base = body.infra_baseline
    assert base is not None and body.infra_candidate is not None
    assert base.num_requests == 60 and base.latency_ms_p50 == pytest.approx(329.5)
    assert base.ttft_ms_p95 == pytest.approx(50.0)
    assert base.output_tokens_per_s == pytest.approx(60 * 20 / (sum(300.0 + n for n in range(60)) / 1000))
    assert base.kv_cache_usage_max == pytest.approx(0.3) and base.kv_cache_usage_mean == pytest.approx(0.2)
    assert base.prefix_cache_hit_rate == pytest.approx(0.5)  # (550 - 500) / (1100 - 1000)
    assert base.semantic_cache_hit_rate == 0.0
    assert body.infra_candidate.semantic_cache_hit_rate == pytest.approx(20 / 60)
    assert body.infra_candidate.kv_cache_usage_max is None  # no samples in the candidate's window


def test_semantic_cache_regression_names_the_cache(
    sessions: sessionmaker[Session], runs: dict[str, uuid.UUID]
) -> None:
    with sessions.begin() as session:
        body = compare_runs(session, "main", str(runs["cached"]), ComparisonOptions())
    assert body.verdict == "regression"
    regressions = {(c.scenario, c.metric) for c in body.comparisons if c.regression}
    assert regressions == {("overall", "accuracy"), ("returns_refunds", "accuracy")}
    cell = next(c for c in body.comparisons if (c.scenario, c.metric) == ("returns_refunds", "accuracy"))
    # one-sided exact McNemar on 14 lost answers; the scenario is flagged through its overall cell:
    # min(pooled 2^-14, Bonferroni 2 * 2^-14) at half the level each -> 2^-13, Holm over 4 metrics
    assert cell.test == "mcnemar" and cell.p_value == pytest.approx(2**-14)
    assert cell.p_adjusted == pytest.approx(8 * 2**-14) and (cell.num_worse, cell.num_better) == (14, 0)
    assert body.procedure == "hierarchical" and body.error_rate and "at most alpha" in body.error_rate
    (cache_hint,) = [h for h in body.hints if "semantic-cache" in h.message]
    assert "too loose" in cache_hint.message
    assert cache_hint.evidence["semantic_cache_hit_rate_baseline"] == 0.0
    assert cache_hint.evidence["semantic_cache_hit_rate_candidate"] == pytest.approx(1 / 3)
    assert any("semantic_cache.threshold" in h.message for h in body.hints)
    assert {f.case_key for f in body.flipped_cases} == {f"re-{i:03d}" for i in range(14)}


def test_recall_regression_points_at_retrieval(
    sessions: sessionmaker[Session], runs: dict[str, uuid.UUID]
) -> None:
    with sessions.begin() as session:
        body = compare_runs(session, "main", str(runs["retrieval_off"]), ComparisonOptions())
    regressions = {(c.scenario, c.metric) for c in body.comparisons if c.regression}
    assert regressions == {("overall", "recall"), ("shipping_logistics", "recall")}
    assert any("index, the embedding model or top_k" in h.message for h in body.hints)
    assert not any("semantic-cache" in h.message for h in body.hints)


def test_recall_lost_to_cached_answers_names_the_cache_not_the_index(
    sessions: sessionmaker[Session], runs: dict[str, uuid.UUID]
) -> None:
    with sessions.begin() as session:
        body = compare_runs(session, "main", str(runs["cached_citations"]), ComparisonOptions())
    assert ("overall", "recall") in {(c.scenario, c.metric) for c in body.comparisons if c.regression}
    (cache_hint,) = [h for h in body.hints if "semantic-cache" in h.message]
    assert "recall" in cache_hint.message and "too loose" in cache_hint.message
    recall_before, recall_after = (cache_hint.evidence[f"recall_{run}"] for run in ("baseline", "candidate"))
    assert recall_before is not None and recall_after is not None and recall_after < recall_before
    assert not any("index, the embedding model or top_k" in h.message for h in body.hints)


SCORED: dict[str, object] = {
    "metrics_code": "abc",
    "similarity": "MiniLmSimilarity",
    "judge": None,
    "harm_classifier": None,
}


def test_runs_scored_differently_are_never_compared(
    database_url: str, sessions: sessionmaker[Session], runs: dict[str, uuid.UUID]
) -> None:
    with sessions.begin() as session:
        eval_set_id = session.get_one(EvalRun, runs["baseline"]).eval_set_id
        scored = _add_run(session, eval_set_id, T0 + timedelta(hours=6), scoring=SCORED)
        same = _add_run(session, eval_set_id, T0 + timedelta(hours=7), scoring=SCORED)
        retrained = {**SCORED, "harm_classifier": "manifest 0123", "metrics_code": "def"}
        rescored = _add_run(session, eval_set_id, T0 + timedelta(hours=8), scoring=retrained)
    with sessions() as session:
        assert compare_runs(session, str(scored), str(same), ComparisonOptions()).verdict == "pass"
        with pytest.raises(ScoredDifferently) as error:
            compare_runs(session, str(scored), str(rescored), ComparisonOptions())
        message = str(error.value)
        assert f"run {scored} and run {rescored} cannot be compared: they are scored differently " in message
        assert "(harm_classifier, metrics_code changed)" in message
        assert "`evallens eval run --set synthetic --tag main`" in message
        with pytest.raises(
            ScoredDifferently, match=f"run {runs['baseline']} was stored before runs recorded"
        ):
            compare_runs(session, str(runs["baseline"]), str(scored), ComparisonOptions())
    refused = run_cli(
        "gate", "--baseline", str(scored), "--candidate", str(rescored), database_url=database_url
    )  # fmt: skip
    assert refused.returncode == 2  # a comparison that means nothing is no verdict: neither 0 nor 1
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith(f"evallens: error: run {scored} and run {rescored} cannot be compared")


def test_gate_cli_exit_codes_and_reports(
    database_url: str, sessions: sessionmaker[Session], runs: dict[str, uuid.UUID], tmp_path: Path
) -> None:
    passing = run_cli(
        "gate",
        "--baseline",
        "main",
        "--candidate",
        str(runs["same"]),
        "--report-dir",
        str(tmp_path / "pass"),
        database_url=database_url,
    )
    assert passing.returncode == 0, passing.stderr
    assert "verdict: pass" in passing.stdout
    failing = run_cli(
        "gate",
        "--baseline",
        "main",
        "--candidate",
        str(runs["cached"]),
        "--report-dir",
        str(tmp_path / "fail"),
        database_url=database_url,
    )
    assert failing.returncode == 1, failing.stderr
    assert "REGRESSION" in failing.stdout and "semantic-cache hits rose" in failing.stdout

    body = GateReportBody.model_validate_json((tmp_path / "fail" / "gate.json").read_text())
    assert body.verdict == "regression" and body.candidate_run_id == str(runs["cached"])
    markdown = (tmp_path / "fail" / "gate.md").read_text()
    assert markdown.startswith("## :x: evallens gate: regression")
    assert "| returns_refunds | accuracy | 1.000 | 0.533 | -46.7 |" in markdown and "too loose" in markdown
    junit = ET.parse(tmp_path / "fail" / "gate.xml").getroot()
    assert junit.get("failures") == "2"
    failed = {(s.get("name"), c.get("name")) for s in junit for c in s if c.find("failure") is not None}
    assert failed == {("overall", "accuracy"), ("returns_refunds", "accuracy")}
    passed_junit = ET.parse(tmp_path / "pass" / "gate.xml").getroot()
    assert passed_junit.get("failures") == "0"

    with sessions() as session:
        verdicts = {(str(r.candidate_run_id), r.verdict) for r in session.scalars(select(GateReport))}
        stored = session.scalars(select(GateReport).where(GateReport.verdict == "regression")).one()
    assert verdicts == {(str(runs["same"]), "pass"), (str(runs["cached"]), "regression")}
    assert GateReportBody.model_validate(stored.report).hints == body.hints

    compare = run_cli("eval", "compare", "main", str(runs["retrieval_off"]), database_url=database_url)
    assert compare.returncode == 0 and "retrieval recall fell" in compare.stdout
    missing = run_cli(
        "gate", "--baseline", "nope", "--candidate", str(runs["same"]), database_url=database_url
    )
    assert missing.returncode == 2 and missing.stderr.strip() == "evallens: error: no run or tag 'nope'"


def test_cases_the_judge_left_unscored_are_counted_and_left_out_of_the_tests(
    sessions: sessionmaker[Session], runs: dict[str, uuid.UUID]
) -> None:
    with sessions.begin() as session:
        body = compare_runs(session, "main", str(runs["judge_gaps"]), ComparisonOptions())
    assert body.num_unscored == {"accuracy": 4}
    cells = {(c.scenario, c.metric): c for c in body.comparisons}
    assert cells[("overall", "accuracy")].num_pairs == 2 * NUM_CASES - 4
    assert cells[("shipping_logistics", "accuracy")].num_pairs == NUM_CASES - 4
    assert cells[("shipping_logistics", "recall")].num_pairs == NUM_CASES  # only the judged metric
    assert body.verdict == "pass"
    assert "excluded from the paired tests: accuracy 4" in render_markdown(body)


def test_cases_edited_between_set_versions_are_named_and_left_out_of_the_comparison(
    sessions: sessionmaker[Session],
) -> None:
    """The set's references changed for 14 cases between the runs: the same answers now score wrong
    on them, which says nothing about the target, so those cases are not paired."""
    with sessions.begin() as session:
        create_span_partitions(session.connection(), [T0.date()])
        before = _add_run(session, _make_set(session), T0)
        after = _add_run(session, _make_set(session, edited=14, added=3), T0 + timedelta(hours=1), wrong=14)
        body = compare_runs(session, str(before), str(after), ComparisonOptions())
    edited = [f"re-{i:03d}" for i in range(14)]
    assert body.edited_cases == edited
    assert body.verdict == "pass"
    cells = {(c.scenario, c.metric): c for c in body.comparisons}
    assert cells[("overall", "accuracy")].num_pairs == 2 * NUM_CASES - 14
    assert cells[("returns_refunds", "recall")].num_pairs == NUM_CASES - 14
    assert not {flip.case_key for flip in body.flipped_cases} & set(edited)
    markdown = render_markdown(body)
    assert "14 case(s) edited between the runs' set versions" in markdown and "re-004 and 9 more" in markdown
    added = [f"{prefix}-{i:03d}" for prefix in ("re", "sh") for i in range(NUM_CASES, NUM_CASES + 3)]
    assert (body.candidate_only_cases, body.baseline_only_cases) == (added, [])  # three more per scenario
    assert (
        "**Added:** 6 case(s) only in the candidate's set version (added since), not compared: "
        "re-030, re-031, re-032, sh-030, sh-031 and 1 more."
    ) in markdown
    with sessions.begin() as session:
        backwards = compare_runs(session, str(after), str(before), ComparisonOptions())
    assert (backwards.candidate_only_cases, backwards.baseline_only_cases) == ([], added)
    printed = io.StringIO()
    print_report(backwards, Console(file=printed, width=400))
    assert "removed: 6 case(s) only in the baseline's set version (removed since)" in printed.getvalue()


def _shipping_set(session: Session, reference_suffix: str = "") -> int:
    """A set of shipping_logistics cases alone (``_add_run(unscored=...)`` leaves those unjudged)."""
    cases = [
        CaseSpec(
            id=f"sh-{i:03d}",
            scenario="shipping_logistics",
            question=f"question shipping {i}?",
            reference_answer=f"answer {i}{reference_suffix}",
        )
        for i in range(NUM_CASES)
    ]
    return sync_set(session, EvalSetSpec(name="synthetic", source_path="memory", cases=cases)).eval_set_id


def test_a_gate_that_paired_no_case_is_no_pass(database_url: str, sessions: sessionmaker[Session]) -> None:
    """Every case edited between the set versions, or a metric left unscored on every case: the gate
    tested nothing there, so it gives no verdict (exit 2) rather than a pass."""
    with sessions.begin() as session:
        create_span_partitions(session.connection(), [T0.date()])
        before = _add_run(session, _shipping_set(session), T0)
        unjudged = _add_run(session, _shipping_set(session), T0 + timedelta(hours=1), unscored=NUM_CASES)
        edited = _add_run(session, _shipping_set(session, " (revised)"), T0 + timedelta(hours=2))
    with sessions() as session, pytest.raises(NothingCompared) as error:
        compare_runs(session, str(before), str(unjudged), ComparisonOptions())
    assert f"share no case scored on accuracy ({NUM_CASES} unscored on accuracy)" in str(error.value)
    refused = run_cli(
        "gate", "--baseline", str(before), "--candidate", str(edited), database_url=database_url
    )  # fmt: skip
    assert refused.returncode == 2, refused.stdout
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith(f"evallens: error: runs {before} and {edited} share no case scored on any metric")
    assert f"({NUM_CASES} edited between the runs' set versions)" in line
    with sessions() as session:
        assert session.scalars(select(GateReport)).first() is None  # no verdict stored either


def test_a_run_gated_against_itself_is_no_pass(
    database_url: str, sessions: sessionmaker[Session], runs: dict[str, uuid.UUID]
) -> None:
    """`eval run --tag main`, then `gate --baseline main --candidate RUN`: the same run twice."""
    baseline = str(runs["baseline"])
    refused = run_cli("gate", "--baseline", "main", "--candidate", baseline[:8], database_url=database_url)
    assert refused.returncode == 2, refused.stdout
    assert refused.stderr.strip().splitlines() == [
        f"evallens: error: 'main' and '{baseline[:8]}' are the same run ({baseline}): a run compared with "
        "itself tests nothing, so no verdict"
    ]
    with sessions() as session:
        assert session.scalars(select(GateReport)).first() is None


def test_a_report_dir_that_cannot_be_made_stops_before_the_work(
    database_url: str, sessions: sessionmaker[Session], runs: dict[str, uuid.UUID], tmp_path: Path
) -> None:
    """A report folder under a file: one line and exit 2, before a gate stores any verdict."""
    (tmp_path / "a-file").write_text("")
    folder = tmp_path / "a-file" / "reports"
    for command in (
        ("eval", "compare", "main", str(runs["cached"]), "--report-dir", str(folder)),
        ("gate", "--baseline", "main", "--candidate", str(runs["cached"]), "--report-dir", str(folder)),
    ):
        refused = run_cli(*command, database_url=database_url)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.strip().splitlines() == [
            f"evallens: error: cannot write reports into {folder}: Not a directory"
        ]
    with sessions() as session:
        assert session.scalars(select(GateReport)).first() is None


def test_a_report_that_cannot_be_written_stores_no_verdict(
    database_url: str, sessions: sessionmaker[Session], runs: dict[str, uuid.UUID], tmp_path: Path
) -> None:
    """The folder passed the check before the work and a report still failed to write (a folder holds
    its name here; a full disk or a folder gone read-only alike): the verdict was stored all the same,
    exit 2 beside a verdict whose reports never came. Now neither is, nor the reports written before the
    one that failed, which stated a verdict never stored."""
    folder = tmp_path / "reports"
    (folder / "gate.json").mkdir(parents=True)
    refused = run_cli(
        "gate", "--baseline", "main", "--candidate", str(runs["cached"]), "--report-dir", str(folder),
        database_url=database_url,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stdout
    assert refused.stderr.strip().splitlines() == [
        f"evallens: error: cannot write reports into {folder / 'gate.json'}: Is a directory"
    ]
    assert [path.name for path in folder.iterdir()] == ["gate.json"]  # gate.md and gate.xml taken back
    with sessions() as session:
        assert session.scalars(select(GateReport)).first() is None


REFUSE_AT_COMMIT = """
CREATE FUNCTION refuse_verdict() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'verdicts are refused at commit'; END $$;
CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON gate_reports
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_verdict();
"""


def test_a_verdict_whose_commit_fails_leaves_no_report(
    database_url: str, sessions: sessionmaker[Session], runs: dict[str, uuid.UUID], tmp_path: Path
) -> None:
    """The reports are written before the verdict commits; a deferred constraint fails the commit itself.
    Before, gate.md, gate.xml and gate.json stated a verdict that was never stored, beside exit 2."""
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute(REFUSE_AT_COMMIT)
    kept = tmp_path / "kept"  # a folder that was there, holding a file of its own
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    made = tmp_path / "out" / "reports"  # folders the gate makes
    for folder in (kept, made):
        refused = run_cli(
            "gate", "--baseline", "main", "--candidate", str(runs["cached"]), "--report-dir", str(folder),
            database_url=database_url,
        )  # fmt: skip
        assert refused.returncode == 2, refused.stdout
        [line] = refused.stderr.strip().splitlines()
        assert line.startswith("evallens: error: ") and "verdicts are refused at commit" in line
    assert [path.name for path in kept.iterdir()] == ["notes.txt"]
    assert not (tmp_path / "out").exists()
    with sessions() as session:
        assert session.scalars(select(GateReport)).first() is None


def test_a_command_stopped_before_its_report_leaves_no_report_dir(database_url: str, tmp_path: Path) -> None:
    """--report-dir was created before the runs were looked up: an unknown one left an empty folder."""
    folder = tmp_path / "out" / "reports"
    for command in (
        ("eval", "compare", "main", "no-such-run", "--report-dir", str(folder)),
        ("gate", "--baseline", "no-such-tag", "--candidate", "main", "--report-dir", str(folder)),
    ):
        refused = run_cli(*command, database_url=database_url)
        assert refused.returncode == 2, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert not (tmp_path / "out").exists()


def test_a_value_the_database_cannot_index_is_not_called_a_lost_database(
    database_url: str, runs: dict[str, uuid.UUID]
) -> None:
    """PostgreSQL refuses an index entry over its size limit with an OperationalError, as it reports a
    lost connection: the line says the database refused it, not that it went away."""
    tag = "".join(random.Random(1).choices(string.ascii_letters, k=10_000))  # incompressible
    refused = run_cli("eval", "tag", str(runs["same"]), tag, database_url=database_url)
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("evallens: error: the database refused it (SQLSTATE 54000): index row requires ")


def test_junit_holds_a_scenario_with_control_characters(
    sessions: sessionmaker[Session], runs: dict[str, uuid.UUID]
) -> None:
    """A scenario written "returns\\u001brefunds" in a JSONL set: XML cannot hold ESC even escaped, and
    a report CI cannot parse hides the verdict."""
    with sessions() as session:
        body = compare_runs(session, "main", str(runs["cached"]), ComparisonOptions())
    odd = [c.model_copy(update={"scenario": c.scenario.replace("_", "\x1b")}) for c in body.comparisons]
    junit = ET.fromstring(
        render_junit(body.model_copy(update={"comparisons": odd, "eval_set_name": "s\x0c"}))
    )
    assert junit.get("name") == "evallens gate s\ufffd"
    assert {suite.get("name") for suite in junit} == {
        "overall",
        "returns\ufffdrefunds",
        "shipping\ufffdlogistics",
    }
    failed = [case.get("classname") for suite in junit for case in suite if case.find("failure") is not None]
    assert "evallens.returns\ufffdrefunds" in failed
