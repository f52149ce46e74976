"""Serving metrics the collector scraped, bucketed over a window, and the eval runs drawn over them."""

import pandas as pd

from dashboard.data._db import cached, frame
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
    return frame(
        url,
        """
        SELECT date_bin(make_interval(secs => :bucket), time, :start) AS time, name, avg(value) AS value
        FROM metric_samples WHERE project = :p AND name = ANY(:names) AND time BETWEEN :start AND :end
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
    """Increase of each counter series of ``project`` per time bucket: last value minus the previous
    bucket's (a reset counts from zero)."""
    return frame(
        url,
        """
        WITH b AS (
          SELECT date_bin(make_interval(secs => :bucket), time, :start) AS time, name, labels, target,
                 max(value) AS last_value
          FROM metric_samples WHERE project = :p AND name = ANY(:names) AND time BETWEEN :start AND :end
          GROUP BY 1, 2, 3, 4),
        s AS (
          SELECT time, name, labels, last_value,
                 last_value - lag(last_value) OVER (PARTITION BY name, labels, target ORDER BY time) AS step
          FROM b)
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
    """Eval runs that overlap the window, as bands from start to finish."""
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
