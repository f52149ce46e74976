"""Every query the dashboard runs, each an aggregate, each cached for ``CACHE_TTL_S`` seconds.

Pages call these functions and never write SQL. The first argument is always the database URL so
that caches of different databases never mix; every query of spans, runs, sets and gates also takes
the project the login may see, so a login never reads another project's rows (even by id), and that
includes serving metrics: each scraped sample belongs to the project its scrape target is bound to.
"""

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

import pandas as pd
import streamlit as st
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from evallens import cases
from evallens.auth import AuthGate, Principal, Scope
from evallens.db import create_db_engine, create_session_factory, open_database
from evallens.settings import AuthSettings, DatabaseSettings
from evallens.telemetry import attributes as attr
from evallens.telemetry import metrics

CACHE_TTL_S = 30
P = ParamSpec("P")
R = TypeVar("R")

COST_DIMENSIONS = {"model": "model", "tenant": "tenant", "feature": "feature"}
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
# Attribute names are bound as parameters, so the names live in one place (evallens.telemetry).
ATTRIBUTE_PARAMS = {
    "a_degraded": attr.DEGRADED,
    "a_timeout": attr.TIMEOUT,
    "a_docs": attr.GEN_AI_RETRIEVAL_DOCUMENTS,
    "a_doc0": attr.retrieval_document_id(0),
    "a_feedback": attr.FEEDBACK_SCORE,
    "a_feedback_trace": attr.FEEDBACK_TARGET_TRACE_ID,
}


def _cached(func: Callable[P, R]) -> Callable[P, R]:
    return cast(Callable[P, R], st.cache_data(ttl=CACHE_TTL_S, show_spinner=False)(func))


def _resource(**options: Any) -> Callable[[Callable[P, R]], Callable[P, R]]:
    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        return cast(Callable[P, R], st.cache_resource(show_spinner=False, **options)(func))

    return decorate


@_resource()
def database_url() -> str:
    """The configured database, or the embedded default (started or joined once per process)."""
    return open_database(DatabaseSettings()).url


@_resource(on_release=lambda engine: engine.dispose())
def _engine(url: str) -> Engine:
    return create_db_engine(url, pool_size=3)


def session(url: str) -> Session:
    """A session for writes (promoting cases); the caller commits."""
    return Session(_engine(url))


@_resource()
def _gate(url: str) -> AuthGate:
    return AuthGate(AuthSettings(), create_session_factory(_engine(url)))


def reader(url: str, key: str) -> Principal:
    """The principal of a key that may read (cached briefly); raises an ``AuthError`` otherwise."""
    return _gate(url).principal(key).require(Scope.READ)


def clear_caches() -> None:
    """Forget cached query results, after the dashboard itself wrote to the database."""
    st.cache_data.clear()


def _frame(url: str, sql: str, **params: Any) -> pd.DataFrame:
    with _engine(url).connect() as connection:
        result = connection.execute(text(sql), {**ATTRIBUTE_PARAMS, **params})
        return pd.DataFrame(result.fetchall(), columns=list(result.keys()))


@_cached
def schema_revision(url: str) -> str | None:
    """The Alembic revision of the database, or None when it was never migrated."""
    found = _frame(url, "SELECT to_regclass('alembic_version') IS NOT NULL AS ok")
    if not bool(found["ok"].iloc[0]):
        return None
    revision = _frame(url, "SELECT version_num FROM alembic_version")
    return None if revision.empty else str(revision["version_num"].iloc[0])


@_cached
def data_present(url: str, project: str) -> dict[str, bool]:
    """Which kinds of data exist at all, for the empty states."""
    row = _frame(
        url,
        "SELECT EXISTS (SELECT 1 FROM spans WHERE project = :p) AS spans,"
        " EXISTS (SELECT 1 FROM eval_runs WHERE project = :p) AS runs,"
        " EXISTS (SELECT 1 FROM metric_samples WHERE project = :p) AS samples,"
        " EXISTS (SELECT 1 FROM gate_reports WHERE project = :p) AS gates,"
        " EXISTS (SELECT 1 FROM eval_sets WHERE project = :p) AS sets,"
        " EXISTS (SELECT 1 FROM collector_quarantine WHERE project = :p) AS quarantine",
        p=project,
    ).iloc[0]
    return {str(name): bool(value) for name, value in row.items()}


