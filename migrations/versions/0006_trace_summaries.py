"""Trace summaries, daily rollups and filter values, kept by a trigger on spans; backfilled here.

A statement-level ``AFTER INSERT`` trigger on ``spans`` folds the rows each statement stored (its
transition table: only rows really inserted, so a resend skipped by ``ON CONFLICT DO NOTHING`` is
never counted twice) into ``trace_summaries`` (one row per trace), ``span_rollups`` (spend and
requests per day) and ``span_dimensions`` (filter values per day), in the same transaction. Every
column merges by sum, min, max or or, so spans of one trace arriving in several requests, in any
order, end in the row that folding them all at once gives. Attribute names are written out: this is
the schema as of this revision.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 03:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

REFUSAL_HINT = r"sorry|can.?t|cannot|unable|not able|don.?t know|do not know|no information|not sure|decline"
TARGET = "'evallens.feedback.trace_id'"
SCORE = "'evallens.feedback.score'"
NUMERIC_SCORE = f"jsonb_typeof(attributes -> {SCORE}) = 'number'"


def _cited(name: str) -> str:
    return f"(attributes ? '{name}' AND attributes ->> '{name}' NOT IN ('', '[]'))"


def _flag(*names: str) -> str:
    either = " OR ".join(f"attributes -> '{name}' = 'true'::jsonb" for name in names)
    return f"coalesce(bool_or({either}), false)"


SUMMARY_COLUMNS = (
    "project, trace_id, start_time, end_time, latency_ms, root_name, num_spans, error, model, tenant,"
    " user_id, feature, eval_run_id, input_tokens, output_tokens, cost_usd, degraded, timeout, guarded,"
    " rag, cited, cache_hit, refusal_hint, own_feedback, rated_trace_id, rating, rating_comment"
)
SUMMARY_VALUES = f"""
  project, trace_id, min(start_time), max(end_time),
  max(duration_ms) FILTER (WHERE parent_span_id IS NULL), max(name) FILTER (WHERE parent_span_id IS NULL),
  count(*), bool_or(status_code = 2), max(model), max(tenant), max(user_id), max(feature),
  max(eval_run_id), sum(input_tokens), sum(output_tokens), sum(cost_usd),
  {_flag("evallens.degraded")}, {_flag("evallens.timeout")},
  {_flag("evallens.guard.scope.declined", "evallens.guard.safety.refused")},
  coalesce(bool_or(name = 'retrieval' OR attributes ->> 'gen_ai.operation.name' = 'retrieval'
    OR attributes ->> 'openinference.span.kind' = 'RETRIEVER' OR attributes ? 'evallens.retrieval.chunk_ids'
    OR attributes ? 'gen_ai.retrieval.documents' OR attributes ? 'retrieval.documents.0.document.id'), false),
  coalesce(bool_or(attributes ? 'retrieval.documents.0.document.id'
    OR {_cited("evallens.retrieval.chunk_ids")} OR {_cited("gen_ai.retrieval.documents")}), false),
  {_flag("evallens.cache.exact.hit", "evallens.cache.semantic.hit")},
  coalesce(bool_or((attributes ? 'gen_ai.output.messages' OR attributes ? 'output.value')
    AND coalesce((attributes -> 'gen_ai.output.messages')::text, '')
        || coalesce((attributes -> 'output.value')::text, '') ~* '{REFUSAL_HINT}'), false),
  min(CASE WHEN {NUMERIC_SCORE} AND NOT attributes ? {TARGET} THEN (attributes ->> {SCORE})::float END),
  max(attributes ->> {TARGET}),
  min((attributes ->> {SCORE})::float) FILTER (WHERE attributes ? {TARGET} AND {NUMERIC_SCORE}),
  (array_agg(attributes ->> 'evallens.feedback.comment' ORDER BY (attributes ->> {SCORE})::float)
    FILTER (WHERE attributes ? {TARGET} AND {NUMERIC_SCORE} AND attributes ? 'evallens.feedback.comment'))[1]
