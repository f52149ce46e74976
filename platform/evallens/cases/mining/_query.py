"""Two SQL passes over a window's trace summaries: its count and percentiles, then per-trace facts of
traces that may be bad with their question and answer text from their spans.

Production means a trace that answered a user: it carries a user question (``asked``: a span with
``gen_ai.input.messages`` or ``input.value``, or a GenAI content log event of direction input; migration
0008), a root span, and no eval run id on any span. Knowledge-base uploads and other traffic without a
question are not production. Feedback spans (those naming a target trace) are joined onto the trace
they rate and are never candidates themselves. Chat content that clients sent as log events
(``genai_content``) is joined onto its trace: the messages of the trace's earliest span that has any.
Both passes read the partial index ``ix_trace_summaries_production`` alone (an index-only scan).
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

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
    return f"(array_agg(attributes -> :{name} ORDER BY start_time) FILTER (WHERE attributes ? :{name}))[1]"


# Per-trace facts come from ``trace_summaries`` (kept by the spans trigger, migration 0006, which also
# folds the loose refusal pattern into ``refusal_hint``); spans are read only for the flagged traces' text.
PRODUCTION = (
    "project = :p AND start_time >= :since AND asked AND eval_run_id IS NULL AND rated_trace_id IS NULL"
    " AND latency_ms IS NOT NULL"
)
# The window's count and percentiles first, in a scan of two columns: the flagged query then reads
# the summaries once, with no copy of the window kept for a second pass. Asking for the rows in the
# index's order makes the planner read the production index alone (its pages are a fraction of the
# table's) where it would otherwise scan the table for a window holding most rows.
LIMITS_SQL = f"""
SELECT count(*) AS num_traces,
  percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS latency_p50,
  percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS latency_p95,
  percentile_cont(0.5) WITHIN GROUP (ORDER BY cost_usd) AS cost_p50,
  percentile_cont(0.95) WITHIN GROUP (ORDER BY cost_usd) AS cost_p95
FROM (SELECT latency_ms, cost_usd FROM trace_summaries WHERE {PRODUCTION} ORDER BY project, start_time) w
"""
# The percentiles sort two numbers per production trace of the window: in memory up to a few million
# (PostgreSQL's default 4 MB spills a 30-day window to disk). Local to the caller's transaction.
SORT_MEMORY_SQL = "SELECT set_config('work_mem', '64MB', true)"
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
    enough AND latency_ms > greatest(latency_p95, 2 * latency_p50) AS latency_outlier,
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
SELECT top.*, x.* FROM top CROSS JOIN LATERAL (
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
  WHERE project = :p AND time >= :since AND trace_id = ANY(CAST(:trace_ids AS text[]))
  GROUP BY trace_id, span_id) per_span
ORDER BY trace_id, time
"""


@dataclass(frozen=True)
class TraceFacts:
    """What the spans of one production trace say, as far as mining needs it."""

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
    session.execute(text(SORT_MEMORY_SQL))
    limits = session.execute(text(LIMITS_SQL), params).mappings().one()
    num_traces = int(limits["num_traces"])
    rows = session.execute(text(FLAGGED_SQL), {**params, **limits}).mappings().all()
    trace_ids = [row["trace_id"] for row in rows]
    events = {
        found["trace_id"]: found
        for found in session.execute(text(EVENTS_SQL), {**params, "trace_ids": trace_ids}).mappings().all()
    }
    no_events = dict.fromkeys(("event_input", "event_output"))
    facts = [
        TraceFacts(
            trace_id=row["trace_id"],
            start_time=row["start_time"],
            latency_ms=float(row["latency_ms"]),
            cost_usd=row["cost_usd"],
            error=bool(row["error"]),
            degraded=bool(row["degraded"]),
            timeout=bool(row["timeout"]),
            guarded=bool(row["guarded"]),
            no_citations=bool(row["no_citations"]),
            latency_outlier=bool(row["latency_outlier"]),
            cost_outlier=bool(row["cost_outlier"]),
            feedback_score=row["feedback_score"],
            feedback_comment=row["feedback_comment"],
            question_values=(row["input_messages"], row["input_value"], sent["event_input"]),
            answer_values=(row["output_messages"], row["output_value"], sent["event_output"]),
        )
        for row in rows
        for sent in [events.get(row["trace_id"], no_events)]
    ]
    return facts, num_traces
