"""Production traffic from spans: cost and requests per day, the traces list and one trace's spans."""

import pandas as pd

from dashboard.data._db import cached, frame

COST_DIMENSIONS = {"model": "model", "tenant": "tenant", "feature": "feature"}

WINDOW = "start_time >= now() - make_interval(hours => :hours)"
EVAL_FILTER = "(:include_eval OR eval_run_id IS NULL)"


@cached
def cost_per_day(url: str, project: str, hours: int, dimension: str, include_eval: bool) -> pd.DataFrame:
    """Spend per UTC day split by model, tenant or feature."""
    column = COST_DIMENSIONS[dimension]
    return frame(
        url,
        f"""
        SELECT date_trunc('day', start_time AT TIME ZONE 'UTC') AS day,
               coalesce({column}, '(none)') AS key, sum(cost_usd) AS cost_usd
        FROM spans WHERE project = :p AND {WINDOW} AND {EVAL_FILTER} AND cost_usd IS NOT NULL
        GROUP BY 1, 2 ORDER BY 1, 2
        """,
        p=project,
        hours=hours,
        include_eval=include_eval,
    )


@cached
def traffic_per_day(url: str, project: str, hours: int, include_eval: bool) -> pd.DataFrame:
    """Requests (root spans) and failed requests per UTC day."""
    return frame(
        url,
        f"""
        SELECT date_trunc('day', start_time AT TIME ZONE 'UTC') AS day, count(*) AS num_requests,
               count(*) FILTER (WHERE status_code = 2) AS num_errors
        FROM spans WHERE project = :p AND {WINDOW} AND {EVAL_FILTER} AND parent_span_id IS NULL
        GROUP BY 1 ORDER BY 1
        """,
        p=project,
        hours=hours,
        include_eval=include_eval,
    )


@cached
def trace_filter_options(url: str, project: str, hours: int) -> dict[str, list[str]]:
    """Models, tenants, features and eval runs seen in the window, for the filter boxes."""
    found = frame(
        url,
        f"""
        SELECT array_remove(array_agg(DISTINCT model), NULL) AS model,
               array_remove(array_agg(DISTINCT tenant), NULL) AS tenant,
               array_remove(array_agg(DISTINCT feature), NULL) AS feature,
               array_remove(array_agg(DISTINCT eval_run_id), NULL) AS eval_run
        FROM spans WHERE project = :p AND {WINDOW}
        """,
        p=project,
        hours=hours,
    ).iloc[0]
    return {str(name): sorted(values or []) for name, values in found.items()}


TRACES_SQL = f"""
SELECT trace_id, min(start_time) AS start_time,
       max(duration_ms) FILTER (WHERE parent_span_id IS NULL) AS latency_ms,
       count(*) AS num_spans, sum(cost_usd) AS cost_usd, sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens, max(model) AS model, max(tenant) AS tenant,
       max(feature) AS feature,
       max(eval_run_id) AS eval_run_id, bool_or(status_code = 2) AS error,
       max(name) FILTER (WHERE parent_span_id IS NULL) AS root_name
FROM spans WHERE project = :p AND {WINDOW}
GROUP BY trace_id
HAVING (CAST(:model AS text) IS NULL OR bool_or(model = :model))
   AND (CAST(:tenant AS text) IS NULL OR bool_or(tenant = :tenant))
   AND (CAST(:feature AS text) IS NULL OR bool_or(feature = :feature))
   AND (CAST(:eval_run AS text) IS NULL OR bool_or(eval_run_id = :eval_run))
   AND (NOT :errors_only OR bool_or(status_code = 2))
   AND coalesce(max(duration_ms), 0) >= :min_latency_ms
   AND coalesce(sum(cost_usd), 0) >= :min_cost_usd
ORDER BY min(start_time) DESC LIMIT :limit
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
