"""The Serving metrics queries: charts read from the rollups (buckets of whole minutes or hours) give
what bucketing the raw samples gives, for the viewer's project only."""

import json
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import psycopg
import pytest

from dashboard import data, transform
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


def rollup_start(start: pd.Timestamp, bucket_s: int) -> tuple[pd.Timestamp, int]:
    """Where a chart from ``start`` starts reading, and the rollup width it reads: a rollup bucket is
    read whole, so the window starts at the start of the rollup bucket holding ``start``."""
    rollup_s = 3600 if bucket_s % 3600 == 0 else 60
    return start.floor(f"{rollup_s}s"), rollup_s


def bucketed(rows: list[tuple[Any, ...]], start: pd.Timestamp, bucket_s: int) -> list[Sample]:
    """The samples a chart from ``start`` holds, with the bucket each falls in."""
    first, _ = rollup_start(start, bucket_s)
    width = pd.Timedelta(seconds=bucket_s)
    return [
        (ORIGIN + (pd.Timestamp(moment) - ORIGIN) // width * width, name, labels, target, value)
        for _, moment, name, labels, value, target in rows
        if pd.Timestamp(moment) >= first
    ]


def baselines(
    rows: list[tuple[Any, ...]], start: pd.Timestamp, bucket_s: int
) -> dict[tuple[str, ...], float | None]:
    """Per counter series, the value its first sample grows from: its last value in the rollup buckets
    within the lookback (5 minutes, or the hour before) before the window, else none."""
    first, rollup_s = rollup_start(start, bucket_s)
    lookback = pd.Timedelta(seconds=max(300, rollup_s))
    found: dict[tuple[str, ...], float | None] = {}
    for _, moment, name, labels, value, target in sorted(rows, key=lambda row: row[1]):
        if name == metrics.VLLM_KV_CACHE_USAGE:
            continue
        if first - lookback <= moment < first:
            found[name, labels, target] = value
        elif moment >= first:
            found.setdefault((name, labels, target), None)
    return found


def expected_gauges(samples: list[Sample]) -> dict[tuple[Any, ...], float]:
    values: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for bucket, name, _, _, value in samples:
        if name == metrics.VLLM_KV_CACHE_USAGE:
            values[bucket, name].append(value)
    return {key: sum(found) / len(found) for key, found in values.items()}


def expected_increases(
    samples: list[Sample], baseline: dict[tuple[str, ...], float | None]
) -> dict[tuple[Any, ...], float]:
    """Per bucket, the growth from each sample to the next (Prometheus's ``increase``, not
    extrapolated), a reset counting from zero; the first sample grows from the baseline, if any."""
    previous = dict(baseline)
    increases: dict[tuple[Any, ...], float] = defaultdict(float)
    for bucket, name, labels, target, value in samples:  # in time order
        if name == metrics.VLLM_KV_CACHE_USAGE:
            continue
        before = previous[name, labels, target]
        increases[bucket, name] += 0 if before is None else value if value < before else value - before
        previous[name, labels, target] = value
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
    assert found == pytest.approx(expected_increases(samples, baselines(ours, start, bucket_s)))
    assert set(increases["cache"].dropna()) == {"semantic"}


def test_bucket_widths_are_whole_rollup_buckets_once_a_minute_or_more() -> None:
    assert data.serving.bucket_width_s(0.25, 150) == 10  # a quarter hour: raw samples
    assert data.serving.bucket_width_s(1, 150) == 24
    assert data.serving.bucket_width_s(6, 150) == 120  # minutes
    assert data.serving.bucket_width_s(24, 150) == 600
    assert data.serving.bucket_width_s(24 * 7, 150) == 3600  # hours
    assert data.serving.bucket_width_s(24 * 30, 150) == 5 * 3600


HOUR = datetime(2026, 11, 5, 8, tzinfo=UTC)  # the window's start, a whole hour: every source starts there
TTFT_COUNT, QUEUE_COUNT, QUEUE_SUM = (
    f"{metrics.VLLM_TIME_TO_FIRST_TOKEN}_count",
    f"{metrics.VLLM_REQUEST_QUEUE_TIME}_count",
    f"{metrics.VLLM_REQUEST_QUEUE_TIME}_sum",
)
# One series per counter: (seconds from the window's start, value) of its samples.
SERIES = {
    metrics.VLLM_PREFIX_CACHE_HITS: [(-120, 50), (-30, 60), (10, 64), (70, 70), (3700, 90)],
    metrics.VLLM_PREFIX_CACHE_QUERIES: [(10, 5), (70, 8), (3700, 12)],  # no value before the window
    TTFT_COUNT: [(-30, 200), (10, 3), (70, 9)],  # restarted just as the window starts
    QUEUE_COUNT: [(-4000, 40), (10, 45), (70, 47)],  # silent longer than any lookback before it
    QUEUE_SUM: [(10, 100), (1800, 400), (1900, 20), (2500, 450)],  # restarted, then past its old value
}
# Worked by hand, per bucket width: (bucket's seconds from the window's start, counter) -> increase.
# The first bucket grows from the last value before the window: the last sample (raw samples, 5 min
# lookback) or the last value of the last rollup bucket (minute buckets 5 min back, the hour before);
# without one, from the series' first value in the window, which itself is no growth. A restart inside
# a bucket counts the growth before it and after it.
WIDER = {
    (0, metrics.VLLM_PREFIX_CACHE_HITS): 70 - 60,
    (3600, metrics.VLLM_PREFIX_CACHE_HITS): 90 - 70,
    (0, metrics.VLLM_PREFIX_CACHE_QUERIES): 8 - 5,
    (3600, metrics.VLLM_PREFIX_CACHE_QUERIES): 12 - 8,
    (0, TTFT_COUNT): 9,  # a reset counts from zero
    (0, QUEUE_COUNT): 47 - 45,
}
INCREASES = {
    30: {  # raw samples
        (0, metrics.VLLM_PREFIX_CACHE_HITS): 64 - 60,
        (60, metrics.VLLM_PREFIX_CACHE_HITS): 70 - 64,
        (3690, metrics.VLLM_PREFIX_CACHE_HITS): 90 - 70,
        (0, metrics.VLLM_PREFIX_CACHE_QUERIES): 0,
        (60, metrics.VLLM_PREFIX_CACHE_QUERIES): 8 - 5,
        (3690, metrics.VLLM_PREFIX_CACHE_QUERIES): 12 - 8,
        (0, TTFT_COUNT): 3,
        (60, TTFT_COUNT): 9 - 3,
        (0, QUEUE_COUNT): 0,
        (60, QUEUE_COUNT): 47 - 45,
        (0, QUEUE_SUM): 0,
        (1800, QUEUE_SUM): 400 - 100,
        (1890, QUEUE_SUM): 20,
        (2490, QUEUE_SUM): 450 - 20,
    },
    120: {  # minute rollups
        **WIDER,
        (0, QUEUE_SUM): 0,
        (1800, QUEUE_SUM): (400 - 100) + 20,
        (2400, QUEUE_SUM): 450 - 20,
    },
    3600: {**WIDER, (0, QUEUE_SUM): (400 - 100) + 20 + (450 - 20)},  # hour rollups
}


@pytest.mark.parametrize("bucket_s", sorted(INCREASES))
def test_first_bucket_grows_from_the_last_value_before_the_window(database_url: str, bucket_s: int) -> None:
    rows = [
        ("acme", HOUR + timedelta(seconds=offset), name, "{}", value, f"http://{name}/metrics")
        for name, samples in SERIES.items()
        for offset, value in samples
    ]
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.cursor().executemany(INSERT, rows)
    start, end = pd.Timestamp(HOUR), pd.Timestamp(HOUR + timedelta(hours=2))

    increases = data.serving.counter_increases(database_url, "acme", start, end, bucket_s)
    found = {(row.time, row.name): row.increase for row in increases.itertuples()}
    expected = {
        (start + pd.Timedelta(seconds=s), name): step for (s, name), step in INCREASES[bucket_s].items()
    }
    assert found == pytest.approx(expected)
    # whatever the source, the window's total is each counter's growth since the value before it
    totals = increases.groupby("name")["increase"].sum().to_dict()
    assert totals == pytest.approx(
        {
            metrics.VLLM_PREFIX_CACHE_HITS: 30,
            metrics.VLLM_PREFIX_CACHE_QUERIES: 7,
            TTFT_COUNT: 9,
            QUEUE_COUNT: 2,
            QUEUE_SUM: 750,
        }
    )


LOOKUPS = f"{metrics.CACHE_LOOKUPS}_total"
# (bound project of the target, project label or None, cache) -> (hits, misses) at 10, 70 and 3700 s
LOOKUP_SERIES: dict[tuple[str, str | None, str], tuple[list[float], list[float]]] = {
    ("acme", "acme", "exact"): ([0, 2, 4], [0, 2, 4]),  # acme's own: half hit
    ("acme", "globex", "exact"): ([0, 30, 60], [0, 0, 0]),  # globex's keys on the same service
    ("acme", None, "semantic"): ([0, 1, 2], [0, 3, 6]),  # scraped before lookups had the label
    ("globex", "acme", "exact"): ([0, 50, 90], [0, 0, 0]),  # acme's keys on a target bound to globex
}


@pytest.mark.parametrize("bucket_s", [30, 120, 3600])
def test_response_cache_hit_rate_counts_only_the_viewers_projects_lookups(
    database_url: str, bucket_s: int
) -> None:
    """One service answers every project's keys, and its cache lookups carry the project whose caches
    were asked. The Serving page summed every project's lookups of a target into its hit rate: acme's
    exact cache showed 94% (globex's hits) for its own 50%."""
    rows = []
    for (bound, project, cache), (hits, misses) in LOOKUP_SERIES.items():
        for result, values in (("hit", hits), ("miss", misses)):
            labels = {"cache": cache, "result": result} | ({"project": project} if project else {})
            for offset, value in zip((10, 70, 3700), values, strict=True):
                moment = HOUR + timedelta(seconds=offset)
                rows.append((bound, moment, LOOKUPS, json.dumps(labels), value, f"http://{bound}/metrics"))
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.cursor().executemany(INSERT, rows)
    start, end = pd.Timestamp(HOUR), pd.Timestamp(HOUR + timedelta(hours=2))

    increases = data.serving.counter_increases(database_url, "acme", start, end, bucket_s)
    rates = transform.serving_panels(pd.DataFrame(), increases)["response-cache hit rate (%)"]
    found = {series: set(values.round(6)) for series, values in rates.groupby("series")["value"]}
    # unlabelled lookups stay with the target's project, as every sample did before the label
    assert found == {"exact cache": {50.0}, "semantic cache": {25.0}}
    # globex's target is globex's, whatever its labels say; nothing of it is acme's lookups
    assert data.serving.counter_increases(database_url, "globex", start, end, bucket_s).empty
