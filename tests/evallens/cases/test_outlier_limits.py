"""The outlier limits read from ``production_histograms`` (migration 0010) equal percentile_cont over every
production summary of the window, bit for bit: windows that start inside an hour, spans and question
events arriving in pieces and out of order, non-production traffic, retention."""

import json
import random
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
import pytest
from sqlalchemy import text

from evallens.cases.mining._query import LIMITS_SQL, PRODUCTION, PRODUCTION_TRACE, _limits
from evallens.db import create_db_engine
from evallens.db.partitions import create_span_partitions, drop_span_partitions_before
from evallens.telemetry import attributes as attr

NOW = datetime(2026, 11, 20, 12, 30, 17, tzinfo=UTC)
DAYS = 3
COLUMNS = (
    "trace_id, span_id, start_time, end_time, duration_ms, parent_span_id, name, kind, status_code,"
    " attributes, resource, events, project, cost_usd, eval_run_id"
)
EXACT_SQL = f"""
SELECT count(*) AS num_traces,
  percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS latency_p50,
  percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS latency_p95,
  percentile_cont(0.5) WITHIN GROUP (ORDER BY cost_usd) AS cost_p50,
  percentile_cont(0.95) WITHIN GROUP (ORDER BY cost_usd) AS cost_p95
FROM trace_summaries WHERE {PRODUCTION}
"""


def trace_spans(rng: random.Random, number: int) -> tuple[list[tuple[Any, ...]], bool]:
    """A trace's spans (root, chat) and whether its question comes as a content event instead."""
    trace_id = f"{number:032x}"
    start = NOW - timedelta(seconds=rng.uniform(-600, DAYS * 86400))
    latency_ms = rng.choice([rng.lognormvariate(6, 0.8), 0.0, 250.0, 250.0])  # ties and zero too
    kind = rng.choice(["chat"] * 6 + ["eval", "no question", "event question"])
    question = {attr.GEN_AI_INPUT_MESSAGES: "where is my order?"} if kind in ("chat", "eval") else {}
    eval_run = "run-1" if kind == "eval" else None
    rows: list[tuple[Any, ...]] = [
        (trace_id, f"{number:012x}0000", start, start + timedelta(milliseconds=latency_ms), latency_ms,
         None, "POST /v1/chat/completions", 1, 1, json.dumps(question), "{}", "[]", "limits", None, None),
    ]  # fmt: skip
    for index in range(rng.randint(0, 3)):  # chat spans: cost adds up, one may start before the root
        chat_start = start + timedelta(milliseconds=rng.uniform(-50, latency_ms))
        cost = rng.choice([None, 0.0, rng.uniform(0.0001, 0.002)])
        span_id, end = f"{number:012x}{index + 1:04x}", chat_start + timedelta(milliseconds=5)
        rows.append(
            (trace_id, span_id, chat_start, end, 5.0, f"{number:012x}0000", "chat", 1, 1, "{}", "{}", "[]",
             "limits", cost, eval_run)
        )  # fmt: skip
    return rows, kind == "event question"


def ingest(database_url: str, rng: random.Random) -> None:
    """Spans of 400 traces in shuffled pieces, then question events for some of them."""
    engine = create_db_engine(database_url)
    with engine.begin() as setup:
        create_span_partitions(setup, [NOW.date() - timedelta(days=day) for day in range(-1, DAYS + 2)])
    engine.dispose()
    rows, late_questions = [], []
    for number in range(400):
        spans, event = trace_spans(rng, number)
        rows.extend(spans)
        if event:
            late_questions.append(spans[0])
    shuffled = rng.sample(rows, len(rows))
    placeholders = ", ".join(["%s"] * len(rows[0]))
    with psycopg.connect(database_url, autocommit=True) as connection, connection.cursor() as cursor:
        for first in range(0, len(shuffled), 97):
            cursor.executemany(
                f"INSERT INTO spans ({COLUMNS}) VALUES ({placeholders})", shuffled[first : first + 97]
            )
        cursor.executemany(
            "INSERT INTO genai_content (project, trace_id, span_id, time, event_name, direction, messages,"
            " digest) VALUES ('limits', %s, %s, %s, 'gen_ai.user.message', 'input', %s, %s)",
            [
                (row[0], row[1], row[2], json.dumps([{"role": "user", "content": "hi"}]), f"d-{row[0]}")
                for row in late_questions
            ],
        )


def limits_both_ways(database_url: str, since: datetime) -> tuple[dict[str, Any], dict[str, Any]]:
    engine = create_db_engine(database_url)
    params = {"p": "limits", "since": since}
    with engine.connect() as connection:
        exact = dict(connection.execute(text(EXACT_SQL), params).mappings().one())
        from_histograms = _limits(connection.execute(text(LIMITS_SQL), params).mappings().all())
    engine.dispose()
    return from_histograms, exact


