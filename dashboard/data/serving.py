"""Serving metrics the collector scraped, bucketed over a window, and the eval runs drawn over them.

Buckets of a minute or more are read from ``metric_rollups`` (per-minute and per-hour sums, counts
and maxima kept by a trigger, migration 0007), so a chart reads about as many rows per series as it
draws points, whatever the window; only buckets under a minute (windows of an hour or so) read raw
samples. Buckets start at whole multiples of their width since 2000-01-01 UTC, so a chart's bucket
holds whole rollup buckets and gives what bucketing the samples themselves gives.

A rollup bucket keeps a counter's highest value, not its last, and a chart bucket of raw samples
takes the same: a restart inside one bucket whose counter climbs back past the bucket's earlier
highest value shows no reset, so the growth before the restart is left out of the increase. Raw
buckets (under a minute) hold a scrape or two; rollup buckets hold a minute or an hour of them.
"""

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
# Per source: the table, its time column, a bucket's sample count, sum and maximum.
_RAW = ("metric_samples", "time", "1", "value", "value")
_ROLLUP = ("metric_rollups", "bucket_start", "num_samples", "value_sum", "value_max")


def bucket_width_s(hours: float, points: int) -> int:
    """The bucket width that draws about ``points`` points over ``hours``: at least ``MIN_BUCKET_S``,
    and a whole number of minutes or hours once a bucket reaches one (so rollups answer it)."""
    width = max(MIN_BUCKET_S, int(hours * 3600 // points))
    for rollup_s in sorted(ROLLUP_WIDTHS_S, reverse=True):
        if width >= rollup_s:
            return round(width / rollup_s) * rollup_s
    return width


def _source(bucket_s: int) -> tuple[str, str, str, str, str, int]:
    """Where buckets of ``bucket_s`` are read from: the coarsest rollup that divides it, else samples;
    and that source's width (0 for samples)."""
    for rollup_s in sorted(ROLLUP_WIDTHS_S, reverse=True):
        if bucket_s % rollup_s == 0:
            return (*_ROLLUP, rollup_s)
    return (*_RAW, 0)


def _window_start(width_s: int) -> str:
    # a rollup bucket is in the window when the window holds any of it
    if not width_s:
        return "CAST(:start AS timestamptz)"
    return f"date_bin(make_interval(secs => {width_s}), CAST(:start AS timestamptz), {ORIGIN})"


def _window_filter(time_column: str, width_s: int) -> str:
    widths = f" AND width_s = {width_s}" if width_s else ""
    lower = _window_start(width_s)
    return f"project = :p AND name = ANY(:names){widths} AND {time_column} BETWEEN {lower} AND :end"


def _series_baseline(table: str, time_column: str, highest: str, width_s: int) -> str:
    """The value the first bucket of series ``s`` (first read at ``s.since``) grows from: its last value
    within the lookback before the window, else its first sample in the window."""
    series = "project = :p AND name = s.name AND target = s.target AND labels = s.labels"
    widths = f" AND width_s = {width_s}" if width_s else ""
    start = _window_start(width_s)
    lookback = f"make_interval(secs => {max(LOOKBACK_S, width_s)})"
    # COALESCE evaluates the second look-up only for a series the first finds nothing for
    return f"""coalesce(
      (SELECT {highest} FROM {table} WHERE {series}{widths}
         AND {time_column} >= {start} - {lookback} AND {time_column} < {start}
       ORDER BY {time_column} DESC LIMIT 1),
      (SELECT value FROM metric_samples WHERE {series} AND time >= s.since ORDER BY time LIMIT 1))"""


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
    table, time_column, count, total, _, width_s = _source(bucket_s)
    return frame(
        url,
        f"""
        SELECT date_bin(make_interval(secs => :bucket), {time_column}, {ORIGIN}) AS time, name,
               sum({total}) / sum({count}) AS value
        FROM {table} WHERE {_window_filter(time_column, width_s)}
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
    """Increase of each counter series of ``project`` per time bucket: its last value minus the
    previous bucket's, the first bucket's minus the last value before the window (``LOOKBACK_S``; a
    series without one starts from its first value), and a reset counts from zero. A bucket's last
    value is its highest, so a reset inside one bucket can go unseen (see the module)."""
    table, time_column, _, _, highest, width_s = _source(bucket_s)
    return frame(
        url,
        f"""
        WITH b AS (
          SELECT date_bin(make_interval(secs => :bucket), {time_column}, {ORIGIN}) AS time, name, labels,
                 target, max({highest}) AS last_value, min({time_column}) AS since
          FROM {table} WHERE {_window_filter(time_column, width_s)}
          GROUP BY 1, 2, 3, 4),
        baseline AS (
          SELECT CAST('-infinity' AS timestamptz) AS time, name, labels, target,
                 {_series_baseline(table, time_column, highest, width_s)} AS last_value
          FROM (SELECT name, labels, target, min(since) AS since FROM b GROUP BY 1, 2, 3) AS s),
        s AS (
          SELECT time, name, labels, last_value,
                 last_value - lag(last_value) OVER (PARTITION BY name, labels, target ORDER BY time) AS step
          FROM (SELECT time, name, labels, target, last_value FROM b
                UNION ALL SELECT * FROM baseline) AS series)
        SELECT time, name, labels->>'cache' AS cache, labels->>'result' AS result,
               sum(CASE WHEN step < 0 THEN last_value ELSE step END) AS increase
        FROM s WHERE step IS NOT NULL GROUP BY 1, 2, 3, 4 ORDER BY 1
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
        FROM eval_runs r JOIN eval_sets s ON s.id = r.eval_set_id
        WHERE r.project = :p AND r.started_at <= :end AND coalesce(r.finished_at, now()) >= :start
        ORDER BY r.started_at
        """,
        p=project,
        start=start,
        end=end,
    )
