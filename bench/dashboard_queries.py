"""Seed a scratch database with spans over 30 days and eval runs, then time every page at every window.

Run: ``python bench/dashboard_queries.py [--spans 1000000 10000000] [--runs 50 500]``. Each size is
seeded into its own embedded PostgreSQL in a temporary directory (nothing else is touched); the spans
go in through the same trigger as the collector's (batches of ``BATCH_SPANS``), so seeding pays what
ingest pays. It prints cold (uncached) time per page and window (24 h, 7 d, 30 d), the growth factor
from the 24 h to the 30 d window, and, for several sizes, from the first size to each other. The Cases
page is timed three ways: its very first view (``question_embeddings`` emptied: every question
embedded), a cold view (new process: no query cache, no embeddings in memory, those PostgreSQL stored),
and again in the same process after the query cache expired; then the dashboard's background pass that
embeds ahead the questions of every window (first pass and a steady one). With ``--keep DIR`` one
size is seeded into DIR once and kept; later runs with the same DIR migrate it and time the pages
against that data.
"""

import argparse
import itertools
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
from sqlalchemy.orm import Session

from dashboard import data
from dashboard._ui import WINDOWS_H
from evallens.cases.mining import Readers, embed_ahead
from evallens.db import create_db_engine
from evallens.db.migrate import upgrade
from evallens.db.server import embedded_url, ensure_database, start_embedded
from evallens.reports import InfraSummary, MetricEstimate, RunSummary
from evallens.settings import CasesSettings
from evallens.telemetry import attributes as attr
from evallens.telemetry import metrics
from evals import readers as readers_module
from evals.readers import mining_readers

DAYS = 30
BATCH_SPANS = 20_000  # spans per COPY statement, as the collector's writer batches them
WINDOWS = (("24 h", 24), ("7 d", 24 * 7), ("30 d", 24 * 30))
SPANS_PER_TRACE = 4
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
COPY_SPANS = (
    "COPY spans (trace_id, span_id, start_time, end_time, duration_ms, parent_span_id, name, kind,"
    " status_code, attributes, resource, events, model, input_tokens, output_tokens, cost_usd, tenant,"
    " feature, eval_run_id) FROM STDIN"
)


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


