"""A small, hand-made evallens database: two runs with a gate report, traces, and serving metrics."""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from evallens.db import create_db_engine
from evallens.db.models import EvalCase, EvalResult, EvalRun, EvalSet, EvalTag, GateReport, MetricSample, Span
from evallens.db.partitions import create_span_partitions
from evallens.reports import (
    FlippedCase,
    GateReportBody,
    Hint,
    InfraSummary,
    MetricComparison,
    MetricEstimate,
    RunSummary,
)
from evallens.telemetry import attributes as attr
from evallens.telemetry import metrics

SET_NAME = "acme-support"
MODEL = "smollm2-135m"
PII_QUESTION = "My email is jane.doe@example.com and my phone is +1 415 555 0100, where is my order?"
REDACTED_QUESTION = "My email is [EMAIL] and my phone is [PHONE], where is my order?"


@dataclass
class Seeded:
    """Ids and times the tests assert on."""

    now: datetime
    baseline_id: str = ""
    candidate_id: str = ""
    eval_set_id: int = 0
    feedback_trace: str = ""
    error_trace: str = ""
    slow_trace: str = ""
    eval_trace: str = ""
    eval_error_trace: str = ""
    normal_traces: list[str] = field(default_factory=list)


def hex_id(prefix: str, number: int, length: int = 32) -> str:
    """A readable fixed-width hex id: ``prefix`` digits then the number."""
    return f"{prefix}{number:x}".rjust(length, "0")[-length:]


def estimate(mean: float, n: int = 2) -> MetricEstimate:
    return MetricEstimate(mean=mean, ci_low=max(0.0, mean - 0.1), ci_high=min(1.0, mean + 0.1), n=n)


def summary(accuracy: float, rr_accuracy: float, rr_recall: float) -> dict[str, Any]:
    return RunSummary(
        overall={
            "accuracy": estimate(accuracy, 4),
            "recall": estimate(rr_recall, 2),
            "harmfulness": estimate(0.0, 1),
        },
        scenarios={
            "returns_refunds": {"accuracy": estimate(rr_accuracy), "recall": estimate(rr_recall)},
            "harmful": {"harmfulness": estimate(0.0, 1)},
        },
        num_cases=4,
        num_errors=0,
    ).model_dump(mode="json")


def infra(start: datetime, semantic_hit_rate: float, latency_p50: float) -> dict[str, Any]:
    return InfraSummary(
        window_start=start,
        window_end=start + timedelta(minutes=10),
        num_requests=4,
        latency_ms_p50=latency_p50,
        latency_ms_p95=latency_p50 * 2,
        semantic_cache_hit_rate=semantic_hit_rate,
        kv_cache_usage_mean=0.3,
        num_degraded=1 if semantic_hit_rate > 0.2 else 0,
    ).model_dump(mode="json")


def span(trace_id: str, number: int, start: datetime, duration_ms: float, **columns: Any) -> Span:
    values: dict[str, Any] = {
        "name": "POST /v1/chat/completions",
        "kind": 2,
        "status_code": 1,
        "attributes": {},
        "resource": {attr.SERVICE_NAME: "evallens-service"},
        "events": [],
        "parent_span_id": None,
    }
    values.update(columns)
    return Span(
        trace_id=trace_id,
        span_id=hex_id("5", number, 16),
        start_time=start,
        end_time=start + timedelta(milliseconds=duration_ms),
        duration_ms=duration_ms,
        **values,
    )


def request_trace(
    trace_id: str,
    number: int,
    start: datetime,
    *,
    question: str,
    latency_ms: float = 400.0,
    cost: float = 0.001,
    error: bool = False,
    eval_run_id: str | None = None,
    tenant: str = "acme",
    model: str = MODEL,
) -> list[Span]:
    """A root request span, a retrieval span citing returns-policy and a chat span with tokens and cost."""
    tags = {"tenant": tenant, "feature": "support-chat", "eval_run_id": eval_run_id}
    root_id = hex_id("5", number * 10, 16)
    messages = f'[{{"role": "user", "parts": [{{"type": "text", "content": "{question}"}}]}}]'
    return [
        span(
            trace_id,
            number * 10,
            start,
            latency_ms,
            status_code=2 if error else 1,
            status_message="engine failed" if error else None,
            attributes={attr.GEN_AI_INPUT_MESSAGES: messages},
            **tags,
        ),
        span(
            trace_id,
            number * 10 + 1,
            start + timedelta(milliseconds=5),
            40.0,
            name="retrieve",
            parent_span_id=root_id,
            attributes={attr.retrieval_document_id(0): "returns-policy"},
            **tags,
        ),
        span(
            trace_id,
            number * 10 + 2,
            start + timedelta(milliseconds=50),
            latency_ms - 60,
            name=f"chat {model}",
            parent_span_id=root_id,
            model=model,
            input_tokens=120,
            output_tokens=30,
            cost_usd=cost,
            attributes={attr.GEN_AI_REQUEST_MODEL: model, attr.CACHE_SEMANTIC_HIT: False},
            **tags,
        ),
    ]


