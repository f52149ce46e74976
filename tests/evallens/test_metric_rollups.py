"""Metric rollups (migration 0007): samples stored in any order and grouping, and samples there before
the migration (its backfill), give the rollups that folding every sample at once gives."""

import json
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from evallens.db.migrate import upgrade
from evallens.db.models.metrics import ROLLUP_WIDTHS_S

START = datetime(2026, 11, 3, 22, 58, 41, tzinfo=UTC)
ORIGIN = datetime(2000, 1, 1, tzinfo=UTC)
SERIES = [
    ("vllm:kv_cache_usage_perc", {}, "http://a/metrics"),
    ("vllm:kv_cache_usage_perc", {}, "http://b/metrics"),
    ("evallens_cache_lookups_total", {"cache": "semantic", "result": "hit"}, "http://a/metrics"),
    ("evallens_cache_lookups_total", {"cache": "semantic", "result": "miss"}, "http://a/metrics"),
]
INSERT = (
    "INSERT INTO metric_samples (project, time, name, labels, value, target) VALUES (%s, %s, %s, %s, %s, %s)"
)


def random_samples(rng: random.Random, project: str) -> list[tuple[Any, ...]]:
    """Scrapes every 15 s over three hours across a day boundary, some series missing some scrapes."""
    rows = []
    for step in range(720):
        moment = START + timedelta(seconds=15 * step, milliseconds=rng.randint(0, 900))
        for name, labels, target in SERIES:
            if rng.random() < 0.9:
                rows.append((project, moment, name, json.dumps(labels), rng.uniform(-5, 100), target))
    return rows


def expected_rollups(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """What the rollups must hold, folded here in Python from every sample at once."""
    buckets: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for _, moment, name, labels, value, target in rows:
        for width_s in ROLLUP_WIDTHS_S:
            start = ORIGIN + timedelta(seconds=(moment - ORIGIN).total_seconds() // width_s * width_s)
            buckets[width_s, name, start, target, json.dumps(json.loads(labels), sort_keys=True)].append(
                value
            )
    return sorted((*key, len(values), round(sum(values), 6), max(values)) for key, values in buckets.items())


def stored_rollups(connection: psycopg.Connection[Any], project: str) -> list[tuple[Any, ...]]:
    rows = connection.execute(
        "SELECT width_s, name, bucket_start, target, labels, num_samples, value_sum, value_max"
        " FROM metric_rollups WHERE project = %s",
        (project,),
    ).fetchall()
    return sorted(
        (width, name, start, target, json.dumps(labels, sort_keys=True), num, round(total, 6), highest)
        for width, name, start, target, labels, num, total, highest in rows
    )


@pytest.mark.parametrize("seed", range(3))
def test_samples_in_any_order_and_grouping_roll_up_like_all_at_once(database_url: str, seed: int) -> None:
    rng = random.Random(seed)
    pieces = random_samples(rng, "pieces")
    with psycopg.connect(database_url, autocommit=True) as connection, connection.cursor() as cursor:
        shuffled = rng.sample(pieces, len(pieces))  # late samples: older buckets updated again
        cut = sorted(rng.sample(range(1, len(shuffled)), 4))
        for a, b in zip([0, *cut], [*cut, len(shuffled)], strict=True):
            cursor.executemany(INSERT, shuffled[a:b])
        whole = [("whole", *row[1:]) for row in pieces]
        cursor.executemany(INSERT, whole)
        assert stored_rollups(connection, "pieces") == expected_rollups(pieces)
        assert stored_rollups(connection, "whole") == expected_rollups(whole)
        assert {width for width, *_ in stored_rollups(connection, "pieces")} == set(ROLLUP_WIDTHS_S)


def test_upgrade_rolls_up_samples_stored_before_it(empty_database_url: str) -> None:
    upgrade(empty_database_url, "0006")
    rows = random_samples(random.Random(7), "acme")
    with psycopg.connect(empty_database_url, autocommit=True) as connection:
        connection.cursor().executemany(INSERT, rows)
    upgrade(empty_database_url)
    with psycopg.connect(empty_database_url) as connection:
        assert stored_rollups(connection, "acme") == expected_rollups(rows)
