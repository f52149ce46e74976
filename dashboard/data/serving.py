"""Serving metrics the collector scraped, bucketed over a window, and the eval runs drawn over them.

Buckets of a minute or more are read from ``metric_rollups`` (per-minute and per-hour sums, counts
and maxima kept by a trigger, migration 0007), so a chart reads about as many rows per series as it
draws points, whatever the window; only buckets under a minute (windows of an hour or so) read raw
samples. Buckets start at whole multiples of their width since 2000-01-01 UTC, so a chart's bucket
holds whole rollup buckets and gives what bucketing the samples themselves gives.

A counter's increase is Prometheus's ``increase`` without extrapolation: the growth from each sample
to the next, a fall counting as a reset from zero. A rollup bucket keeps its growth between its own
samples (migration 0013) and its first and last value, so a restart inside a bucket counts the growth
before it and after it; the chart adds the step from each rollup bucket's last value to the next one's
first.
"""

from dataclasses import dataclass

import pandas as pd

from dashboard.data._db import cached, fail_abandoned, frame
from evallens.db.models.metrics import ROLLUP_WIDTHS_S
from evallens.telemetry import metrics

GAUGES = (metrics.VLLM_KV_CACHE_USAGE, metrics.VLLM_NUM_REQUESTS_RUNNING, metrics.VLLM_NUM_REQUESTS_WAITING)
COUNTERS = (
    metrics.VLLM_PREFIX_CACHE_HITS,
    metrics.VLLM_PREFIX_CACHE_QUERIES,
    f"{metrics.CACHE_LOOKUPS}_total",
    f"{metrics.VLLM_TIME_TO_FIRST_TOKEN}_sum",
    f"{metrics.VLLM_TIME_TO_FIRST_TOKEN}_count",
    f"{metrics.VLLM_REQUEST_QUEUE_TIME}_sum",
    f"{metrics.VLLM_REQUEST_QUEUE_TIME}_count",
)
MIN_BUCKET_S = 10
# How far before the window a counter's last value is looked for (Prometheus's default lookback; for
# hour rollups, the hour before): the first bucket grows from it. A series silent longer starts from
# its first sample in the window.
LOOKBACK_S = 300
POINTS_PER_CHART = 150
ORIGIN = "TIMESTAMPTZ '2000-01-01 00:00:00+00'"  # the rollups' origin (migration 0007)
# A series labelled with a project (the answer caches' lookups: one service answers every project's
# keys) is that project's; one without (vLLM's, and lookups scraped before they had the label) is the
# project its scrape target is bound to, as every sample was before.
OWN_SERIES = "coalesce(labels->>'project', project) = :p"


@dataclass(frozen=True)
class _Source:
    """Where buckets are read from: the table, its time column, each row's sample count and sum (for
    gauges), its first and last value and the counter's growth between them, and the rollup width (0
    for raw samples)."""

    table: str
    time_column: str
    count: str
    total: str
    first: str
    last: str
    growth: str
    width_s: int = 0


_RAW = _Source("metric_samples", "time", "1", "value", "value", "value", "0")