# --- eval runs and gates -------------------------------------------------------------------------

RUNS_SQL = """
SELECT r.id::text AS run_id, coalesce(r.label, left(r.id::text, 8)) AS label, s.name AS eval_set_name,
       s.version AS set_version, r.status, r.started_at, r.finished_at, r.config_fingerprint,
       (SELECT string_agg(t.tag, ', ') FROM eval_tags t WHERE t.run_id = r.id) AS tags
FROM eval_runs r JOIN eval_sets s ON s.id = r.eval_set_id
WHERE r.project = :p AND (CAST(:set_name AS text) IS NULL OR s.name = :set_name)
ORDER BY r.started_at DESC LIMIT 500
"""


@_cached
def runs(url: str, project: str, eval_set_name: str | None = None) -> pd.DataFrame:
    """Eval runs, newest first, with their set, status and tags."""
    return _frame(url, RUNS_SQL, p=project, set_name=eval_set_name)


@_cached
def run_documents(url: str, project: str, run_id: str) -> dict[str, Any]:
    """The stored summary and infra JSON of one run of ``project`` (None where not computed)."""
    row = _frame(
        url,
        "SELECT summary, infra FROM eval_runs WHERE id = CAST(:id AS uuid) AND project = :p",
        id=run_id,
        p=project,
    )
    return {"summary": None, "infra": None} if row.empty else dict(row.iloc[0])


@_cached
def baseline_of(url: str, project: str, run_id: str) -> str | None:
    """The run a candidate is judged against: its set's ``main`` tag, its last gate, or the previous run."""
    found = _frame(
        url,
        """
        WITH c AS (SELECT r.id, r.project, r.started_at, r.eval_set_id, s.name FROM eval_runs r
                   JOIN eval_sets s ON s.id = r.eval_set_id WHERE r.id = CAST(:id AS uuid)
                   AND r.project = :p)
        SELECT coalesce(
          (SELECT t.run_id FROM eval_tags t, c WHERE t.project = c.project AND t.eval_set_name = c.name
             AND t.tag = 'main' AND t.run_id <> c.id),
          (SELECT g.baseline_run_id FROM gate_reports g, c WHERE g.candidate_run_id = c.id
             AND g.project = c.project ORDER BY g.created_at DESC LIMIT 1),
          (SELECT r.id FROM eval_runs r JOIN eval_sets s ON s.id = r.eval_set_id, c
             WHERE s.name = c.name AND r.project = c.project AND r.started_at < c.started_at
             AND r.status = 'completed' ORDER BY r.started_at DESC LIMIT 1))::text AS baseline
        """,
        id=run_id,
        p=project,
    )
    value = None if found.empty else found["baseline"].iloc[0]
    return None if value is None or pd.isna(value) else str(value)


@_cached
def latest_gates(url: str, project: str) -> pd.DataFrame:
    """The newest gate verdict of each eval set, with how many cells regressed."""
    return _frame(
        url,
        """
        SELECT DISTINCT ON (g.eval_set_name) g.eval_set_name, g.verdict, g.created_at,
          coalesce(b.label, left(b.id::text, 8)) AS baseline,
          coalesce(c.label, left(c.id::text, 8)) AS candidate,
          (SELECT count(*) FROM jsonb_array_elements(g.report->'comparisons') x
             WHERE x->>'regression' = 'true') AS num_regressions
        FROM gate_reports g JOIN eval_runs b ON b.id = g.baseline_run_id
        JOIN eval_runs c ON c.id = g.candidate_run_id
        WHERE g.project = :p ORDER BY g.eval_set_name, g.created_at DESC
        """,
        p=project,
    )