def seed(url: str, num_spans: int, num_runs: int) -> None:
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
        run_ids = [str(uuid.uuid4()) for _ in range(num_runs)]
        runs = []
        for index, run_id in enumerate(run_ids):
            started = now - timedelta(days=DAYS) + index * timedelta(days=DAYS) / num_runs
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
            "COPY eval_results (run_id, eval_set_id, case_id, response, passed, latency_ms, trace_id)"
            " FROM STDIN",
            (
                (
                    run_id,
                    set_id,
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
        spans = span_rows(num_spans // SPANS_PER_TRACE, now, run_ids, rng)
        while batch := list(itertools.islice(spans, BATCH_SPANS)):
            copy_rows(connection, COPY_SPANS, batch)
            connection.commit()
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


def timed(calls: list[Callable[[], Any]]) -> float:
    """Seconds the calls take with every query cache cleared first (a cold page view)."""
    st.cache_data.clear()
    started = time.perf_counter()
    for call in calls:
        call()
    return time.perf_counter() - started


def page_calls(url: str, readers: Readers, hours: int) -> dict[str, list[Callable[[], Any]]]:
    """What each page queries when opened with a window of ``hours``, as its module calls it."""
    project = "default"
    runs = data.runs.runs(url, project)
    candidate = str(runs["run_id"].iloc[0])
    baseline = data.runs.baseline(url, project, candidate) or str(runs["run_id"].iloc[1])
    some_trace = str(data.traffic.traces(url, project, 24, limit=1)["trace_id"].iloc[0])
    window = data.serving.metrics_window(url, project, hours)
    assert window is not None
    bucket_s = data.serving.bucket_width_s(hours, data.serving.POINTS_PER_CHART)  # as the page picks it

    def first_cases() -> None:
        with psycopg.connect(url) as connection:  # the very first view: no question embedded yet, ever
            connection.execute("TRUNCATE question_embeddings")
        cold_cases()

    def cold_cases() -> None:
        readers_module._VECTORS = readers_module._Vectors()  # a new process: only what PostgreSQL stored
        data.cases.candidates(url, project, hours, 200, readers)

    return {
        "overview": [
            lambda: data.status.data_present(url, project),
            lambda: data.runs.latest_gates(url, project),
            lambda: data.runs.runs(url, project),
            lambda: data.runs.run_documents(url, project, candidate),
            lambda: data.runs.baseline(url, project, candidate),
            lambda: data.runs.metric_trend(url, project, "acme-support"),
            lambda: data.traffic.cost_per_day(url, project, hours, "model", True),
            lambda: data.traffic.traffic_per_day(url, project, hours, True),
        ],
        "compare runs": [
            lambda: data.runs.runs(url, project),
            lambda: data.runs.baseline(url, project, candidate),
            lambda: data.runs.run_documents(url, project, baseline),
            lambda: data.runs.gate_report(url, project, baseline, candidate),
            lambda: data.runs.flips(url, project, baseline, candidate),
        ],
        "traces": [
            lambda: data.traffic.trace_filter_options(url, project, hours),
            lambda: data.traffic.traces(url, project, hours),
            lambda: data.traffic.trace_spans(url, project, some_trace),
        ],
        "traces, tenant filter": [
            lambda: data.traffic.trace_filter_options(url, project, hours),
            lambda: data.traffic.traces(url, project, hours, tenant="tenant-3"),
        ],
        "traces, errors only": [lambda: data.traffic.traces(url, project, hours, errors_only=True)],
        "serving metrics": [
            lambda: data.serving.metrics_window(url, project, hours),
            lambda: data.serving.gauge_series(url, project, *window, bucket_s),
            lambda: data.serving.counter_increases(url, project, *window, bucket_s),
            lambda: data.serving.run_windows(url, project, *window),
        ],
        "cases, first view": [
            first_cases,
            lambda: data.cases.eval_sets(url, project),
            lambda: data.cases.scenarios(url, project, "acme-support"),
        ],
        "cases": [  # a cold view once the questions are stored (by the first view, a mine, any process)
            cold_cases,
            lambda: data.cases.eval_sets(url, project),
            lambda: data.cases.scenarios(url, project, "acme-support"),
        ],
        "cases, again": [  # after the 30 s cache, same process: the embeddings are in its memory too
            partial(data.cases.candidates, url, project, hours, 200, readers)
        ],
    }


def measure(url: str, readers: Readers) -> dict[tuple[str, str], float]:
    """Cold seconds per (page, window); prints one row per page with the 24 h -> 30 d growth factor."""
    found: dict[tuple[str, str], float] = {}
    for window, hours in WINDOWS:
        for page, calls in page_calls(url, readers, hours).items():
            found[page, window] = timed(calls)
    print(f"{'page':<24}" + "".join(f"{window:>10}" for window, _ in WINDOWS) + f"{'30d/24h':>10}")
    for page in dict.fromkeys(page for page, _ in found):
        times = [found[page, window] for window, _ in WINDOWS]
        cells = "".join(f"{seconds * 1000:8.0f}ms" for seconds in times)
        print(f"{page:<24}{cells}{times[-1] / times[0]:9.1f}x")
    slowest = max(found.items(), key=lambda item: item[1])
    print(f"slowest: {slowest[0][0]} at {slowest[0][1]}: {slowest[1] * 1000:.0f} ms")
    embedding_ahead(url, readers)
    return found


def embedding_ahead(url: str, readers: Readers) -> None:
    """Time the dashboard's background pass over every window the Cases page offers: its first pass
    (nothing stored: what a first view would embed, for all windows at once) and a steady one (nothing
    new: what a running dashboard pays every ``EVALLENS_DASHBOARD_EMBED_AHEAD_S``)."""
    windows = [timedelta(hours=hours) for hours in WINDOWS_H.values()]
    engine = create_db_engine(url)
    try:
        for label, empty_first in (("first pass, nothing stored", True), ("steady pass, nothing new", False)):
            if empty_first:
                with psycopg.connect(url) as connection:
                    connection.execute("TRUNCATE question_embeddings")
            readers_module._VECTORS = readers_module._Vectors()  # only what PostgreSQL stored
            started = time.perf_counter()
            with Session(engine) as session, session.begin():
                embedded = embed_ahead(session, CasesSettings(), readers, project="default", windows=windows)
            took = time.perf_counter() - started
            print(
                f"embedding ahead ({len(windows)} windows), {label}: {took * 1000:,.0f} ms, {embedded} texts"
            )
    finally:
        engine.dispose()


def bench_size(
    num_spans: int, num_runs: int, readers: Readers, keep: Path | None = None
) -> dict[tuple[str, str], float]:
    """Seed ``num_spans`` spans and ``num_runs`` runs into a fresh embedded server and time every page;
    with ``keep``, in that directory, kept afterwards, and seeded only when it holds no data yet."""
    with tempfile.TemporaryDirectory(prefix="evallens-bench-") as scratch:
        pgdata = (keep or Path(scratch)) / "pgdata"
        seeded = (pgdata / "PG_VERSION").exists()
        server = start_embedded(pgdata)
        try:
            ensure_database(embedded_url(server, "postgres"), "bench")
            url = embedded_url(server, "bench")
            started = time.perf_counter()
            upgrade(url)  # on a kept directory, this runs (and times) the migrations written since
            if seeded:
                print(f"\n== reusing {pgdata} (migrated in {time.perf_counter() - started:.0f} s)")
            else:
                seed(url, num_spans, num_runs)
                print(
                    f"\n== {num_spans:,} spans over {DAYS} days, {num_runs} runs x {NUM_CASES} cases"
                    f" (seeded in {time.perf_counter() - started:.0f} s)"
                )
            if keep and not seeded:
                return {}  # seeding only: measure on the next run, against the same data
            return measure(url, readers)
        finally:
            server.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spans", type=int, nargs="+", default=[1_000_000], help="one or more sizes")
    parser.add_argument("--runs", type=int, nargs="+", default=[50], help="one or more numbers of runs")
    parser.add_argument(
        "--keep",
        type=Path,
        help="a directory for one size's server, kept afterwards: the first run seeds it (and times nothing),"
        " later runs migrate it and time the pages against the same data (delete it when done)",
    )
    arguments = parser.parse_args()
    if arguments.keep and len(arguments.spans) * len(arguments.runs) > 1:
        parser.error("--keep takes one size: one --spans and one --runs")
    logging.getLogger("streamlit").setLevel(logging.ERROR)
    readers = mining_readers()  # MiniLM loads once per dashboard process, before any page: so here
    readers.embed(["load the model before seeding, so that loading it evicts nothing the queries read"])
    results = {
        (spans, runs): bench_size(spans, runs, readers, arguments.keep)
        for spans in arguments.spans
        for runs in arguments.runs
    }
    if len(results) > 1 and all(results.values()):
        (first, base), *others = results.items()
        print(f"\ngrowth against {first[0]:,} spans, {first[1]} runs (same page and window):")
        for (spans, runs), found in others:
            factors = [found[key] / base[key] for key in base]
            print(f"  {spans:,} spans, {runs} runs: median {sorted(factors)[len(factors) // 2]:.1f}x,"
                  f" max {max(factors):.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
