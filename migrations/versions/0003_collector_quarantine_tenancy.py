"""Collector quarantine and tenancy: a dead-letter table for refused spans, the project in every span's
identity, a project on metric samples, and a ``write`` scope for API keys.

The spans primary key moves from (trace_id, span_id, start_time) to (trace_id, span_id, start_time,
project). ``spans`` is partitioned: dropping and adding the constraint on the parent does the same on
every partition (each partition's index is rebuilt, which takes a while on a large table). Downgrading
first deletes spans that only differ by project (keeping the alphabetically first project's), since
the old key cannot hold both.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-08 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_SPAN_KEY = ["trace_id", "span_id", "start_time"]
SCOPES = "scope IN ('ingest', 'read', 'write', 'admin')"
OLD_SCOPES = "scope IN ('ingest', 'read', 'admin')"


def upgrade() -> None:
    op.drop_constraint("pk_spans", "spans", type_="primary")
    op.create_primary_key("pk_spans", "spans", [*OLD_SPAN_KEY, "project"])
    op.create_table(
        "collector_quarantine",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("project", sa.Text(), nullable=False),
        sa.Column("trace_id", sa.Text(), nullable=False),
        sa.Column("span_id", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False, comment="PostgreSQL's error (SQLSTATE and message)"),
        sa.Column(
            "span",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            comment="the decoded span record, every field",
        ),
        sa.Column(
            "quarantined_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_collector_quarantine")),
    )
    op.create_index(
        "ix_collector_quarantine_project_quarantined_at",
        "collector_quarantine",
        ["project", "quarantined_at"],
        unique=False,
    )
    op.add_column("metric_samples", sa.Column("project", sa.Text(), server_default="default", nullable=False))
    op.drop_index("ix_metric_samples_name_time", table_name="metric_samples")
    op.create_index(
        "ix_metric_samples_project_name_time", "metric_samples", ["project", "name", "time"], unique=False
    )
    _replace_scope_check(SCOPES, "ingest, read, write or admin", "ingest, read or admin")


def downgrade() -> None:
    op.execute("DELETE FROM api_keys WHERE scope = 'write'")
    _replace_scope_check(OLD_SCOPES, "ingest, read or admin", "ingest, read, write or admin")
    op.drop_index("ix_metric_samples_project_name_time", table_name="metric_samples")
    op.create_index("ix_metric_samples_name_time", "metric_samples", ["name", "time"], unique=False)
    op.drop_column("metric_samples", "project")
    op.drop_index("ix_collector_quarantine_project_quarantined_at", table_name="collector_quarantine")
    op.drop_table("collector_quarantine")
    op.execute(
        "DELETE FROM spans a USING spans b WHERE a.trace_id = b.trace_id AND a.span_id = b.span_id"
        " AND a.start_time = b.start_time AND a.project > b.project"
    )
    op.drop_constraint("pk_spans", "spans", type_="primary")
    op.create_primary_key("pk_spans", "spans", OLD_SPAN_KEY)


def _replace_scope_check(check: str, comment: str, old_comment: str) -> None:
    op.drop_constraint(op.f("ck_api_keys_scope"), "api_keys", type_="check")
    op.create_check_constraint(op.f("ck_api_keys_scope"), "api_keys", check)
    op.alter_column(
        "api_keys", "scope", existing_type=sa.Text(), comment=comment, existing_comment=old_comment
    )