@_cached
def gate_report(url: str, project: str, baseline_run_id: str, candidate_run_id: str) -> dict[str, Any] | None:
    """The newest stored gate report of ``project`` of exactly this baseline and candidate, if any."""
    found = _frame(
        url,
        "SELECT report FROM gate_reports WHERE baseline_run_id = CAST(:b AS uuid)"
        " AND candidate_run_id = CAST(:c AS uuid) AND project = :p ORDER BY created_at DESC LIMIT 1",
        b=baseline_run_id,
        c=candidate_run_id,
        p=project,
    )
    return None if found.empty else cast(dict[str, Any], found["report"].iloc[0])


@_cached
def metric_trend(url: str, project: str, eval_set_name: str) -> pd.DataFrame:
    """Each completed run's overall mean and interval per metric, oldest first."""
    return _frame(
        url,
        """
        SELECT r.id::text AS run_id, coalesce(r.label, left(r.id::text, 8)) AS label, r.started_at,
               m.key AS metric, (m.value->>'mean')::float AS mean,
               (m.value->>'ci_low')::float AS ci_low, (m.value->>'ci_high')::float AS ci_high
        FROM eval_runs r JOIN eval_sets s ON s.id = r.eval_set_id
        CROSS JOIN LATERAL jsonb_each(r.summary->'overall') m
        WHERE r.project = :p AND s.name = :set_name AND r.status = 'completed' AND r.summary IS NOT NULL
        ORDER BY r.started_at
        """,
        p=project,
        set_name=eval_set_name,
    )


@_cached
def flipped_cases(url: str, project: str, baseline_run_id: str, candidate_run_id: str) -> pd.DataFrame:
    """Cases (matched by case key, first repeat) that passed a metric in the baseline and failed it now."""
    return _frame(
        url,
        """
        WITH b AS (SELECT c.case_key, c.scenario, c.question, c.reference_answer, r.passed, r.response,
                          r.retrieved_ids, r.trace_id
                   FROM eval_results r JOIN eval_cases c ON c.id = r.case_id
                   JOIN eval_runs u ON u.id = r.run_id
                   WHERE r.run_id = CAST(:b AS uuid) AND r.repeat = 0 AND u.project = :p),
             k AS (SELECT c.case_key, c.scenario, c.question, c.reference_answer, r.passed, r.response,
                          r.retrieved_ids, r.trace_id
                   FROM eval_results r JOIN eval_cases c ON c.id = r.case_id
                   JOIN eval_runs u ON u.id = r.run_id
                   WHERE r.run_id = CAST(:c AS uuid) AND r.repeat = 0 AND u.project = :p)
        SELECT k.case_key, k.scenario, m.key AS metric, coalesce(k.question, b.question) AS question,
               coalesce(k.reference_answer, b.reference_answer) AS reference_answer,
               b.response AS baseline_response, k.response AS candidate_response,
               b.retrieved_ids AS baseline_retrieved_ids, k.retrieved_ids AS candidate_retrieved_ids,
               b.trace_id AS baseline_trace_id, k.trace_id AS candidate_trace_id
        FROM b JOIN k USING (case_key) CROSS JOIN LATERAL jsonb_each(b.passed) m
        WHERE m.value = 'true'::jsonb AND k.passed -> m.key = 'false'::jsonb
        ORDER BY k.scenario, k.case_key, m.key
        """,
        b=baseline_run_id,
        c=candidate_run_id,
        p=project,
    )


# --- production traffic --------------------------------------------------------------------------

WINDOW = "start_time >= now() - make_interval(hours => :hours)"
EVAL_FILTER = "(:include_eval OR eval_run_id IS NULL)"


