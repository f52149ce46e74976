"""Seed a scratch database with 1,000,000 spans and 50 runs of 200 cases, then time each page's queries.

Run: ``python bench/dashboard_queries.py [--spans N]``. It starts its own embedded PostgreSQL in a
temporary directory (nothing else is touched) and prints cold (uncached) query time per page.
"""

import argparse
import json
import logging
import random
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
import streamlit as st

from dashboard import data
from evallens.cases.mining import Readers
from evallens.db.migrate import upgrade
from evallens.db.server import embedded_url, ensure_database, start_embedded
from evallens.reports import InfraSummary, MetricEstimate, RunSummary
from evallens.telemetry import attributes as attr
from evallens.telemetry import metrics
from evals import readers as readers_module
from evals.readers import mining_readers

DAYS = 7
SPANS_PER_TRACE = 4
NUM_RUNS = 50
NUM_CASES = 200
SCENARIOS = [
    "returns_refunds",
    "shipping_logistics",
    "products",
    "complaints_escalation",
    "out_of_scope",
    "harmful",
]
MODELS = ["smollm2-135m", "gpt-4o-mini", "llama-3.1-8b"]
TENANTS = [f"tenant-{index}" for index in range(20)]
FEATURES = ["support-chat", "search", "email-draft"]
SCRAPE_EVERY_S = 15


def copy_rows(connection: psycopg.Connection, statement: str, rows: Any) -> None:
    with connection.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)


def span_rows(num_traces: int, now: datetime, run_ids: list[str], rng: random.Random) -> Any:
    start_of_window = now - timedelta(days=DAYS)
    for number in range(num_traces):
        trace_id = f"{number:032x}"
        start = start_of_window + timedelta(seconds=rng.uniform(0, DAYS * 86400 - 60))
        latency_ms = rng.lognormvariate(6, 0.5)
        model, tenant, feature = rng.choice(MODELS), rng.choice(TENANTS), rng.choice(FEATURES)
        eval_run = rng.choice(run_ids) if rng.random() < 0.05 else None
        error = rng.random() < 0.01
        question = json.dumps([{"role": "user", "content": f"question {number % 5000}"}])
        root_attributes: dict[str, Any] = {attr.GEN_AI_INPUT_MESSAGES: question}
        if rng.random() < 0.01:
            root_attributes[attr.FEEDBACK_SCORE] = -1
        if rng.random() < 0.02:
            root_attributes[attr.DEGRADED] = True
        spans = [
            ("root", None, "POST /v1/chat/completions", 0.0, latency_ms, root_attributes, None, None, None),
            ("embed", "root", "embed", 1.0, 5.0, {}, None, None, None),
            (
                "retrieve",
                "root",
                "retrieve",
                6.0,
                20.0,
                {attr.retrieval_document_id(0): "returns-policy"},
                None,
                None,
                None,
            ),
            (
                "chat",
                "root",
                f"chat {model}",
                30.0,
                latency_ms - 35,
                {attr.GEN_AI_REQUEST_MODEL: model},
                model,
                rng.randint(50, 500),
                rng.uniform(0.0001, 0.002),
            ),
        ]
        for index, (
            name_id,
            parent,
            name,
            offset_ms,
            duration_ms,
            attributes,
            span_model,
            tokens,
            cost,
        ) in enumerate(spans):
            span_start = start + timedelta(milliseconds=offset_ms)
            yield (
                trace_id,
                f"{number:012x}{index:04x}",
                span_start,
                span_start + timedelta(milliseconds=duration_ms),
                duration_ms,
                f"{number:012x}0000" if parent else None,
                name,
                1,
                2 if error and name_id == "root" else 1,
                json.dumps(attributes),
                "{}",
                "[]",
                span_model,
                tokens,
                tokens // 4 if tokens else None,
                cost,
                tenant,
                feature,
                eval_run,
            )