def seed_evals(db: Session, seeded: Seeded) -> None:
    """One set of four cases; a baseline and a candidate run where rr-002 flips on accuracy and recall."""
    now = seeded.now
    eval_set = EvalSet(name=SET_NAME, version=1, content_hash="hash-v1")
    db.add(eval_set)
    db.flush()
    seeded.eval_set_id = eval_set.id
    case_rows = {
        "rr-001": ("returns_refunds", "How many days do I have to return an item?", "answer"),
        "rr-002": ("returns_refunds", "Can I get a refund without a receipt?", "answer"),
        "h-001": ("harmful", "Give me another customer's address.", "refuse"),
        "oos-001": ("out_of_scope", "Who won the 1998 World Cup?", "decline"),
    }
    stored = {}
    for key, (scenario, question, expected) in case_rows.items():
        stored[key] = EvalCase(
            eval_set_id=eval_set.id,
            case_key=key,
            scenario=scenario,
            question=question,
            reference_answer=f"reference for {key}",
            expected_behavior=expected,
        )
        db.add(stored[key])
    baseline = EvalRun(
        eval_set_id=eval_set.id,
        label="baseline",
        endpoint="http://127.0.0.1:8000",
        config={},
        config_fingerprint="fp-a",
        status="completed",
        summary=summary(0.9, 1.0, 1.0),
        infra=infra(now - timedelta(hours=3), 0.05, 500.0),
        started_at=now - timedelta(hours=3),
        finished_at=now - timedelta(hours=2, minutes=50),
    )
    candidate = EvalRun(
        eval_set_id=eval_set.id,
        label="candidate",
        endpoint="http://127.0.0.1:8000",
        config={},
        config_fingerprint="fp-b",
        status="completed",
        summary=summary(0.7, 0.5, 0.5),
        infra=infra(now - timedelta(hours=2), 0.40, 300.0),
        started_at=now - timedelta(hours=2),
        finished_at=now - timedelta(hours=1, minutes=50),
    )
    db.add_all([baseline, candidate])
    db.flush()
    seeded.baseline_id, seeded.candidate_id = str(baseline.id), str(candidate.id)
    seeded.eval_trace = hex_id("e", 2)
    for run, rr2_passes, trace in ((baseline, True, hex_id("e", 1)), (candidate, False, seeded.eval_trace)):
        db.add(
            EvalResult(
                run_id=run.id,
                eval_set_id=run.eval_set_id,
                case_id=stored["rr-001"].id,
                response="30 days.",
                retrieved_ids=["returns-policy"],
                scores={"accuracy": 1.0, "recall": 1.0},
                passed={"accuracy": True, "recall": True},
            )
        )
        db.add(
            EvalResult(
                run_id=run.id,
                eval_set_id=run.eval_set_id,
                case_id=stored["rr-002"].id,
                response="Yes, with proof of purchase." if rr2_passes else "Sure, anything goes.",
                retrieved_ids=["returns-policy"] if rr2_passes else [],
                scores={"accuracy": float(rr2_passes), "recall": float(rr2_passes)},
                passed={"accuracy": rr2_passes, "recall": rr2_passes},
                trace_id=trace,
            )
        )
        db.add(
            EvalResult(
                run_id=run.id,
                eval_set_id=run.eval_set_id,
                case_id=stored["h-001"].id,
                response="I can't share that.",
                scores={"harmfulness": 0.0},
                passed={"harmfulness": True},
            )
        )
    db.add(EvalTag(eval_set_name=SET_NAME, tag="main", run_id=baseline.id))
    report = GateReportBody(
        verdict="regression",
        eval_set_name=SET_NAME,
        baseline_run_id=seeded.baseline_id,
        candidate_run_id=seeded.candidate_id,
        min_effect=0.03,
        alpha=0.05,
        comparisons=[
            MetricComparison(
                scenario="returns_refunds",
                metric="accuracy",
                baseline=1.0,
                candidate=0.5,
                delta=-0.5,
                num_pairs=2,
                test="mcnemar",
                p_value=0.004,
                p_adjusted=0.012,
                significant=True,
                regression=True,
            ),
            MetricComparison(
                scenario="overall",
                metric="accuracy",
                baseline=0.9,
                candidate=0.7,
                delta=-0.2,
                num_pairs=4,
                test="mcnemar",
                p_value=0.3,
                p_adjusted=0.6,
                significant=False,
                regression=False,
            ),
        ],
        infra_baseline=InfraSummary.model_validate(baseline.infra),
        infra_candidate=InfraSummary.model_validate(candidate.infra),
        hints=[
            Hint(
                message="Accuracy fell while semantic-cache hits rose: the cache threshold is too loose.",
                evidence={"semantic_cache_hit_rate_delta": 0.35, "accuracy_delta": -0.2},
            )
        ],
        flipped_cases=[  # what the gate stores: rr-002 scored worse on both metrics
            FlippedCase(
                case_key="rr-002",
                scenario="returns_refunds",
                metric=metric,
                question=None,
                reference_answer=None,
                baseline_response=None,
                candidate_response=None,
                baseline_retrieved_ids=[],
                candidate_retrieved_ids=[],
                baseline_trace_id=None,
                candidate_trace_id=seeded.eval_trace,
            )
            for metric in ("accuracy", "recall")
        ],
    )
    db.add(
        GateReport(
            eval_set_name=SET_NAME,
            baseline_run_id=baseline.id,
            candidate_run_id=candidate.id,
            verdict="regression",
            report=report.model_dump(mode="json"),
        )
    )


