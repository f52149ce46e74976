"""Price patterns (other names a price covers) and GenAI content sent as OTLP log events.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-10 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "model_prices",
        sa.Column(
            "pattern",
            sa.Text(),
            nullable=True,
            comment="case-insensitive glob of other names the price covers (gpt-4o-20*)",
        ),
    )
    op.create_table(
        "genai_content",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("project", sa.Text(), nullable=False),
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("span_id", sa.String(length=16), nullable=False),
        sa.Column("time", postgresql.TIMESTAMP(timezone=True), nullable=False, comment="the event's time"),
        sa.Column("event_name", sa.Text(), nullable=False),
        sa.Column("direction", sa.Text(), nullable=False),
        sa.Column(
            "messages",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            comment='[{"role": ..., "content": ...}] in the order sent',
        ),
        sa.Column(
            "digest", sa.Text(), nullable=False, comment="md5 of the messages, for deduplicating retries"
        ),
        sa.Column(
            "received_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("direction IN ('input', 'output')", name=op.f("ck_genai_content_direction")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_genai_content")),
        sa.UniqueConstraint(
            "project",
            "trace_id",
            "span_id",
            "time",
            "event_name",
            "direction",
            "digest",
            name=op.f("uq_genai_content_event"),
        ),
    )
    op.create_index("ix_genai_content_project_time", "genai_content", ["project", "time"])
    op.create_index("ix_genai_content_project_trace_id", "genai_content", ["project", "trace_id"])


def downgrade() -> None:
    op.drop_index("ix_genai_content_project_trace_id", table_name="genai_content")
    op.drop_index("ix_genai_content_project_time", table_name="genai_content")
    op.drop_table("genai_content")
    op.drop_column("model_prices", "pattern")