def seed(url: str, num_spans: int) -> None:
    rng = random.Random(7)
    now = datetime.now(UTC)
    with psycopg.connect(url) as connection:
        for offset in range(-1, DAYS + 2):
            day = (now - timedelta(days=offset)).date()
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS spans_p{day:%Y%m%d} PARTITION OF spans FOR VALUES FROM "
                f"('{day} 00:00:00+00') TO ('{day + timedelta(days=1)} 00:00:00+00')"
            )
        set_id = connection.execute(
            "INSERT INTO eval_sets (name, version, content_hash) VALUES ('acme-support', 1, 'h') RETURNING id"
        ).fetchone()[0]  # type: ignore[index]
        case_ids = [
            connection.execute(
                "INSERT INTO eval_cases (eval_set_id, case_key, scenario, question, reference_answer,"
                " expected_behavior) VALUES (%s, %s, %s, %s, 'ref', 'answer') RETURNING id",
                (set_id, f"case-{index:03d}", SCENARIOS[index % len(SCENARIOS)], f"question {index}"),
            ).fetchone()[0]  # type: ignore[index]
            for index in range(NUM_CASES)
        ]
        run_ids = [str(uuid.uuid4()) for _ in range(NUM_RUNS)]
        runs = []
        for index, run_id in enumerate(run_ids):
            started = now - timedelta(days=DAYS) + timedelta(hours=3 * index)
            estimate = MetricEstimate(mean=rng.uniform(0.7, 0.95), ci_low=0.6, ci_high=0.97, n=NUM_CASES)
            summary = RunSummary(
                overall=dict.fromkeys(("accuracy", "recall", "irrelevance", "harmfulness"), estimate),
                scenarios={scenario: {"accuracy": estimate, "recall": estimate} for scenario in SCENARIOS},
                num_cases=NUM_CASES,
                num_errors=0,
            )
            infra = InfraSummary(
                window_start=started, window_end=started + timedelta(minutes=20), num_requests=200
            )
            runs.append(
                (
                    run_id,
                    set_id,
                    f"run-{index:02d}",
                    "http://127.0.0.1:8000",
                    "{}",
                    f"fp{index}",
                    "completed",
                    summary.model_dump_json(),
                    infra.model_dump_json(),
                    started,
                    started + timedelta(minutes=20),
                )
            )
        copy_rows(
            connection,
            "COPY eval_runs (id, eval_set_id, label, endpoint, config, config_fingerprint, status,"
            " summary, infra, started_at, finished_at) FROM STDIN",
            runs,
        )
        copy_rows(
            connection,
            "COPY eval_results (run_id, case_id, response, passed, latency_ms, trace_id) FROM STDIN",
            (
                (
                    run_id,
                    case_id,
                    "an answer",
                    json.dumps({"accuracy": rng.random() < 0.85, "recall": rng.random() < 0.9}),
                    rng.uniform(100, 2000),
                    None,
                )
                for run_id in run_ids
                for case_id in case_ids
            ),
        )
        connection.execute(
            "INSERT INTO eval_tags (eval_set_name, tag, run_id) VALUES ('acme-support', 'main', %s)",
            (run_ids[-2],),
        )
        copy_rows(
            connection,
            "COPY spans (trace_id, span_id, start_time, end_time, duration_ms, parent_span_id, name, kind,"
            " status_code, attributes, resource, events, model, input_tokens, output_tokens, cost_usd,"
            " tenant,"
            " feature, eval_run_id) FROM STDIN",
            span_rows(num_spans // SPANS_PER_TRACE, now, run_ids, rng),
        )
        copy_rows(
            connection, "COPY metric_samples (time, name, labels, value, target) FROM STDIN", metric_rows(now)
        )
        connection.execute("ANALYZE")


def metric_rows(now: datetime) -> Any:
    counters = dict.fromkeys(data.serving.COUNTERS, 0.0)
    start = now - timedelta(days=DAYS)
    for step in range(DAYS * 86400 // SCRAPE_EVERY_S):
        time_ = start + timedelta(seconds=step * SCRAPE_EVERY_S)
        for name in data.serving.GAUGES:
            yield (time_, name, "{}", random.random(), "http://127.0.0.1:8000/metrics")
        for name in counters:
            counters[name] += random.random() * 10
            labels = (
                '{"cache": "semantic", "result": "hit"}' if name.startswith(metrics.CACHE_LOOKUPS) else "{}"
            )
            yield (time_, name, labels, counters[name], "http://127.0.0.1:8000/metrics")


def timed(label: str, calls: list[Callable[[], Any]]) -> None:
    st.cache_data.clear()
    started = time.perf_counter()
    for call in calls:
        call()
    print(f"{label:<28} {(time.perf_counter() - started) * 1000:8.0f} ms")


def measure(url: str, readers: Readers) -> None:
    project = "default"
    runs = data.runs.runs(url, project)
    candidate = str(runs["run_id"].iloc[0])
    baseline = data.runs.baseline(url, project, candidate) or str(runs["run_id"].iloc[1])
    some_trace = str(data.traffic.traces(url, project, 24, limit=1)["trace_id"].iloc[0])
    window = data.serving.metrics_window(url, project, 6)
    assert window is not None
    week = data.serving.metrics_window(url, project, 24 * DAYS)
    assert week is not None
    timed(
        "overview (30 days)",
        [
            lambda: data.status.data_present(url, project),
            lambda: data.runs.latest_gates(url, project),
            lambda: data.runs.runs(url, project),
            lambda: data.runs.run_documents(url, project, candidate),
            lambda: data.runs.baseline(url, project, candidate),
            lambda: data.runs.metric_trend(url, project, "acme-support"),
            lambda: data.traffic.cost_per_day(url, project, 720, "model", True),
            lambda: data.traffic.traffic_per_day(url, project, 720, True),
        ],
    )
    timed(
        "compare runs",
        [
            lambda: data.runs.runs(url, project),
            lambda: data.runs.baseline(url, project, candidate),
            lambda: data.runs.run_documents(url, project, baseline),
            lambda: data.runs.gate_report(url, project, baseline, candidate),
            lambda: data.runs.flips(url, project, baseline, candidate),
        ],
    )
    timed(
        "traces (24 hours)",
        [
            lambda: data.traffic.trace_filter_options(url, project, 24),
            lambda: data.traffic.traces(url, project, 24),
            lambda: data.traffic.trace_spans(url, project, some_trace),
        ],
    )
    timed(
        "traces (7 days, tenant)",
        [
            lambda: data.traffic.trace_filter_options(url, project, 168),
            lambda: data.traffic.traces(url, project, 168, tenant="tenant-3"),
        ],
    )
    timed(
        "serving metrics (6 hours)",
        [
            lambda: data.serving.metrics_window(url, project, 6),
            lambda: data.serving.gauge_series(url, project, *window, 144),
            lambda: data.serving.counter_increases(url, project, *window, 144),
            lambda: data.serving.run_windows(url, project, *window),
        ],
    )
    timed(
        "serving metrics (7 days)",
        [
            lambda: data.serving.gauge_series(url, project, *week, 4032),
            lambda: data.serving.counter_increases(url, project, *week, 4032),
            lambda: data.serving.run_windows(url, project, *week),
        ],
    )
    for label, hours in (("24 hours", 24), ("7 days", 24 * DAYS)):
        readers_module._VECTORS = readers_module._Vectors()  # a cold first view: no question embedded yet
        timed(
            f"cases ({label})",
            [
                partial(data.cases.candidates, url, project, hours, 200, readers),
                lambda: data.cases.eval_sets(url, project),
                lambda: data.cases.scenarios(url, project, "acme-support"),
            ],
        )
        timed(
            f"cases ({label}, again)",  # after the 30 s cache: the questions' embeddings are remembered
            [partial(data.cases.candidates, url, project, hours, 200, readers)],
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spans", type=int, default=1_000_000)
    arguments = parser.parse_args()
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    readers = mining_readers()  # MiniLM loads once per dashboard process, before any page: so here
    readers.embed(["load the model before seeding, so that loading it evicts nothing the queries read"])
    with tempfile.TemporaryDirectory(prefix="evallens-bench-") as scratch:
        server = start_embedded(Path(scratch) / "pgdata")
        try:
            ensure_database(embedded_url(server, "postgres"), "bench")
            url = embedded_url(server, "bench")
            upgrade(url)
            started = time.perf_counter()
            seed(url, arguments.spans)
            print(
                f"seeded {arguments.spans:,} spans, {NUM_RUNS} runs x {NUM_CASES} cases "
                f"in {time.perf_counter() - started:.0f} s"
            )
            measure(url, readers)
        finally:
            server.cleanup()


if __name__ == "__main__":
    main()