@_cached
def cost_per_day(url: str, project: str, hours: int, dimension: str, include_eval: bool) -> pd.DataFrame:
    """Spend per UTC day split by model, tenant or feature."""
    column = COST_DIMENSIONS[dimension]
    return _frame(
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


@_cached
def traffic_per_day(url: str, project: str, hours: int, include_eval: bool) -> pd.DataFrame:
    """Requests (root spans) and failed requests per UTC day."""
    return _frame(
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


@_cached
def trace_filter_options(url: str, project: str, hours: int) -> dict[str, list[str]]:
    """Models, tenants, features and eval runs seen in the window, for the filter boxes."""
    found = _frame(
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


@_cached
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
    return _frame(
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


@_cached
def trace_spans(url: str, project: str, trace_id: str) -> pd.DataFrame:
    """The spans of one trace of ``project`` in start order, with their attributes."""
    return _frame(
        url,
        "SELECT span_id, parent_span_id, name, start_time, end_time, duration_ms, status_code,"
        " status_message,"
        " service_name, model, input_tokens, output_tokens, cost_usd, tenant, feature, eval_run_id,"
        " attributes, events FROM spans WHERE trace_id = :t AND project = :p ORDER BY start_time, span_id",
        t=trace_id,
        p=project,
    )


@_cached
def questions(url: str, project: str, trace_ids: tuple[str, ...]) -> dict[str, str | None]:
    """The user question of each trace of ``project`` (see ``evallens.cases.trace_questions``)."""
    with session(url) as db:
        return cases.trace_questions(db, trace_ids, project)


# --- serving metrics -----------------------------------------------------------------------------


@_cached
def metrics_window(url: str, project: str, hours: int) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """The ``hours`` before the newest metric sample of ``project``, or None without samples."""
    found = _frame(url, "SELECT max(time) AS end_time FROM metric_samples WHERE project = :p", p=project)
    end = found["end_time"].iloc[0]
    return None if end is None or pd.isna(end) else (end - pd.Timedelta(hours=hours), end)


@_cached
def gauge_series(
    url: str, project: str, start: pd.Timestamp, end: pd.Timestamp, bucket_s: int
) -> pd.DataFrame:
    """Mean of each gauge of ``project`` per time bucket."""
    return _frame(
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


@_cached
def counter_increases(
    url: str, project: str, start: pd.Timestamp, end: pd.Timestamp, bucket_s: int
) -> pd.DataFrame:
    """Increase of each counter series of ``project`` per time bucket: last value minus the previous
    bucket's (a reset counts from zero)."""
    return _frame(
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


@_cached
def run_windows(url: str, project: str, start: pd.Timestamp, end: pd.Timestamp) -> pd.DataFrame:
    """Eval runs that overlap the window, as bands from start to finish."""
    return _frame(
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


# --- bad production cases ------------------------------------------------------------------------

BAD_TRACES_SQL = f"""
WITH t AS (
  SELECT trace_id, min(start_time) AS start_time,
         max(duration_ms) FILTER (WHERE parent_span_id IS NULL) AS latency_ms,
         sum(cost_usd) AS cost_usd, max(model) AS model, max(tenant) AS tenant, max(feature) AS feature,
         bool_or(status_code = 2) AS error,
         coalesce(bool_or(attributes -> :a_degraded = 'true'), false) AS degraded,
         coalesce(bool_or(attributes -> :a_timeout = 'true'), false) AS timeout,
         bool_or(attributes ? :a_docs OR attributes ? :a_doc0) AS cited,
         bool_or(model IS NOT NULL) AS answered,
         min(CASE WHEN jsonb_typeof(attributes -> :a_feedback) = 'number'
             THEN (attributes ->> :a_feedback)::float END) AS own_feedback,
         bool_or(eval_run_id IS NOT NULL OR attributes ? :a_feedback_trace) AS excluded
  FROM spans WHERE project = :p AND {WINDOW} GROUP BY trace_id),
f AS (
  SELECT attributes ->> :a_feedback_trace AS trace_id, min((attributes ->> :a_feedback)::float) AS score
  FROM spans WHERE project = :p AND {WINDOW} AND attributes ? :a_feedback_trace
    AND jsonb_typeof(attributes -> :a_feedback) = 'number' GROUP BY 1),
prod AS (
  SELECT t.*, least(t.own_feedback, f.score) AS feedback_score
  FROM t LEFT JOIN f USING (trace_id) WHERE NOT t.excluded AND t.latency_ms IS NOT NULL),
lim AS (
  SELECT count(*) AS n, percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS latency_p50,
         percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS latency_p95,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY cost_usd) AS cost_p50,
         percentile_cont(0.95) WITHIN GROUP (ORDER BY cost_usd) AS cost_p95 FROM prod),
flagged AS (
  SELECT prod.*, coalesce(feedback_score < 0, false) AS negative_feedback,
         answered AND NOT cited AS no_citations,
         (lim.n >= :min_traces AND latency_ms > greatest(lim.latency_p95, 2 * lim.latency_p50))
           AS latency_outlier,
         coalesce(lim.n >= :min_traces AND cost_usd > greatest(lim.cost_p95, 2 * lim.cost_p50), false)
           AS cost_outlier
  FROM prod, lim)
SELECT *, 3 * negative_feedback::int + 3 * error::int + 2 * timeout::int + 2 * degraded::int
          + no_citations::int + latency_outlier::int + cost_outlier::int AS badness
FROM flagged
WHERE negative_feedback OR error OR timeout OR degraded OR no_citations OR latency_outlier OR cost_outlier
ORDER BY badness DESC, start_time DESC LIMIT :limit
"""


@_cached
def bad_traces(url: str, project: str, hours: int, limit: int = 200) -> pd.DataFrame:
    """Production traces (never eval traffic) with negative feedback, failures or outliers, worst first.

    Badness: 3 for negative feedback or an error, 2 for a timeout or a degraded answer, 1 each for an
    answer citing no documents and for latency or cost above max(p95, 2 x median) of the window.
    """
    return _frame(url, BAD_TRACES_SQL, p=project, hours=hours, limit=limit, min_traces=20)


@_cached
def eval_sets(url: str, project: str) -> pd.DataFrame:
    """The latest version of each eval set with its number of cases and of cases awaiting review."""
    return _frame(
        url,
        """
        SELECT DISTINCT ON (s.name) s.name, s.version, count(c.id) AS num_cases,
               count(c.id) FILTER (WHERE c.status = 'needs_review') AS num_needs_review
        FROM eval_sets s LEFT JOIN eval_cases c ON c.eval_set_id = s.id
        WHERE s.project = :p GROUP BY s.id ORDER BY s.name, s.version DESC
        """,
        p=project,
    )


@_cached
def scenarios(url: str, project: str, eval_set_name: str) -> list[str]:
    """Scenarios used by the latest version of a set."""
    found = _frame(
        url,
        "SELECT DISTINCT c.scenario FROM eval_cases c WHERE c.eval_set_id = (SELECT id FROM eval_sets"
        " WHERE project = :p AND name = :n ORDER BY version DESC LIMIT 1) ORDER BY 1",
        p=project,
        n=eval_set_name,
    )
    return [str(value) for value in found["scenario"]]


# --- the collector's quarantine ------------------------------------------------------------------


@_cached
def quarantine(url: str, project: str, limit: int) -> tuple[int, pd.DataFrame]:
    """How many spans of ``project`` the collector quarantined, and the newest ``limit`` of them."""
    total = _frame(url, "SELECT count(*) AS n FROM collector_quarantine WHERE project = :p", p=project)
    rows = _frame(
        url,
        """
        SELECT id, quarantined_at, trace_id, span_id, span->>'name' AS name, reason,
               span->>'service_name' AS service_name
        FROM collector_quarantine WHERE project = :p ORDER BY id DESC LIMIT :limit
        """,
        p=project,
        limit=limit,
    )
    return int(total["n"].iloc[0]), rows
