"""Production traffic: cost and requests per day and the traces list from the summaries the spans
trigger keeps; one trace's spans from spans."""

import pandas as pd

from dashboard.data._db import cached, frame

COST_DIMENSIONS = {"model": "model", "tenant": "tenant", "feature": "feature"}

# Summaries the spans trigger keeps (migration 0006): the pages never group spans, whatever the window.
DAYS = "day >= ((now() - make_interval(hours => :hours)) AT TIME ZONE 'UTC')::date"
EVAL_FILTER = "(:include_eval OR NOT eval)"


@cached
def cost_per_day(url: str, project: str, hours: int, dimension: str, include_eval: bool) -> pd.DataFrame:
    """Spend per UTC day split by model, tenant or feature (the days the window touches)."""
    column = COST_DIMENSIONS[dimension]
    return frame(
        url,
        f"""
        SELECT day::timestamp AS day, coalesce(nullif({column}, ''), '(none)') AS key,
               sum(cost_usd) AS cost_usd
        FROM span_rollups WHERE project = :p AND {DAYS} AND {EVAL_FILTER} AND cost_usd IS NOT NULL
        GROUP BY 1, 2 ORDER BY 1, 2
        """,
        p=project,
        hours=hours,
        include_eval=include_eval,
    )


@cached
def traffic_per_day(url: str, project: str, hours: int, include_eval: bool) -> pd.DataFrame:
    """Requests (root spans) and failed requests per UTC day (the days the window touches)."""
    return frame(
        url,
        f"""
        SELECT day::timestamp AS day, sum(num_requests)::bigint AS num_requests,
               sum(num_errors)::bigint AS num_errors
        FROM span_rollups WHERE project = :p AND {DAYS} AND {EVAL_FILTER}
        GROUP BY 1 HAVING sum(num_requests) > 0 ORDER BY 1
        """,
        p=project,
        hours=hours,
        include_eval=include_eval,
    )


@cached
def trace_filter_options(url: str, project: str, hours: int) -> dict[str, list[str]]:
    """Models, tenants, features and eval runs seen on the days of the window, for the filter boxes."""
    found = frame(
        url,
        f"SELECT DISTINCT kind, value FROM span_dimensions WHERE project = :p AND {DAYS} ORDER BY 1, 2",
        p=project,
        hours=hours,
    )
    options: dict[str, list[str]] = {"model": [], "tenant": [], "feature": [], "eval_run": []}
    for kind, value in zip(found["kind"], found["value"], strict=True):
        options[str(kind)].append(str(value))
    return options


TRACES_SQL = """
SELECT trace_id, start_time, latency_ms, num_spans, cost_usd, input_tokens, output_tokens, model,
       tenant, feature, eval_run_id, error, root_name
FROM trace_summaries
WHERE project = :p AND start_time >= now() - make_interval(hours => :hours)
  AND (CAST(:model AS text) IS NULL OR model = :model)
  AND (CAST(:tenant AS text) IS NULL OR tenant = :tenant)
  AND (CAST(:feature AS text) IS NULL OR feature = :feature)
  AND (CAST(:eval_run AS text) IS NULL OR eval_run_id = :eval_run)
  AND (NOT :errors_only OR error)
  AND coalesce(latency_ms, 0) >= :min_latency_ms
  AND coalesce(cost_usd, 0) >= :min_cost_usd
ORDER BY start_time DESC LIMIT :limit
"""


@cached
def traces(
    url: str,
    project: str,
    hours: int,
    *,
    model: str | None = None,
    tenant: str | None = None,
    feature: str | None = None,
    eval_run: str | None = None,
    errors_only: bool = False,
    min_latency_ms: float = 0.0,
    min_cost_usd: float = 0.0,
    limit: int = 200,
) -> pd.DataFrame:
    """Newest traces in the window that match every filter, one row per trace."""
    return frame(
        url,
        TRACES_SQL,
        p=project,
        hours=hours,
        model=model,
        tenant=tenant,
        feature=feature,
        eval_run=eval_run,
        errors_only=errors_only,
        min_latency_ms=min_latency_ms,
        min_cost_usd=min_cost_usd,
        limit=limit,
    )


@cached
def trace_spans(url: str, project: str, trace_id: str) -> pd.DataFrame:
    """The spans of one trace of ``project`` in start order, with their attributes."""
    return frame(
        url,
        "SELECT span_id, parent_span_id, name, start_time, end_time, duration_ms, status_code,"
        " status_message,"
        " service_name, model, input_tokens, output_tokens, cost_usd, tenant, feature, eval_run_id,"
        " attributes, events FROM spans WHERE trace_id = :t AND project = :p ORDER BY start_time, span_id",
        t=trace_id,
        p=project,
    )