@pytest.mark.parametrize("seed", range(3))
def test_limits_from_histograms_equal_percentile_cont(database_url: str, seed: int) -> None:
    rng = random.Random(seed)
    ingest(database_url, rng)
    windows = [
        NOW - timedelta(hours=24),
        NOW - timedelta(days=7),  # before any trace
        NOW.replace(minute=0, second=0),  # on the hour
        NOW + timedelta(minutes=20),  # only traces that started "in the future"
        NOW + timedelta(days=1),  # none
        *(NOW - timedelta(seconds=rng.uniform(0, DAYS * 86400)) for _ in range(6)),
    ]
    for since in windows:
        from_histograms, exact = limits_both_ways(database_url, since)
        assert from_histograms == exact, since
    from_histograms, exact = limits_both_ways(database_url, NOW - timedelta(days=7))
    assert exact["num_traces"] > 200 and exact["cost_p95"] > 0  # the windows held something to check

    engine = create_db_engine(database_url)
    drop_span_partitions_before(engine, NOW.date() - timedelta(days=1))
    with engine.connect() as connection:
        left = connection.execute(
            text("SELECT min(hour) FROM production_histograms WHERE num_traces > 0")
        ).scalar_one()
    engine.dispose()
    assert left >= datetime.combine(NOW.date() - timedelta(days=1), datetime.min.time(), UTC)
    for since in (NOW - timedelta(days=7), NOW - timedelta(hours=30)):
        from_histograms, exact = limits_both_ways(database_url, since)
        assert from_histograms == exact, since


def test_histograms_agree_with_the_summaries_they_count(database_url: str) -> None:
    ingest(database_url, random.Random(9))
    counted = """
    SELECT measure, hour, bucket, sum(num_traces) FROM production_histograms WHERE project = 'limits'
    GROUP BY 1, 2, 3 HAVING sum(num_traces) <> 0 ORDER BY 1, 2, 3"""
    recounted = " UNION ALL ".join(
        f"SELECT '{measure}' AS measure, date_trunc('hour', start_time, 'UTC') AS hour,"
        f" evallens_log_bucket({measure}) AS bucket, count(*) AS num FROM trace_summaries"
        f" WHERE project = 'limits' AND {PRODUCTION_TRACE}"
        f" AND {measure} IS NOT NULL GROUP BY 1, 2, 3"
        for measure in ("latency_ms", "cost_usd")
    )
    with psycopg.connect(database_url) as connection:
        stored = connection.execute(counted).fetchall()
        assert stored == connection.execute(f"SELECT * FROM ({recounted}) r ORDER BY 1, 2, 3").fetchall()
        assert len(stored) > 100
        assert date(2026, 11, 17) <= min(hour for _, hour, _, _ in stored).date()


@pytest.mark.parametrize("num_traces", [1, 2, 41, 300])
def test_ranks_sharing_one_bucket(database_url: str, num_traces: int) -> None:
    """Every latency and cost within one bucket (about 5% wide): the median's and the p95's ranks are read
    from one scan of that bucket, each still at its own position."""
    rng = random.Random(num_traces)
    engine = create_db_engine(database_url)
    with engine.begin() as setup:
        create_span_partitions(setup, [NOW.date() - timedelta(days=day) for day in range(-1, 3)])
    engine.dispose()
    question = json.dumps({attr.GEN_AI_INPUT_MESSAGES: "where is my order?"})
    rows = []
    for number in range(num_traces):
        start = NOW - timedelta(seconds=rng.uniform(0, 86400))
        latency_ms = rng.choice([250.0, 251.5, rng.uniform(250, 255)])  # floor(20 ln x) is 110 for all
        cost = rng.choice([0.00101, rng.uniform(0.00101, 0.00105)])
        rows.append(
            (f"{number:032x}", f"{number:012x}0000", start, start + timedelta(milliseconds=latency_ms),
             latency_ms, None, "POST /v1/chat/completions", 1, 1, question, "{}", "[]", "limits", cost, None)
        )  # fmt: skip
    with psycopg.connect(database_url, autocommit=True) as connection, connection.cursor() as cursor:
        placeholders = ", ".join(["%s"] * len(rows[0]))
        cursor.executemany(f"INSERT INTO spans ({COLUMNS}) VALUES ({placeholders})", rows)
        buckets = cursor.execute(
            "SELECT count(DISTINCT evallens_log_bucket(latency_ms)),"
            " count(DISTINCT evallens_log_bucket(cost_usd)) FROM trace_summaries WHERE project = 'limits'"
        ).fetchone()
    assert buckets == (1, 1)
    for since in (NOW - timedelta(days=2), NOW - timedelta(hours=rng.uniform(1, 23))):
        from_histograms, exact = limits_both_ways(database_url, since)
        assert from_histograms == exact, since
    assert limits_both_ways(database_url, NOW - timedelta(days=2))[1]["num_traces"] == num_traces
