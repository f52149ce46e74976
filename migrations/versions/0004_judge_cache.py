"""Judge verdict cache, and per-result metrics the judge left unscored (with the reason).

Revision ID: 0004
Revises: 0002
Create Date: 2026-12-03 09:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "judge_verdicts",
        sa.Column(
            "key",
            sa.Text(),
            nullable=False,
            comment="sha256 of judge model, prompt version, question, reference, answer",
        ),
        sa.Column("judge_model", sa.Text(), nullable=False),
        sa.Column("prompt_version", sa.Text(), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column(
            "reference",
            sa.Text(),
            nullable=False,
            comment="reference answer, required facts and expected behaviour",
        ),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("verdict", sa.Boolean(), nullable=False, comment="the metric's positive class"),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column(
            "created_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_judge_verdicts")),
    )
    op.add_column(
        "eval_results",
        sa.Column(
            "unscored",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="metric -> why the judge gave no verdict; such metrics are absent from scores",
        ),
    )


def downgrade() -> None:
    op.drop_column("eval_results", "unscored")
    op.drop_table("judge_verdicts")
