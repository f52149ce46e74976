"""The prune's cutoff, kept: ``evallens collector prune`` records the day before which it dropped the
span partitions, and the collector no longer makes a partition of such a day again for a late span
(it goes to the quarantine), so pruned days stay pruned.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06 19:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "span_retention",
        sa.Column("id", sa.SmallInteger(), nullable=False),
        sa.Column(
            "pruned_before",
            sa.Date(),
            nullable=False,
            comment="the latest prune cutoff: no span partition of an earlier day is made again",
        ),
        sa.Column(
            "pruned_at", postgresql.TIMESTAMP(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.CheckConstraint("id = 1", name=op.f("ck_span_retention_one_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_span_retention")),
    )


def downgrade() -> None:
    op.drop_table("span_retention")