"""


def _add(column: str) -> str:
    return f"{column} = coalesce(s.{column} + excluded.{column}, s.{column}, excluded.{column})"


SUMMARY_MERGE = ", ".join(
    [
        "start_time = least(s.start_time, excluded.start_time)",
        "end_time = greatest(s.end_time, excluded.end_time)",
        *(f"{c} = greatest(s.{c}, excluded.{c})" for c in ("latency_ms", "root_name", "model", "tenant")),
        *(f"{c} = greatest(s.{c}, excluded.{c})" for c in ("user_id", "feature", "eval_run_id")),
        "rated_trace_id = greatest(s.rated_trace_id, excluded.rated_trace_id)",
        "num_spans = s.num_spans + excluded.num_spans",
        *(_add(column) for column in ("input_tokens", "output_tokens", "cost_usd")),
        *(f"{c} = s.{c} OR excluded.{c}" for c in ("error", "degraded", "timeout", "guarded", "rag")),
        *(f"{c} = s.{c} OR excluded.{c}" for c in ("cited", "cache_hit", "refusal_hint")),
        "own_feedback = least(s.own_feedback, excluded.own_feedback)",
        "rating = least(s.rating, excluded.rating)",
        "rating_comment = CASE WHEN excluded.rating < s.rating OR s.rating IS NULL"
        " THEN coalesce(excluded.rating_comment, s.rating_comment)"
        " ELSE coalesce(s.rating_comment, excluded.rating_comment) END",
    ]
)
DAY = "(start_time AT TIME ZONE 'UTC')::date"


def _fold(source: str) -> str:
    """The statements that fold the spans of ``source`` into the three tables."""
    return f"""
INSERT INTO trace_summaries AS s ({SUMMARY_COLUMNS})
SELECT {SUMMARY_VALUES} FROM {source} GROUP BY project, trace_id ORDER BY project, trace_id
ON CONFLICT (project, trace_id) DO UPDATE SET {SUMMARY_MERGE};
INSERT INTO span_rollups AS s (project, day, model, tenant, feature, eval, num_requests, num_errors, cost_usd)
SELECT project, {DAY}, coalesce(model, ''), coalesce(tenant, ''), coalesce(feature, ''),
  eval_run_id IS NOT NULL, count(*) FILTER (WHERE parent_span_id IS NULL),
  count(*) FILTER (WHERE parent_span_id IS NULL AND status_code = 2), sum(cost_usd)
FROM {source} GROUP BY 1, 2, 3, 4, 5, 6
HAVING count(*) FILTER (WHERE parent_span_id IS NULL) > 0 OR sum(cost_usd) IS NOT NULL
ORDER BY 1, 2, 3, 4, 5, 6
ON CONFLICT (project, day, model, tenant, feature, eval) DO UPDATE SET
  num_requests = s.num_requests + excluded.num_requests, num_errors = s.num_errors + excluded.num_errors,
  {_add("cost_usd")};
INSERT INTO span_dimensions (project, day, kind, value)
SELECT DISTINCT project, {DAY}, d.kind, d.value FROM {source}
CROSS JOIN LATERAL (VALUES ('model', model), ('tenant', tenant), ('feature', feature),
                           ('eval_run', eval_run_id)) AS d (kind, value)