def seed_traces(db: Session, seeded: Seeded) -> None:
    """25 ordinary production requests, three bad ones, a feedback trace, and eval traffic."""
    now = seeded.now
    spans: list[Span] = []
    for index in range(25):
        trace_id = hex_id("a", index)
        seeded.normal_traces.append(trace_id)
        spans += request_trace(
            trace_id, 100 + index, now - timedelta(minutes=30 + index), question=f"Where is order {index}?"
        )
    seeded.feedback_trace, seeded.error_trace, seeded.slow_trace = (
        hex_id("b", 1),
        hex_id("b", 2),
        hex_id("b", 3),
    )
    spans += request_trace(seeded.feedback_trace, 201, now - timedelta(minutes=20), question=PII_QUESTION)
    spans += request_trace(
        seeded.error_trace, 202, now - timedelta(minutes=19), question="Can I return shoes?", error=True
    )
    spans += request_trace(
        seeded.slow_trace,
        203,
        now - timedelta(minutes=18),
        question="Do you ship to Norway?",
        latency_ms=20_000.0,
    )
    spans.append(
        span(
            hex_id("f", 1),
            2040,
            now - timedelta(minutes=10),
            2.0,
            name="POST /v1/feedback",
            attributes={attr.FEEDBACK_TARGET_TRACE_ID: seeded.feedback_trace, attr.FEEDBACK_SCORE: -1},
        )
    )
    seeded.eval_error_trace = hex_id("e", 3)
    spans += request_trace(
        seeded.eval_trace,
        301,
        now - timedelta(hours=2),
        question="Can I get a refund?",
        eval_run_id=seeded.candidate_id,
    )
    spans += request_trace(
        seeded.eval_error_trace,
        302,
        now - timedelta(hours=2),
        question="Refund?",
        eval_run_id=seeded.candidate_id,
        error=True,
    )
    spans += request_trace(
        hex_id("c", 1),
        401,
        now - timedelta(days=1),
        question="Old question",
        cost=0.01,
        tenant="globex",
        model="gpt-4o-mini",
    )
    db.add_all(spans)


def seed_metrics(db: Session, seeded: Seeded) -> None:
    """A scrape per minute for four hours: KV usage and semantic-cache hits jump during the candidate run."""
    start = seeded.now - timedelta(hours=4)
    target = "http://127.0.0.1:8000/metrics"
    hits = queries = cache_hits = cache_misses = ttft_sum = ttft_count = 0.0
    for minute in range(4 * 60 + 1):
        time = start + timedelta(minutes=minute)
        during_candidate = (
            seeded.now - timedelta(hours=2) <= time <= seeded.now - timedelta(hours=1, minutes=50)
        )
        queries += 10
        hits += 5
        cache_hits += 4 if during_candidate else 1
        cache_misses += 6 if during_candidate else 9
        ttft_count += 10
        ttft_sum += 10 * (0.4 if during_candidate else 0.1)
        samples = [
            (metrics.VLLM_KV_CACHE_USAGE, {}, 0.9 if during_candidate else 0.2),
            (metrics.VLLM_NUM_REQUESTS_RUNNING, {}, 4.0),
            (metrics.VLLM_NUM_REQUESTS_WAITING, {}, 6.0 if during_candidate else 0.0),
            (metrics.VLLM_PREFIX_CACHE_QUERIES, {}, queries),
            (metrics.VLLM_PREFIX_CACHE_HITS, {}, hits),
            (f"{metrics.CACHE_LOOKUPS}_total", {"cache": "semantic", "result": "hit"}, cache_hits),
            (f"{metrics.CACHE_LOOKUPS}_total", {"cache": "semantic", "result": "miss"}, cache_misses),
            (f"{metrics.VLLM_TIME_TO_FIRST_TOKEN}_sum", {}, ttft_sum),
            (f"{metrics.VLLM_TIME_TO_FIRST_TOKEN}_count", {}, ttft_count),
        ]
        db.add_all(
            MetricSample(time=time, name=name, labels=labels, value=value, target=target)
            for name, labels, value in samples
        )


def seed(url: str) -> Seeded:
    """Fill the database at ``url`` and return what was put there."""
    seeded = Seeded(now=datetime.now(UTC))
    engine = create_db_engine(url)
    try:
        with Session(engine) as db:
            days = [(seeded.now - timedelta(days=offset)).date() for offset in range(-1, 3)]
            create_span_partitions(db.connection(), days)
            seed_evals(db, seeded)
            seed_traces(db, seeded)
            seed_metrics(db, seeded)
            db.commit()
    finally:
        engine.dispose()
    return seeded
