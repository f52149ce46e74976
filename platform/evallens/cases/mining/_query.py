"""Two SQL passes: the window's count and exact latency and cost percentiles, from hourly histograms
and the few summaries of the buckets the percentiles fall in (migration 0010); then per-trace facts of
traces that may be bad, from their summaries, with their question and answer text from their spans.

Production means a trace that answered a user: it carries a user question (``asked``: a span with
``gen_ai.input.messages`` or ``input.value``, or a GenAI content log event of direction input; migration
0008), a root span, and no eval run id on any span. Knowledge-base uploads and other traffic without a
question are not production. Feedback spans (those naming a target trace) are joined onto the trace
they rate and are never candidates themselves. Chat content that clients sent as log events
(``genai_content``) is joined onto its trace: the messages of the trace's earliest span that has any.
Both passes read partial indexes of the production summaries alone (index-only scans).
"""

import json
import math
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import text
from sqlalchemy.orm import Session

from evallens.telemetry import attributes as attr

# A loose pre-filter for answers that might refuse or not know; Python decides exactly (signals.py).
# Migration 0006's trigger applies it at ingest (``trace_summaries.refusal_hint``): change both together.
REFUSAL_HINT = r"sorry|can.?t|cannot|unable|not able|don.?t know|do not know|no information|not sure|decline"

PARAMS = {
    "a_in": attr.GEN_AI_INPUT_MESSAGES,
    "a_in_oi": attr.INPUT_VALUE,
    "a_out": attr.GEN_AI_OUTPUT_MESSAGES,
    "a_out_oi": attr.OUTPUT_VALUE,
    "refusal_hint": REFUSAL_HINT,
}


def _first(name: str) -> str:
    # as text (``->>``): a JSON string's content, any other value's JSON, which Python parses once
    # (``messages.first_text``) instead of the driver decoding the JSON and Python the string again
    return f"(array_agg(attributes ->> :{name} ORDER BY start_time) FILTER (WHERE attributes ? :{name}))[1]"


# Per-trace facts come from ``trace_summaries`` (kept by the spans trigger, migration 0006, which also
# folds the loose refusal pattern into ``refusal_hint``); spans are read only for the flagged traces' text.
PRODUCTION_TRACE = "asked AND eval_run_id IS NULL AND rated_trace_id IS NULL AND latency_ms IS NOT NULL"
PRODUCTION = f"project = :p AND start_time >= :since AND {PRODUCTION_TRACE}"
MEASURES = ("latency_ms", "cost_usd")
QUANTILES = (0.5, 0.95)
HOUR = "date_trunc('hour', CAST(:since AS timestamptz), 'UTC')"


def _ranked(measure: str) -> str:
    """The window's production count for ``measure`` and the values at the ranks its percentiles need.

    The counts per bucket come from ``production_histograms`` (migration 0010) from the window's first
    hour on, less the traces of that hour before the window; a rank's value is read from its bucket's
    traces alone (``ix_trace_summaries_production_<measure>``), one scan per bucket however many of the
    ranks it holds (the index is in start order: a scan reads every trace of the bucket in the window).
    Buckets never cross values: they grow with the value, so the value at a rank is the one
    percentile_cont would pick from a full sort."""
    bucket = f"evallens_log_bucket({measure})"
    ranks = ", ".join(
        f"({function}({q} * CAST(total - 1 AS float8)))" for q in QUANTILES for function in ("floor", "ceil")
    )
    return f"""
{measure}_counts AS (
  SELECT bucket, sum(num) AS n FROM (
    SELECT bucket, num_traces AS num FROM production_histograms
    WHERE project = :p AND measure = '{measure}' AND hour >= {HOUR}
    UNION ALL
    SELECT {bucket}, -1 FROM trace_summaries
    WHERE project = :p AND {PRODUCTION_TRACE} AND {measure} IS NOT NULL AND start_time >= {HOUR}
      AND start_time < :since) c
  GROUP BY bucket HAVING sum(num) > 0),
{measure}_cum AS (
  SELECT bucket, n, sum(n) OVER (ORDER BY bucket) - n AS below, sum(n) OVER () AS total
  FROM {measure}_counts),
{measure}_ranks AS (
  SELECT DISTINCT CAST(r AS bigint) AS r FROM (SELECT total FROM {measure}_cum LIMIT 1) t,
    LATERAL (VALUES {ranks}) AS x (r)),
{measure}_wanted AS (
  SELECT bucket, below, min(r) AS low, max(r) AS high
  FROM {measure}_ranks JOIN {measure}_cum ON r >= below AND r < below + n GROUP BY bucket, below),
{measure}_values AS (
  SELECT v.r, v.value FROM {measure}_wanted w CROSS JOIN LATERAL (
    SELECT w.low + row_number() OVER (ORDER BY value) - 1 AS r, value FROM (
      SELECT {measure} AS value FROM trace_summaries
      WHERE {PRODUCTION} AND {measure} IS NOT NULL AND {bucket} = w.bucket
      ORDER BY {measure} OFFSET w.low - w.below LIMIT w.high - w.low + 1) b) v
  WHERE v.r IN (SELECT r FROM {measure}_ranks))"""