WHERE d.value IS NOT NULL ORDER BY 1, 2, 3, 4
ON CONFLICT DO NOTHING;
"""


def upgrade() -> None:
    _create_tables()
    op.execute(
        "CREATE FUNCTION evallens_fold_spans() RETURNS trigger LANGUAGE plpgsql AS $fold$\n"
        f"BEGIN\n{_fold('new_spans')}\nRETURN NULL;\nEND\n$fold$"
    )
    op.execute(
        "CREATE TRIGGER spans_fold AFTER INSERT ON spans REFERENCING NEW TABLE AS new_spans"
        " FOR EACH STATEMENT EXECUTE FUNCTION evallens_fold_spans()"
    )
    op.execute(_fold("spans"))


def downgrade() -> None:
    op.execute("DROP TRIGGER spans_fold ON spans")
    op.execute("DROP FUNCTION evallens_fold_spans()")
    op.drop_table("span_dimensions")
    op.drop_table("span_rollups")
    op.drop_table("trace_summaries")


def _create_tables() -> None:
    timestamp = postgresql.TIMESTAMP(timezone=True)
    double: postgresql.DOUBLE_PRECISION[float] = postgresql.DOUBLE_PRECISION()
    op.create_table(
        "trace_summaries",
        sa.Column("project", sa.Text(), nullable=False),
        sa.Column("trace_id", sa.Text(), nullable=False),
        sa.Column("start_time", timestamp, nullable=False, comment="earliest span start"),
        sa.Column("end_time", timestamp, nullable=False, comment="latest span end"),
        sa.Column("latency_ms", double, nullable=True, comment="the root span's duration"),
        sa.Column("root_name", sa.Text(), nullable=True),
        sa.Column("num_spans", sa.Integer(), nullable=False),
        sa.Column("error", sa.Boolean(), nullable=False, comment="a span ended with status error"),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("tenant", sa.Text(), nullable=True),
        sa.Column("user_id", sa.Text(), nullable=True),
        sa.Column("feature", sa.Text(), nullable=True),
        sa.Column("eval_run_id", sa.Text(), nullable=True),
        sa.Column("input_tokens", sa.BigInteger(), nullable=True),
        sa.Column("output_tokens", sa.BigInteger(), nullable=True),
        sa.Column("cost_usd", double, nullable=True),
        sa.Column("degraded", sa.Boolean(), nullable=False),
        sa.Column("timeout", sa.Boolean(), nullable=False),
        sa.Column("guarded", sa.Boolean(), nullable=False, comment="the scope or safety guard declined"),
        sa.Column("rag", sa.Boolean(), nullable=False, comment="a span retrieved documents"),
        sa.Column("cited", sa.Boolean(), nullable=False, comment="a span names cited documents"),
        sa.Column(
            "cache_hit", sa.Boolean(), nullable=False, comment="answered from the exact or semantic cache"
        ),
        sa.Column(
            "refusal_hint", sa.Boolean(), nullable=False, comment="an answer loosely looks like a refusal"
        ),
        sa.Column("own_feedback", double, nullable=True, comment="lowest score on the trace"),
        sa.Column("rated_trace_id", sa.Text(), nullable=True, comment="the trace this feedback trace rates"),
        sa.Column("rating", double, nullable=True, comment="lowest score given to it"),
        sa.Column("rating_comment", sa.Text(), nullable=True, comment="the comment of that score"),
        sa.PrimaryKeyConstraint("project", "trace_id", name=op.f("pk_trace_summaries")),
    )
    op.create_index("ix_trace_summaries_project_start_time", "trace_summaries", ["project", "start_time"])
    op.create_index(
        "ix_trace_summaries_project_tenant_start_time", "trace_summaries", ["project", "tenant", "start_time"]
    )
    op.create_index(
        "ix_trace_summaries_project_eval_run_id",
        "trace_summaries",
        ["project", "eval_run_id"],
        postgresql_where=sa.text("eval_run_id IS NOT NULL"),
    )
    op.create_index(
        "ix_trace_summaries_project_errors",
        "trace_summaries",
        ["project", "start_time"],
        postgresql_where=sa.text("error"),
    )
    op.create_index(
        "ix_trace_summaries_project_rated_trace_id",
        "trace_summaries",
        ["project", "rated_trace_id"],
        postgresql_where=sa.text("rated_trace_id IS NOT NULL"),
    )
    op.create_table(
        "span_rollups",
        sa.Column("project", sa.Text(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("tenant", sa.Text(), nullable=False),
        sa.Column("feature", sa.Text(), nullable=False),
        sa.Column("eval", sa.Boolean(), nullable=False),
        sa.Column("num_requests", sa.BigInteger(), nullable=False),
        sa.Column("num_errors", sa.BigInteger(), nullable=False),
        sa.Column("cost_usd", double, nullable=True),
        sa.PrimaryKeyConstraint(
            "project", "day", "model", "tenant", "feature", "eval", name=op.f("pk_span_rollups")
        ),
    )
    op.create_table(
        "span_dimensions",
        sa.Column("project", sa.Text(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False, comment="model | tenant | feature | eval_run"),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("project", "day", "kind", "value", name=op.f("pk_span_dimensions")),
    )