def bucket_width_s(hours: float, points: int) -> int:
    """The bucket width that draws about ``points`` points over ``hours``: at least ``MIN_BUCKET_S``,
    and a whole number of minutes or hours once a bucket reaches one (so rollups answer it)."""
    width = max(MIN_BUCKET_S, int(hours * 3600 // points))
    for rollup_s in sorted(ROLLUP_WIDTHS_S, reverse=True):
        if width >= rollup_s:
            return round(width / rollup_s) * rollup_s
    return width


def _source(bucket_s: int) -> _Source:
    """Where buckets of ``bucket_s`` are read from: the coarsest rollup that divides it, else samples."""
    for rollup_s in sorted(ROLLUP_WIDTHS_S, reverse=True):
        if bucket_s % rollup_s == 0:
            return _Source(
                "metric_rollups",
                "bucket_start",
                "num_samples",
                "value_sum",
                "first_value",
                "last_value",
                "value_increase",
                rollup_s,
            )
    return _RAW


def _window_start(width_s: int) -> str:
    # a rollup bucket is in the window when the window holds any of it
    if not width_s:
        return "CAST(:start AS timestamptz)"
    return f"date_bin(make_interval(secs => {width_s}), CAST(:start AS timestamptz), {ORIGIN})"


def _window_filter(time_column: str, width_s: int) -> str:
    widths = f" AND width_s = {width_s}" if width_s else ""
    lower = _window_start(width_s)
    return (
        f"project = :p AND {OWN_SERIES} AND name = ANY(:names){widths}"
        f" AND {time_column} BETWEEN {lower} AND :end"
    )


def _series_baseline(source: _Source) -> str:
    """The value the first row of series ``s`` grows from: its last value within the lookback before
    the window; none (no growth into the first row) when it has none."""
    series = "project = :p AND name = s.name AND target = s.target AND labels = s.labels"
    widths = f" AND width_s = {source.width_s}" if source.width_s else ""
    start = _window_start(source.width_s)
    lookback = f"make_interval(secs => {max(LOOKBACK_S, source.width_s)})"
    return f"""(SELECT {source.last} FROM {source.table} WHERE {series}{widths}
         AND {source.time_column} >= {start} - {lookback} AND {source.time_column} < {start}
       ORDER BY {source.time_column} DESC LIMIT 1)"""


@cached
def metrics_window(url: str, project: str, hours: float) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """The ``hours`` before the newest metric sample of ``project``, or None without samples."""
    found = frame(url, "SELECT max(time) AS end_time FROM metric_samples WHERE project = :p", p=project)
    end = found["end_time"].iloc[0]
    return None if end is None or pd.isna(end) else (end - pd.Timedelta(hours=hours), end)


@cached
def gauge_series(
    url: str, project: str, start: pd.Timestamp, end: pd.Timestamp, bucket_s: int
) -> pd.DataFrame:
    """Mean of each gauge of ``project`` per time bucket."""
    source = _source(bucket_s)
    return frame(
        url,
        f"""
        SELECT date_bin(make_interval(secs => :bucket), {source.time_column}, {ORIGIN}) AS time, name,
               sum({source.total}) / sum({source.count}) AS value
        FROM {source.table} WHERE {_window_filter(source.time_column, source.width_s)}
        GROUP BY 1, 2 ORDER BY 1
        """,
        p=project,
        names=list(GAUGES),
        start=start,
        end=end,
        bucket=bucket_s,
    )


@cached
def counter_increases(
    url: str, project: str, start: pd.Timestamp, end: pd.Timestamp, bucket_s: int
) -> pd.DataFrame:
    """Increase of each counter series of ``project`` per time bucket: the growth inside each row read
    (a rollup bucket's own, none for a raw sample) plus the step from the series' previous row's last
    value to this row's first, a fall counting as a reset from zero. The first row steps from the
    series' last value before the window (``LOOKBACK_S``); a series without one starts from its first
    value."""
    source = _source(bucket_s)
    step = "CASE WHEN first_value < previous THEN first_value ELSE first_value - previous END"
    return frame(
        url,
        f"""
        WITH points AS (
          SELECT {source.time_column} AS time, name, labels, target, {source.first} AS first_value,
                 {source.last} AS last_value, {source.growth} AS growth
          FROM {source.table} WHERE {_window_filter(source.time_column, source.width_s)}),
        baseline AS (
          SELECT s.name, s.labels, s.target, {_series_baseline(source)} AS before_window
          FROM (SELECT DISTINCT name, labels, target FROM points) AS s),
        stepped AS (
          SELECT points.*, coalesce(
                   lag(last_value) OVER (PARTITION BY name, labels, target ORDER BY time),
                   before_window) AS previous
          FROM points JOIN baseline USING (name, labels, target))
        SELECT date_bin(make_interval(secs => :bucket), time, {ORIGIN}) AS time, name,
               labels->>'cache' AS cache, labels->>'result' AS result,
               sum(growth + coalesce({step}, 0)) AS increase
        FROM stepped GROUP BY 1, 2, 3, 4 ORDER BY 1
        """,
        p=project,
        names=list(COUNTERS),
        start=start,
        end=end,
        bucket=bucket_s,
    )


@cached
def run_windows(url: str, project: str, start: pd.Timestamp, end: pd.Timestamp) -> pd.DataFrame:
    """Eval runs that overlap the window, as bands from start to finish (now, for one still running)."""
    fail_abandoned(url, project)
    return frame(
        url,
        """
        SELECT coalesce(r.label, left(r.id::text, 8)) AS run, s.name AS eval_set_name, r.started_at,
               coalesce(r.finished_at, now()) AS finished_at, r.status
        FROM eval_runs r JOIN eval_sets s ON s.id = r.eval_set_id AND s.project = r.project
        WHERE r.project = :p AND r.started_at <= :end AND coalesce(r.finished_at, now()) >= :start
        ORDER BY r.started_at
        """,
        p=project,
        start=start,
        end=end,
    )