# The window's production count and, per measure, the values at the ranks its exact percentiles need,
# in one statement (one snapshot): (measure, total, rank, value) rows, a measure with no rank once.
LIMITS_SQL = (
    "WITH"
    + ",".join(_ranked(measure) for measure in MEASURES)
    + "\n"
    + "\nUNION ALL\n".join(
        f"SELECT '{measure}' AS measure, t.total, v.r, v.value FROM"
        f" (SELECT coalesce(sum(n), 0) AS total FROM {measure}_counts) t LEFT JOIN {measure}_values v ON true"
        for measure in MEASURES
    )
)


def _limits(rows: Any) -> dict[str, Any]:
    """``num_traces`` and ``<measure>_p50`` / ``_p95`` as percentile_cont gives them (None when empty)."""
    found: dict[str, Any] = {}
    for measure in MEASURES:
        mine = [row for row in rows if row["measure"] == measure]
        total = int(mine[0]["total"])
        values = {int(row["r"]): float(row["value"]) for row in mine if row["r"] is not None}
        name = measure.removesuffix("_ms").removesuffix("_usd")
        for q in QUANTILES:
            found[f"{name}_p{round(q * 100)}"] = _interpolated(values, q, total) if total else None
        if measure == "latency_ms":
            found["num_traces"] = total
    return found


def _interpolated(values: dict[int, float], q: float, total: int) -> float:
    """percentile_cont's arithmetic (PostgreSQL's ``float8_lerp``) on the values at its two ranks."""
    position = q * (total - 1)
    first, second = math.floor(position), math.ceil(position)
    if first == second:
        return values[first]
    return values[first] + (values[second] - values[first]) * (position - first)


