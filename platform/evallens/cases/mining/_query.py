"""One SQL pass over a window of production spans: per-trace facts of traces that may be bad.

Production means no span of the trace carries an eval run id; feedback spans (those naming a target
trace) are joined onto the trace they rate and are never candidates themselves. Chat content that
clients sent as log events (``genai_content``) is joined onto its trace: the messages of the
trace's earliest span that has any.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session

from evallens.telemetry import attributes as attr

# A loose pre-filter for answers that might refuse or not know; Python decides exactly (signals.py).
REFUSAL_HINT = r"sorry|can.?t|cannot|unable|not able|don.?t know|do not know|no information|not sure|decline"

PARAMS = {
    "a_degraded": attr.DEGRADED,
    "a_timeout": attr.TIMEOUT,
    "a_declined": attr.GUARD_SCOPE_DECLINED,
    "a_refused": attr.GUARD_SAFETY_REFUSED,
    "a_operation": attr.GEN_AI_OPERATION_NAME,
    "a_oi_kind": attr.OPENINFERENCE_SPAN_KIND,
    "a_chunks": attr.RETRIEVAL_CHUNK_IDS,
    "a_docs": attr.GEN_AI_RETRIEVAL_DOCUMENTS,
    "a_doc0": attr.retrieval_document_id(0),
    "a_feedback": attr.FEEDBACK_SCORE,
    "a_comment": attr.FEEDBACK_COMMENT,
    "a_target": attr.FEEDBACK_TARGET_TRACE_ID,
    "a_in": attr.GEN_AI_INPUT_MESSAGES,
    "a_in_oi": attr.INPUT_VALUE,
    "a_out": attr.GEN_AI_OUTPUT_MESSAGES,
    "a_out_oi": attr.OUTPUT_VALUE,
    "retrieval_op": attr.OPERATION_RETRIEVAL,
    "retrieval_span": attr.SPAN_RETRIEVAL,
    "oi_retriever": attr.OPENINFERENCE_KIND_RETRIEVER,
    "refusal_hint": REFUSAL_HINT,
}


def _first(name: str) -> str:
    return f"(array_agg(attributes -> :{name} ORDER BY start_time) FILTER (WHERE attributes ? :{name}))[1]"


def _cited(name: str) -> str:
    return f"(attributes ? :{name} AND attributes ->> :{name} NOT IN ('', '[]'))"


FLAGGED_SQL = f"""
WITH c AS (
  SELECT DISTINCT ON (trace_id) trace_id, input_messages AS event_input, output_messages AS event_output
  FROM (
    SELECT trace_id, span_id, min(time) AS time,
      jsonb_agg(m ORDER BY time, id, ord) FILTER (WHERE direction = 'input') AS input_messages,
      jsonb_agg(m ORDER BY time, id, ord) FILTER (WHERE direction = 'output') AS output_messages
    FROM genai_content, jsonb_array_elements(messages) WITH ORDINALITY AS x(m, ord)
    WHERE project = :p AND time >= :since GROUP BY trace_id, span_id) per_span
  ORDER BY trace_id, time),
t AS (
  SELECT trace_id, min(start_time) AS start_time,
    max(duration_ms) FILTER (WHERE parent_span_id IS NULL) AS latency_ms,
    sum(cost_usd) AS cost_usd, bool_or(status_code = 2) AS error,
    coalesce(bool_or(attributes -> :a_degraded = 'true'::jsonb), false) AS degraded,
    coalesce(bool_or(attributes -> :a_timeout = 'true'::jsonb), false) AS timeout,
    coalesce(bool_or(attributes -> :a_declined = 'true'::jsonb
                     OR attributes -> :a_refused = 'true'::jsonb), false) AS guarded,
    bool_or(name = :retrieval_span OR attributes ->> :a_operation = :retrieval_op
            OR attributes ->> :a_oi_kind = :oi_retriever OR attributes ? :a_chunks OR attributes ? :a_docs
            OR attributes ? :a_doc0) AS rag,
    bool_or(attributes ? :a_doc0 OR {_cited("a_chunks")} OR {_cited("a_docs")}) AS cited,
    min(CASE WHEN jsonb_typeof(attributes -> :a_feedback) = 'number' AND NOT attributes ? :a_target
        THEN (attributes ->> :a_feedback)::float END) AS own_feedback,
    bool_or(eval_run_id IS NOT NULL OR attributes ? :a_target) AS excluded,
    {_first("a_in")} AS input_messages, {_first("a_in_oi")} AS input_value,
    {_first("a_out")} AS output_messages, {_first("a_out_oi")} AS output_value
  FROM spans WHERE project = :p AND start_time >= :since GROUP BY trace_id),
f AS (
  SELECT attributes ->> :a_target AS trace_id, min((attributes ->> :a_feedback)::float) AS score,
    (array_agg(attributes ->> :a_comment ORDER BY (attributes ->> :a_feedback)::float)
       FILTER (WHERE attributes ? :a_comment))[1] AS comment
  FROM spans WHERE project = :p AND start_time >= :since AND attributes ? :a_target
    AND jsonb_typeof(attributes -> :a_feedback) = 'number' GROUP BY 1),
prod AS (
  SELECT t.*, least(t.own_feedback, f.score) AS feedback_score, f.comment AS feedback_comment,
    c.event_input, c.event_output
  FROM t LEFT JOIN f USING (trace_id) LEFT JOIN c USING (trace_id)
  WHERE NOT t.excluded AND t.latency_ms IS NOT NULL),
lim AS (
  SELECT count(*) AS num_traces,
    percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS latency_p50,
    percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS latency_p95,
    percentile_cont(0.5) WITHIN GROUP (ORDER BY cost_usd) AS cost_p50,
    percentile_cont(0.95) WITHIN GROUP (ORDER BY cost_usd) AS cost_p95 FROM prod),
flagged AS (
  SELECT prod.*, lim.*,
    lim.num_traces >= :min_traces AND latency_ms > greatest(lim.latency_p95, 2 * lim.latency_p50)
      AS latency_outlier,
    coalesce(lim.num_traces >= :min_traces AND cost_usd > greatest(lim.cost_p95, 2 * lim.cost_p50), false)
      AS cost_outlier,
    rag AND NOT cited AND NOT guarded AS no_citations
  FROM prod, lim)
SELECT * FROM flagged
WHERE coalesce(feedback_score < 0, false) OR error OR timeout OR degraded OR no_citations
   OR latency_outlier OR cost_outlier
   OR (NOT guarded
       AND coalesce(output_messages::text, '') || coalesce(output_value::text, '')
           || coalesce(event_output::text, '') ~* :refusal_hint)
ORDER BY start_time DESC LIMIT :max_traces
"""
COUNT_SQL = """
SELECT count(DISTINCT trace_id) FROM spans s WHERE project = :p AND start_time >= :since
  AND parent_span_id IS NULL AND NOT EXISTS (
    SELECT 1 FROM spans e WHERE e.trace_id = s.trace_id AND e.project = :p AND e.start_time >= :since
      AND (e.eval_run_id IS NOT NULL OR e.attributes ? :a_target))
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
    rows = session.execute(text(FLAGGED_SQL), params).mappings().all()
    num_traces = int(session.execute(text(COUNT_SQL), params).scalar_one())
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
            question_values=(row["input_messages"], row["input_value"], row["event_input"]),
            answer_values=(row["output_messages"], row["output_value"], row["event_output"]),
        )
        for row in rows
    ]
    return facts, num_traces
