"""Initial schema: spans (partitioned by day), metric samples, prices, evals, knowledge base.

Revision ID: 0001
Revises:
Create Date: 2026-11-30 00:12:26.219340
"""

from collections.abc import Sequence

import pgvector.sqlalchemy
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.create_table(
        "documents",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("project", sa.Text(), server_default="default", nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.Text(), nullable=False),
        sa.Column("metadata", postgresql.JSONB(astext_type=sa.Text()), server_default="{}", nullable=False),
        sa.Column(
            "updated_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_documents")),
    )
    op.create_table(
        "eval_sets",
        sa.Column("id", sa.Integer(), sa.Identity(always=False), nullable=False),
        sa.Column("project", sa.Text(), server_default="default", nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("source_path", sa.Text(), nullable=True),
        sa.Column(
            "created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_sets")),
        sa.UniqueConstraint(
            "project", "name", "content_hash", name=op.f("uq_eval_sets_project_name_content_hash")
        ),
        sa.UniqueConstraint("project", "name", "version", name=op.f("uq_eval_sets_project_name_version")),
    )
    op.create_table(
        "metric_samples",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("time", postgresql.TIMESTAMP(timezone=True), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("labels", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("value", sa.DOUBLE_PRECISION(), nullable=False),
        sa.Column("target", sa.Text(), nullable=False, comment="URL of the /metrics endpoint scraped"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_metric_samples")),
    )
    op.create_index("ix_metric_samples_name_time", "metric_samples", ["name", "time"], unique=False)
    op.create_table(
        "model_prices",
        sa.Column("id", sa.Integer(), sa.Identity(always=False), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("provider", sa.Text(), nullable=True),
        sa.Column("input_usd_per_mtok", sa.Numeric(precision=14, scale=6, asdecimal=False), nullable=True),
        sa.Column("output_usd_per_mtok", sa.Numeric(precision=14, scale=6, asdecimal=False), nullable=True),
        sa.Column("gpu_hour_usd", sa.Numeric(precision=14, scale=6, asdecimal=False), nullable=True),
        sa.Column("valid_from", postgresql.TIMESTAMP(timezone=True), nullable=False),
        sa.Column("valid_to", postgresql.TIMESTAMP(timezone=True), nullable=True),
        sa.CheckConstraint(
            "(input_usd_per_mtok IS NOT NULL AND output_usd_per_mtok IS NOT NULL)"
            " OR gpu_hour_usd IS NOT NULL",
            name=op.f("ck_model_prices_has_a_price"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_prices")),
        sa.UniqueConstraint("model", "valid_from", name=op.f("uq_model_prices_model_valid_from")),
    )
    op.create_table(
        "spans",
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("span_id", sa.String(length=16), nullable=False),
        sa.Column("start_time", postgresql.TIMESTAMP(timezone=True), nullable=False),
        sa.Column("end_time", postgresql.TIMESTAMP(timezone=True), nullable=False),
        sa.Column("duration_ms", sa.DOUBLE_PRECISION(), nullable=False),
        sa.Column("parent_span_id", sa.String(length=16), nullable=True),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("kind", sa.SmallInteger(), nullable=False, comment="OTLP SpanKind enum value"),
        sa.Column("service_name", sa.Text(), nullable=True),
        sa.Column("scope_name", sa.Text(), nullable=True),
        sa.Column("scope_version", sa.Text(), nullable=True),
        sa.Column("status_code", sa.SmallInteger(), nullable=False, comment="0 unset, 1 ok, 2 error"),
        sa.Column("status_message", sa.Text(), nullable=True),
        sa.Column("attributes", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("resource", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("events", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("project", sa.Text(), server_default="default", nullable=False),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("input_tokens", sa.BigInteger(), nullable=True),
        sa.Column("output_tokens", sa.BigInteger(), nullable=True),
        sa.Column("cost_usd", sa.DOUBLE_PRECISION(), nullable=True),
        sa.Column("tenant", sa.Text(), nullable=True),
        sa.Column("user_id", sa.Text(), nullable=True),
        sa.Column("feature", sa.Text(), nullable=True),
        sa.Column("eval_run_id", sa.Text(), nullable=True),
        sa.Column("eval_case_id", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("trace_id", "span_id", "start_time", name=op.f("pk_spans")),
        postgresql_partition_by="RANGE (start_time)",
    )
    op.create_index(
        "ix_spans_eval_run_id",
        "spans",
        ["eval_run_id"],
        unique=False,
        postgresql_where=sa.text("eval_run_id IS NOT NULL"),
    )
    op.create_index("ix_spans_project_start_time", "spans", ["project", "start_time"], unique=False)
    op.create_index("ix_spans_start_time", "spans", ["start_time"], unique=False)
    op.create_index("ix_spans_trace_id", "spans", ["trace_id"], unique=False)
    op.create_table(
        "chunks",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("document_id", sa.Text(), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("num_tokens", sa.Integer(), nullable=False),
        sa.Column("embedding", pgvector.sqlalchemy.vector.VECTOR(dim=384), nullable=False),
        sa.Column(
            "tsv",
            postgresql.TSVECTOR(),
            sa.Computed("to_tsvector('english', text)", persisted=True),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["documents.id"],
            name=op.f("fk_chunks_document_id_documents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chunks")),
    )
    op.create_index("ix_chunks_document_id", "chunks", ["document_id"], unique=False)
    op.create_index(
        "ix_chunks_embedding",
        "chunks",
        ["embedding"],
        unique=False,
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    op.create_index("ix_chunks_tsv", "chunks", ["tsv"], unique=False, postgresql_using="gin")
    op.create_table(
        "eval_cases",
        sa.Column("id", sa.Integer(), sa.Identity(always=False), nullable=False),
        sa.Column("eval_set_id", sa.Integer(), nullable=False),
        sa.Column("case_key", sa.Text(), nullable=False, comment="the case id written in the set file"),
        sa.Column("scenario", sa.Text(), nullable=False),
        sa.Column("question", sa.Text(), nullable=True),
        sa.Column("messages", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("reference_answer", sa.Text(), nullable=True),
        sa.Column(
            "required_facts",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'[]'::jsonb"),
            nullable=False,
        ),
        sa.Column(
            "reference_context_ids",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'[]'::jsonb"),
            nullable=False,
        ),
        sa.Column("expected_behavior", sa.Text(), nullable=False, comment="answer, decline or refuse"),
        sa.Column(
            "tags",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'[]'::jsonb"),
            nullable=False,
        ),
        sa.Column("status", sa.Text(), server_default="active", nullable=False),
        sa.Column("source_trace_id", sa.Text(), nullable=True),
        sa.Column("redactions", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.ForeignKeyConstraint(
            ["eval_set_id"],
            ["eval_sets.id"],
            name=op.f("fk_eval_cases_eval_set_id_eval_sets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_cases")),
        sa.UniqueConstraint("eval_set_id", "case_key", name=op.f("uq_eval_cases_eval_set_id_case_key")),
    )
    op.create_table(
        "eval_runs",
        sa.Column("id", sa.UUID(), nullable=False),
        sa.Column("project", sa.Text(), server_default="default", nullable=False),
        sa.Column("eval_set_id", sa.Integer(), nullable=False),
        sa.Column("label", sa.Text(), nullable=True),
        sa.Column("endpoint", sa.Text(), nullable=False),
        sa.Column("config", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("config_fingerprint", sa.Text(), nullable=False),
        sa.Column("git_sha", sa.Text(), nullable=True),
        sa.Column("status", sa.Text(), nullable=False, comment="running, completed or failed"),
        sa.Column("repeats", sa.Integer(), server_default="1", nullable=False),
        sa.Column("summary", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column(
            "infra",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="serving metrics of the run window",
        ),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column(
            "started_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.Column("finished_at", postgresql.TIMESTAMP(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["eval_set_id"], ["eval_sets.id"], name=op.f("fk_eval_runs_eval_set_id_eval_sets")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_runs")),
    )
    op.create_index("ix_eval_runs_config_fingerprint", "eval_runs", ["config_fingerprint"], unique=False)
    op.create_index(
        "ix_eval_runs_eval_set_id_started_at", "eval_runs", ["eval_set_id", "started_at"], unique=False
    )
    op.create_table(
        "eval_results",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("run_id", sa.UUID(), nullable=False),
        sa.Column("case_id", sa.Integer(), nullable=False),
        sa.Column("repeat", sa.Integer(), server_default="0", nullable=False),
        sa.Column("response", sa.Text(), nullable=True),
        sa.Column(
            "retrieved_ids",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'[]'::jsonb"),
            nullable=False,
        ),
        sa.Column(
            "scores",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column(
            "passed",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("latency_ms", sa.DOUBLE_PRECISION(), nullable=True),
        sa.Column("ttft_ms", sa.DOUBLE_PRECISION(), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("exact_cache_hit", sa.Boolean(), nullable=True),
        sa.Column("semantic_cache_hit", sa.Boolean(), nullable=True),
        sa.Column("degraded", sa.Boolean(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("trace_id", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["case_id"], ["eval_cases.id"], name=op.f("fk_eval_results_case_id_eval_cases")
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["eval_runs.id"], name=op.f("fk_eval_results_run_id_eval_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_results")),
        sa.UniqueConstraint(
            "run_id", "case_id", "repeat", name=op.f("uq_eval_results_run_id_case_id_repeat")
        ),
    )
    op.create_table(
        "eval_tags",
        sa.Column("project", sa.Text(), server_default="default", nullable=False),
        sa.Column("eval_set_name", sa.Text(), nullable=False),
        sa.Column("tag", sa.Text(), nullable=False),
        sa.Column("run_id", sa.UUID(), nullable=False),
        sa.Column(
            "created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["eval_runs.id"], name=op.f("fk_eval_tags_run_id_eval_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("project", "eval_set_name", "tag", name=op.f("pk_eval_tags")),
    )
    op.create_table(
        "gate_reports",
        sa.Column("id", sa.Integer(), sa.Identity(always=False), nullable=False),
        sa.Column("project", sa.Text(), server_default="default", nullable=False),
        sa.Column("eval_set_name", sa.Text(), nullable=False),
        sa.Column("baseline_run_id", sa.UUID(), nullable=False),
        sa.Column("candidate_run_id", sa.UUID(), nullable=False),
        sa.Column("verdict", sa.Text(), nullable=False, comment="pass or regression"),
        sa.Column("report", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column(
            "created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["baseline_run_id"],
            ["eval_runs.id"],
            name=op.f("fk_gate_reports_baseline_run_id_eval_runs"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["candidate_run_id"],
            ["eval_runs.id"],
            name=op.f("fk_gate_reports_candidate_run_id_eval_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gate_reports")),
    )
    op.create_index("ix_gate_reports_created_at", "gate_reports", ["created_at"], unique=False)


def downgrade() -> None:
    # The vector extension stays: other schemas in the same database may use it.
    op.drop_index("ix_gate_reports_created_at", table_name="gate_reports")
    op.drop_table("gate_reports")
    op.drop_table("eval_tags")
    op.drop_table("eval_results")
    op.drop_index("ix_eval_runs_eval_set_id_started_at", table_name="eval_runs")
    op.drop_index("ix_eval_runs_config_fingerprint", table_name="eval_runs")
    op.drop_table("eval_runs")
    op.drop_table("eval_cases")
    op.drop_index("ix_chunks_tsv", table_name="chunks", postgresql_using="gin")
    op.drop_index(
        "ix_chunks_embedding",
        table_name="chunks",
        postgresql_using="hnsw",
        postgresql_ops={"embedding": "vector_cosine_ops"},
    )
    op.drop_index("ix_chunks_document_id", table_name="chunks")
    op.drop_table("chunks")
    op.drop_index("ix_spans_trace_id", table_name="spans")
    op.drop_index("ix_spans_start_time", table_name="spans")
    op.drop_index("ix_spans_project_start_time", table_name="spans")
    op.drop_index(
        "ix_spans_eval_run_id", table_name="spans", postgresql_where=sa.text("eval_run_id IS NOT NULL")
    )
    op.drop_table("spans")
    op.drop_table("model_prices")
    op.drop_index("ix_metric_samples_name_time", table_name="metric_samples")
    op.drop_table("metric_samples")
    op.drop_table("eval_sets")
    op.drop_table("documents")