# The text of the flagged traces comes from their spans in the same statement. Each trace's spans lie
# between its summary's start and end: bounding the lookup by them lets PostgreSQL open only that
# day's partition per trace, however wide the window.
FLAGGED_SQL = f"""
WITH f AS (
  SELECT rated_trace_id AS trace_id, min(rating) AS score,
    (array_agg(rating_comment ORDER BY rating) FILTER (WHERE rating_comment IS NOT NULL))[1] AS comment
  FROM trace_summaries WHERE project = :p AND start_time >= :since AND rated_trace_id IS NOT NULL
    AND rating IS NOT NULL GROUP BY 1),
prod AS (
  SELECT t.trace_id, t.start_time, t.end_time, t.latency_ms, t.cost_usd, t.error, t.degraded, t.timeout,
    t.guarded, t.rag, t.cited, t.refusal_hint, least(t.own_feedback, f.score) AS feedback_score,
    f.comment AS feedback_comment
  FROM trace_summaries t LEFT JOIN f USING (trace_id) WHERE {PRODUCTION.replace("project", "t.project")}),
lim AS (
  SELECT CAST(:num_traces AS bigint) >= :min_traces AS enough, CAST(:latency_p50 AS float8) AS latency_p50,
    CAST(:latency_p95 AS float8) AS latency_p95, CAST(:cost_p50 AS float8) AS cost_p50,
    CAST(:cost_p95 AS float8) AS cost_p95),
flagged AS (
  SELECT prod.*,
    coalesce(enough AND latency_ms > greatest(latency_p95, 2 * latency_p50), false) AS latency_outlier,
    coalesce(enough AND cost_usd > greatest(cost_p95, 2 * cost_p50), false) AS cost_outlier,
    rag AND NOT cited AND NOT guarded AS no_citations
  FROM prod, lim),
top AS (
  SELECT * FROM flagged
  WHERE coalesce(feedback_score < 0, false) OR error OR timeout OR degraded OR no_citations
     OR latency_outlier OR cost_outlier OR (NOT guarded AND refusal_hint)
     OR (NOT guarded AND EXISTS (
       SELECT 1 FROM genai_content g WHERE g.project = :p AND g.trace_id = flagged.trace_id
         AND g.time >= :since AND g.direction = 'output' AND g.messages::text ~* :refusal_hint))
  ORDER BY start_time DESC LIMIT :max_traces)
SELECT top.trace_id, top.start_time, top.latency_ms, top.cost_usd, top.error, top.degraded, top.timeout,
  top.guarded, top.no_citations, top.latency_outlier, top.cost_outlier, top.feedback_score,
  top.feedback_comment, x.input_messages, x.input_value, x.output_messages, x.output_value
FROM top CROSS JOIN LATERAL (
  SELECT {_first("a_in")} AS input_messages, {_first("a_in_oi")} AS input_value,
    {_first("a_out")} AS output_messages, {_first("a_out_oi")} AS output_value
  FROM spans s WHERE s.project = :p AND s.trace_id = top.trace_id
    AND s.start_time BETWEEN top.start_time AND greatest(top.end_time, top.start_time)) AS x
ORDER BY top.start_time DESC
"""
# Content that arrived as log events: per trace, the messages of its earliest span that has any.
EVENTS_SQL = """
SELECT DISTINCT ON (trace_id) trace_id, input_messages AS event_input, output_messages AS event_output
FROM (
  SELECT trace_id, span_id, min(time) AS time,
    jsonb_agg(m ORDER BY time, id, ord) FILTER (WHERE direction = 'input') AS input_messages,
    jsonb_agg(m ORDER BY time, id, ord) FILTER (WHERE direction = 'output') AS output_messages
  FROM genai_content, jsonb_array_elements(messages) WITH ORDINALITY AS x(m, ord)
  WHERE project = :p AND time >= :since
    AND trace_id = ANY(ARRAY(SELECT jsonb_array_elements_text(CAST(:trace_ids AS jsonb))))
  GROUP BY trace_id, span_id) per_span
ORDER BY trace_id, time
"""


class TraceFacts(NamedTuple):
    """What the spans of one production trace say, as far as mining needs it (a tuple: a window builds
    up to ``cases_max_traces`` of them per view)."""

    trace_id: str
    start_time: datetime
    latency_ms: float
    cost_usd: float | None
    error: bool
    degraded: bool
    timeout: bool
    guarded: bool
    no_citations: bool
    latency_outlier: bool
    cost_outlier: bool
    feedback_score: float | None
    feedback_comment: str | None
    question_values: tuple[Any, ...]
    answer_values: tuple[Any, ...]


def flagged_traces(
    session: Session, project: str, since: datetime, *, min_traces: int, max_traces: int
) -> tuple[list[TraceFacts], int]:
    """Production traces since ``since`` with any sign of trouble, newest first; and how many were seen."""
    params = {**PARAMS, "p": project, "since": since, "min_traces": min_traces, "max_traces": max_traces}
    limits = _limits(session.execute(text(LIMITS_SQL), params).mappings().all())
    num_traces = int(limits["num_traces"])
    rows = session.execute(text(FLAGGED_SQL), {**params, **limits}).all()
    trace_ids = json.dumps([row[0] for row in rows])  # one parameter, not a 10,000-item array
    events = {
        trace_id: (event_input, event_output)
        for trace_id, event_input, event_output in session.execute(
            text(EVENTS_SQL), {**params, "trace_ids": trace_ids}
        )
    }
    no_events = (None, None)
    # FLAGGED_SQL's first columns are TraceFacts' fields, in order: reading rows by position, not by name
    facts = [
        TraceFacts._make((*row[:13], (*row[13:15], event_input), (*row[15:], event_output)))
        for row in rows
        for event_input, event_output in [events.get(row[0], no_events)]
    ]
    return facts, num_traces
