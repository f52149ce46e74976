"""Trace summaries, daily rollups and filter values stay exactly what folding every span at once gives,
whatever order and grouping the spans arrive in, resends included (migration 0006's trigger)."""

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from evallens.db import create_db_engine
from evallens.db.partitions import create_span_partitions
from evallens.telemetry import attributes as attr

COLUMNS = (
    "trace_id, span_id, start_time, end_time, duration_ms, parent_span_id, name, kind, status_code,"
    " attributes, resource, events, project, model, input_tokens, output_tokens, cost_usd, tenant,"
    " user_id, feature, eval_run_id"
)
START = datetime(2026, 11, 20, 23, 59, 58, tzinfo=UTC)  # traces cross midnight: two days, two partitions


def random_attributes(rng: random.Random, root: bool) -> dict[str, Any]:
    choices: list[tuple[str, Any]] = [
        (attr.DEGRADED, True),
        (attr.TIMEOUT, True),
        (attr.GUARD_SCOPE_DECLINED, True),
        (attr.CACHE_SEMANTIC_HIT, True),
        (attr.RETRIEVAL_CHUNK_IDS, rng.choice(["", "[]", '["c1"]'])),
        (attr.retrieval_document_id(0), "doc-1"),
        (attr.FEEDBACK_SCORE, rng.choice([-1, 1, 0.5])),
        (attr.FEEDBACK_COMMENT, rng.choice(["wrong", "meh"])),
        (attr.FEEDBACK_TARGET_TRACE_ID, "f" * 32),
        (attr.GEN_AI_OUTPUT_MESSAGES, rng.choice(["Sorry, I cannot help", "Here you go"])),
        (attr.INPUT_VALUE, "where is my parcel?"),  # asked on any span, or on none (migration 0008)
    ]
    picked = dict(rng.sample(choices, rng.randint(0, 4)))
    if root and rng.random() < 0.6:
        picked[attr.GEN_AI_INPUT_MESSAGES] = "where is my order?"
    return picked


def random_spans(rng: random.Random, project: str) -> list[tuple[Any, ...]]:
    rows = []
    for trace in range(4):
        trace_id = f"{trace + 1:032x}"
        for number in range(rng.randint(1, 7)):
            start = START + timedelta(milliseconds=rng.randint(-3000, 3000))
            duration_ms = rng.uniform(1, 5000)
            tokens = rng.choice([None, rng.randint(1, 500)])
            rows.append(
                (
                    trace_id,
                    f"{trace:08x}{number:08x}",
                    start,
                    start + timedelta(milliseconds=duration_ms),
                    duration_ms,
                    None if number == 0 else f"{trace:08x}{0:08x}",
                    rng.choice(["POST /v1/chat/completions", "retrieval", "chat"]),
                    1,
                    rng.choice([0, 1, 1, 2]),
                    json.dumps(random_attributes(rng, number == 0)),
                    "{}",
                    "[]",
                    project,
                    rng.choice([None, "smollm2", "gpt-4o"]),
                    tokens,
                    tokens and tokens // 2,
                    rng.choice([None, rng.uniform(0, 0.01)]),
                    rng.choice([None, "acme", "globex"]),
                    rng.choice([None, "u1"]),
                    rng.choice([None, "chat"]),
                    rng.choice([None, None, None, "run-1"]),
                )
            )
    return rows


def insert(cursor: psycopg.Cursor[Any], rows: list[tuple[Any, ...]], resend: bool) -> None:
    placeholders = ", ".join(["%s"] * len(rows[0]))
    conflict = " ON CONFLICT DO NOTHING" if resend else ""
    cursor.executemany(f"INSERT INTO spans ({COLUMNS}) VALUES ({placeholders}){conflict}", rows)


def stored(cursor: psycopg.Cursor[Any], table: str, project: str) -> list[tuple[Any, ...]]:
    cursor.execute(f"SELECT * FROM {table} WHERE project = %s", (project,))
    names = [column.name for column in cursor.description or []]
    rows = [
        tuple(rounded(value) for name, value in zip(names, row, strict=True) if name != "project")
        for row in cursor.fetchall()
    ]
    return sorted(rows, key=repr)


def rounded(value: Any) -> Any:
    """Floats to 9 digits: a sum's last bits depend on the order it was added in."""
    return round(value, 9) if isinstance(value, float) else value


@pytest.mark.parametrize("seed", range(6))
def test_spans_in_any_order_and_grouping_fold_like_all_at_once(database_url: str, seed: int) -> None:
    rng = random.Random(seed)
    engine = create_db_engine(database_url)
    with engine.begin() as setup:
        create_span_partitions(setup, [START.date(), START.date() + timedelta(days=1)])
    engine.dispose()
    rows = random_spans(rng, "pieces")
    with psycopg.connect(database_url, autocommit=True) as connection, connection.cursor() as cursor:
        shuffled = rng.sample(rows, len(rows))
        cut = sorted(rng.sample(range(1, len(rows)), min(3, len(rows) - 1)))
        for piece in (shuffled[a:b] for a, b in zip([0, *cut], [*cut, len(rows)], strict=True)):
            insert(cursor, piece, resend=False)
            insert(cursor, rng.sample(piece, max(1, len(piece) // 2)), resend=True)  # a retry: all known
        insert(cursor, [(*row[:12], "whole", *row[13:]) for row in rows], resend=False)

        for table in ("trace_summaries", "span_rollups", "span_dimensions"):
            pieces, whole = stored(cursor, table, "pieces"), stored(cursor, table, "whole")
            assert pieces == whole, table
            assert pieces, table
        # production counts per hour and bucket (migration 0010): a bucket a trace left keeps a 0 row
        histograms = [
            [row for row in stored(cursor, "production_histograms", project) if row[-1]]
            for project in ("pieces", "whole")
        ]
        assert histograms[0] == histograms[1]
        cursor.execute("SELECT sum(num_spans) FROM trace_summaries WHERE project = 'pieces'")
        assert cursor.fetchone() == (len(rows),)
