"""The Serving metrics queries: charts read from the rollups (buckets of whole minutes or hours) give
what bucketing the raw samples gives, for the viewer's project only."""

import itertools
import json
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import psycopg
import pytest

from dashboard import data
from evallens.telemetry import metrics

ORIGIN = pd.Timestamp("2000-01-01", tz="UTC")
END = datetime(2026, 11, 5, 9, 17, 33, tzinfo=UTC)
INSERT = (
    "INSERT INTO metric_samples (project, time, name, labels, value, target) VALUES (%s, %s, %s, %s, %s, %s)"
)
HIT = {"cache": "semantic", "result": "hit"}


def scrapes(rng: random.Random, project: str, hours: int) -> list[tuple[Any, ...]]:
    """Scrapes every minute or so of two targets, with a counter that resets once."""
    rows: list[tuple[Any, ...]] = []
    counters = dict.fromkeys((metrics.VLLM_PREFIX_CACHE_HITS, f"{metrics.CACHE_LOOKUPS}_total"), 0.0)
    for step in range(hours * 50):
        moment = END - timedelta(hours=hours) + timedelta(seconds=72 * step + rng.randint(0, 20))
        for target in ("http://a/metrics", "http://b/metrics"):
            rows.append((project, moment, metrics.VLLM_KV_CACHE_USAGE, "{}", rng.random(), target))
        for name in counters:
            counters[name] = 0.0 if step == hours * 20 else counters[name] + rng.uniform(0, 9)
            labels = HIT if name.startswith(metrics.CACHE_LOOKUPS) else {}
            rows.append((project, moment, name, json.dumps(labels), counters[name], "http://a/metrics"))
    return rows


Sample = tuple[pd.Timestamp, str, str, str, float]  # bucket, name, labels, target, value


def bucketed(rows: list[tuple[Any, ...]], start: pd.Timestamp, bucket_s: int) -> list[Sample]:
    """The samples a chart from ``start`` holds, with the bucket each falls in: a rollup bucket is read
    whole, so the window starts at the start of the rollup bucket holding ``start``."""
    rollup_s = 3600 if bucket_s % 3600 == 0 else 60
    first = start.floor(f"{rollup_s}s")
    width = pd.Timedelta(seconds=bucket_s)
    return [
        (ORIGIN + (pd.Timestamp(moment) - ORIGIN) // width * width, name, labels, target, value)
        for _, moment, name, labels, value, target in rows
        if pd.Timestamp(moment) >= first
    ]


def expected_gauges(samples: list[Sample]) -> dict[tuple[Any, ...], float]:
    values: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for bucket, name, _, _, value in samples:
        if name == metrics.VLLM_KV_CACHE_USAGE:
            values[bucket, name].append(value)
    return {key: sum(found) / len(found) for key, found in values.items()}


def expected_increases(samples: list[Sample]) -> dict[tuple[Any, ...], float]:
    series: dict[tuple[str, str, str], dict[pd.Timestamp, float]] = defaultdict(dict)
    for bucket, name, labels, target, value in samples:  # per series and bucket: the highest value
        if name != metrics.VLLM_KV_CACHE_USAGE:
            highest = series[name, labels, target]
            highest[bucket] = max(value, highest.get(bucket, value))
    increases: dict[tuple[Any, ...], float] = defaultdict(float)
    for (name, _, _), highest in series.items():
        buckets = sorted(highest)
        for previous, bucket in itertools.pairwise(buckets):
            step = highest[bucket] - highest[previous]
            increases[bucket, name] += highest[bucket] if step < 0 else step  # a reset counts from zero
    return dict(increases)


@pytest.mark.parametrize(("hours", "bucket_s"), [(30, 600), (30, 3600), (70, 5 * 3600)])
def test_rollup_buckets_equal_buckets_of_the_samples(database_url: str, hours: int, bucket_s: int) -> None:
    rng = random.Random(hours + bucket_s)
    ours, theirs = scrapes(rng, "acme", hours), scrapes(rng, "globex", hours)
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.cursor().executemany(INSERT, ours + [(*row[:4], row[4] * 1000, row[5]) for row in theirs])
    window = data.serving.metrics_window(database_url, "acme", hours - 2)
    assert window is not None
    start, end = window
    samples = bucketed(ours, start, bucket_s)

    gauges = data.serving.gauge_series(database_url, "acme", start, end, bucket_s)
    found = {(row.time, row.name): row.value for row in gauges.itertuples()}
    assert found == pytest.approx(expected_gauges(samples))
    assert len(found) >= (hours - 2) * 3600 // bucket_s

    increases = data.serving.counter_increases(database_url, "acme", start, end, bucket_s)
    found = {(row.time, row.name): row.increase for row in increases.itertuples()}
    assert found == pytest.approx(expected_increases(samples))
    assert set(increases["cache"].dropna()) == {"semantic"}


def test_bucket_widths_are_whole_rollup_buckets_once_a_minute_or_more() -> None:
    assert data.serving.bucket_width_s(0.25, 150) == 10  # a quarter hour: raw samples
    assert data.serving.bucket_width_s(1, 150) == 24
    assert data.serving.bucket_width_s(6, 150) == 120  # minutes
    assert data.serving.bucket_width_s(24, 150) == 600
    assert data.serving.bucket_width_s(24 * 7, 150) == 3600  # hours
    assert data.serving.bucket_width_s(24 * 30, 150) == 5 * 3600
