"""Metric rollups (migrations 0007 and 0013): samples stored in any order and grouping, and samples there
before the migrations (their backfills), give the rollups that folding every sample at once gives; a
counter's growth inside a bucket, resets counted from zero, wherever the samples are stored in time
order."""

import itertools
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


def step(before: float, after: float) -> float:
    return after if after < before else after - before  # a fall is a reset, counted from zero


def expected_rollups(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """What the rollups must hold, folded here in Python from every sample at once: count, sum, maximum,
    first and last sample, and the growth from each sample to the next in time."""
    buckets: dict[tuple[Any, ...], list[tuple[datetime, float]]] = defaultdict(list)
    for _, moment, name, labels, value, target in rows:
        for width_s in ROLLUP_WIDTHS_S:
            start = ORIGIN + timedelta(seconds=(moment - ORIGIN).total_seconds() // width_s * width_s)
            labelled = json.dumps(json.loads(labels), sort_keys=True)
            buckets[width_s, name, start, target, labelled].append((moment, value))
    found = []
    for key, samples in buckets.items():
        samples.sort()
        values = [value for _, value in samples]
        growth = sum(step(a, b) for a, b in itertools.pairwise(values))
        first, last = samples[0], samples[-1]
        found.append((*key, len(values), round(sum(values), 6), max(values), *first, *last, round(growth, 6)))
    return sorted(found)


def stored_rollups(connection: psycopg.Connection[Any], project: str) -> list[tuple[Any, ...]]:
    rows = connection.execute(
        "SELECT width_s, name, bucket_start, target, labels, num_samples, value_sum, value_max,"
        " first_time, first_value, last_time, last_value, value_increase"
        " FROM metric_rollups WHERE project = %s",
        (project,),
    ).fetchall()
    return sorted(
        (
            width,
            name,
            start,
            target,
            json.dumps(labels, sort_keys=True),
            num,
            round(total, 6),
            *rest[:5],
            round(rest[5], 6),
        )
        for width, name, start, target, labels, num, total, *rest in rows
    )


def without_growth(rollups: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [row[:-1] for row in rollups]


@pytest.mark.parametrize("seed", range(3))
def test_samples_in_any_order_and_grouping_roll_up_like_all_at_once(database_url: str, seed: int) -> None:
    """Counts, sums, maxima, first and last samples whatever the order; the growth too when each series'
    samples come in time order, in statements of any size (as the scraper stores them)."""
    rng = random.Random(seed)
    pieces = random_samples(rng, "pieces")
    with psycopg.connect(database_url, autocommit=True) as connection, connection.cursor() as cursor:
        shuffled = rng.sample(pieces, len(pieces))  # late samples: older buckets updated again
        for chunk in chunks(rng, shuffled):
            cursor.executemany(INSERT, chunk)
        in_order = [("in_order", *row[1:]) for row in pieces]
        for chunk in chunks(rng, in_order):
            cursor.execute(  # one statement a chunk, so the trigger folds several samples at once
                "INSERT INTO metric_samples (project, time, name, labels, value, target)"
                " SELECT * FROM unnest(%s::text[], %s::timestamptz[], %s::text[], %s::jsonb[],"
                " %s::float8[], %s::text[])",
                [list(column) for column in zip(*chunk, strict=True)],
            )
        whole = [("whole", *row[1:]) for row in pieces]
        cursor.executemany(INSERT, whole)
        assert without_growth(stored_rollups(connection, "pieces")) == without_growth(
            expected_rollups(pieces)
        )
        assert stored_rollups(connection, "in_order") == expected_rollups(in_order)
        assert stored_rollups(connection, "whole") == expected_rollups(whole)
        assert {width for width, *_ in stored_rollups(connection, "pieces")} == set(ROLLUP_WIDTHS_S)


def chunks(rng: random.Random, rows: list[tuple[Any, ...]]) -> list[list[tuple[Any, ...]]]:
    cut = sorted(rng.sample(range(1, len(rows)), 4))
    return [rows[a:b] for a, b in zip([0, *cut], [*cut, len(rows)], strict=True)]


def test_a_restart_inside_a_bucket_keeps_the_growth_before_and_after_it(database_url: str) -> None:
    """A service restarted inside an hour whose counter climbs back past its earlier value: the hour
    holds the growth before the restart and after it, not the highest value's."""
    hour = datetime(2026, 11, 5, 8, tzinfo=UTC)
    values = [10, 40, 100, 5, 60, 130]  # restarted between 100 and 5
    rows = [
        ("acme", hour + timedelta(minutes=10 * i), "vllm:prefix_cache_hits", "{}", value, "http://a/metrics")
        for i, value in enumerate(values)
    ]
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.cursor().executemany(INSERT, rows)
        growth = connection.execute(
            "SELECT value_increase FROM metric_rollups WHERE project = 'acme' AND width_s = 3600"
        ).fetchall()
    assert growth == [((100 - 10) + 5 + (130 - 5),)]


@pytest.mark.parametrize("before", ["0006", "0012"])
def test_upgrade_rolls_up_samples_stored_before_it(empty_database_url: str, before: str) -> None:
    upgrade(empty_database_url, before)
    rows = random_samples(random.Random(7), "acme")
    with psycopg.connect(empty_database_url, autocommit=True) as connection:
        connection.cursor().executemany(INSERT, rows)
    upgrade(empty_database_url)
    with psycopg.connect(empty_database_url) as connection:
        assert stored_rollups(connection, "acme") == expected_rollups(rows)
